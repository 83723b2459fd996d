import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse';
import { z } from 'zod';
import { toIso, toIsoOrNull } from '../shared/clock.js';
import { AppError, classifyFault, isAppError, notFound, validationError } from '../shared/errors.js';
import { isUuid, newId } from '../shared/ids.js';
import { parseWith } from '../shared/validate.js';
import { valueMatches, type FieldType } from '../shared/typed-fields.js';
import { saveMembers } from '../store/audiences.js';
import { listAllContactProperties } from '../store/contact-properties.js';
import {
  findContactImport,
  findContactImportByKey,
  listContactImports,
  listUnfinishedContactImports,
  saveContactImport,
  updateContactImport,
  type ContactImport,
  type RowError,
} from '../store/contact-imports.js';
import type { Db } from '../store/db.js';
import { parsePage } from '../store/list-page.js';
import type { AudienceService } from './audiences.js';
import type { ServiceDeps } from './deps.js';
import type { SubscriberInput, SubscriberService } from './subscribers.js';
import { TOPIC_SUBSCRIPTIONS, type TopicService } from './topics.js';

/**
 * Contact imports (Resend's `contacts.imports`): a CSV of contacts, read as a stream and
 * written in batches of BATCH_ROWS, each batch one transaction with the import's progress, so
 * a file of a million rows is never held in memory and `get` shows how far it is. Rows are
 * upserted by address (a second upload of the same file updates, never duplicates); a bad
 * row is counted and reported with its line and reason, the others go in.
 */

export const CONTACT_IMPORT_STATUSES = ['queued', 'in_progress', 'completed', 'failed'] as const;
export type ContactImportStatus = (typeof CONTACT_IMPORT_STATUSES)[number];
/** Rows per transaction: large enough to amortise a commit, small enough to keep one short. */
export const BATCH_ROWS = 500;
/** Per-row errors kept on an import (all of them are counted in `failed`). */
export const MAX_REPORTED_ERRORS = 1000;
/** Cells longer than this are not a contact's field; also bounds what one CSV record may hold. */
const MAX_FIELD_BYTES = 64 * 1024;

const mapping = z.object({ column: z.string().min(1).max(200), type: z.enum(['string', 'number', 'boolean']).optional() });
const optionsSchema = z.object({
  column_map: z
    .object({
      email: z.string().min(1).max(200).optional(),
      first_name: z.string().min(1).max(200).optional(),
      last_name: z.string().min(1).max(200).optional(),
      unsubscribed: z.string().min(1).max(200).optional(),
      properties: z.record(z.string(), mapping).optional(),
    })
    .optional(),
  on_conflict: z.enum(['upsert', 'skip']).optional(),
  segments: z.array(z.object({ id: z.string() })).max(100).optional(),
  topics: z.array(z.object({ id: z.string(), subscription: z.enum(TOPIC_SUBSCRIPTIONS) })).max(100).optional(),
});
export type ContactImportOptions = z.infer<typeof optionsSchema>;
/** An import's options as it was created with them (checked then). */
const optionsOfImport = (r: ContactImport): ContactImportOptions => r.options as ContactImportOptions;

export interface ContactImportView {
  object: 'contact_import';
  id: string;
  status: ContactImportStatus;
  created_at: string;
  completed_at: string | null;
  counts: { total: number; created: number; updated: number; skipped: number; failed: number };
  file: { name: string | null; bytes: number; sha256: string };
  on_conflict: 'upsert' | 'skip';
  /** Why the whole import failed (an unreadable file), else null. */
  failure: string | null;
  /** The first MAX_REPORTED_ERRORS rows that were not imported. */
  errors: RowError[];
}

export interface ContactImportService {
  /** Where an upload of import `id` is spooled before `create` (under the data directory). */
  spoolPath(id: string): Promise<string>;
  /**
   * Registers an upload spooled at spoolPath(id) and queues it. Options are the multipart
   * fields as the SDK sends them (JSON text). With an idempotency key seen before, the earlier
   * import is returned (the same file) or a 409 (another file).
   */
  create(workspaceId: string, upload: { id: string; fileName: string | null; bytes: number; sha256: string; fields: Record<string, string>; idempotencyKey?: string | undefined }): Promise<ContactImportView>;
  /** Imports a local file now (the CLI), reporting rows read as it goes. */
  importFile(workspaceId: string, path: string, options: ContactImportOptions, onProgress?: (rows: number, bytesRead: number, bytes: number) => void): Promise<ContactImportView>;
  get(workspaceId: string, id: string): Promise<ContactImportView>;
  list(workspaceId: string, query: Record<string, unknown>): Promise<{ object: 'list'; has_more: boolean; data: ContactImportView[] }>;
  /** Takes up imports a stopped process left queued or half done (their rows are upserts: re-reading is harmless). */
  resume(): Promise<void>;
  /** Resolves when no queued import is running (tests). */
  idle(): Promise<void>;
  /** Stops between two batches, leaving the import in_progress with its file for `resume`. */
  stop(): Promise<void>;
}

const view = (r: ContactImport): ContactImportView => ({
  object: 'contact_import',
  id: r.id,
  status: r.status as ContactImportStatus,
  created_at: toIso(r.created_at),
  completed_at: toIsoOrNull(r.completed_at),
  counts: { total: Number(r.total), created: Number(r.created), updated: Number(r.updated), skipped: Number(r.skipped), failed: Number(r.failed) },
  file: { name: r.file_name, bytes: Number(r.file_bytes), sha256: r.file_sha256 },
  on_conflict: optionsOfImport(r).on_conflict ?? 'upsert',
  failure: r.failure,
  errors: r.errors,
});

/** A CSV cell as a property value of `type`; undefined for an empty cell (the property is left alone). */
/** A new import, queued, of a file already in place. */
const queuedImport = (workspaceId: string, file: { id: string; name: string | null; bytes: number; sha256: string; idempotencyKey: string | null }, options: ContactImportOptions, now: number): ContactImport => ({
  id: file.id,
  workspace_id: workspaceId,
  status: 'queued',
  file_name: file.name?.slice(0, 255) ?? null,
  file_bytes: file.bytes,
  file_sha256: file.sha256,
  options,
  idempotency_key: file.idempotencyKey,
  total: 0,
  created: 0,
  updated: 0,
  skipped: 0,
  failed: 0,
  errors: [],
  failure: null,
  created_at: now,
  updated_at: now,
  completed_at: null,
});

function cellValue(type: FieldType, cell: string): unknown {
  const text = cell.trim();
  if (text === '') return undefined;
  switch (type) {
    case 'number': {
      const n = Number(text);
      if (!Number.isFinite(n)) throw new Error(`"${text.slice(0, 100)}" is not a number`);
      return n;
    }
    case 'boolean':
      return booleanOf(text);
    case 'date':
      if (!valueMatches('date', text)) throw new Error(`"${text.slice(0, 100)}" is not an ISO 8601 date`);
      return text;
    default:
      return cell;
  }
}

function booleanOf(text: string): boolean {
  const t = text.trim().toLowerCase();
  if (['true', '1', 'yes', 'y'].includes(t)) return true;
  if (['false', '0', 'no', 'n'].includes(t)) return false;
  throw new Error(`"${text.slice(0, 100)}" is not a boolean (true/false, yes/no, 1/0)`);
}

/** Which cell of a record feeds which field: resolved once from the header. */
interface Layout {
  email: number;
  firstName: number | undefined;
  lastName: number | undefined;
  unsubscribed: number | undefined;
  properties: Array<{ key: string; index: number; type: FieldType }>;
}

function layoutOf(header: string[], options: ContactImportOptions, declared: Map<string, FieldType>): Layout {
  const byName = new Map<string, number>();
  header.forEach((h, i) => {
    const name = h.trim().toLowerCase();
    if (!byName.has(name)) byName.set(name, i);
  });
  const map = options.column_map ?? {};
  const column = (field: string, name: string | undefined, fallback: string, required: boolean): number | undefined => {
    const index = byName.get((name ?? fallback).trim().toLowerCase());
    if (index === undefined && (name !== undefined || required)) {
      throw validationError(`column_map.${field}`, `the file has no column "${name ?? fallback}" (its columns: ${header.slice(0, 20).join(', ')})`);
    }
    return index;
  };
  const properties: Layout['properties'] = [];
  if (map.properties) {
    for (const [key, m] of Object.entries(map.properties)) {
      const declaredType = declared.get(key);
      if (declaredType && m.type && declaredType !== m.type) throw validationError(`column_map.properties.${key}.type`, `the contact property ${key} is declared as ${declaredType}`);
      properties.push({ key, index: column(`properties.${key}.column`, m.column, m.column, true)!, type: m.type ?? declaredType ?? 'string' });
    }
  } else {
    // Without a map, a column named like a declared contact property fills it.
    for (const [key, type] of declared) {
      const index = byName.get(key.toLowerCase());
      if (index !== undefined) properties.push({ key, index, type });
    }
  }
  return {
    email: column('email', map.email, 'email', true)!,
    firstName: column('first_name', map.first_name, 'first_name', false),
    lastName: column('last_name', map.last_name, 'last_name', false),
    unsubscribed: column('unsubscribed', map.unsubscribed, 'unsubscribed', false),
    properties,
  };
}

/** A record as a subscriber; throws with the reason a row cannot be one. */
function inputOf(record: string[], layout: Layout): SubscriberInput {
  const cell = (i: number | undefined) => (i === undefined ? undefined : (record[i] ?? ''));
  const email = cell(layout.email)!.trim();
  if (email === '') throw new Error('email: missing');
  const input: SubscriberInput = { email };
  const first = cell(layout.firstName);
  if (first !== undefined && first.trim() !== '') input.first_name = first.trim();
  const last = cell(layout.lastName);
  if (last !== undefined && last.trim() !== '') input.last_name = last.trim();
  const unsubscribed = cell(layout.unsubscribed);
  if (unsubscribed !== undefined && unsubscribed.trim() !== '') {
    try {
      input.status = booleanOf(unsubscribed) ? 'unsubscribed' : 'subscribed';
    } catch (err) {
      throw new Error(`unsubscribed: ${(err as Error).message}`);
    }
  }
  const properties: Record<string, unknown> = {};
  for (const p of layout.properties) {
    try {
      const value = cellValue(p.type, cell(p.index)!);
      if (value !== undefined) properties[p.key] = value;
    } catch (err) {
      throw new Error(`properties.${p.key}: ${(err as Error).message}`);
    }
  }
  if (Object.keys(properties).length > 0) input.properties = properties;
  return input;
}

const csvParser = () =>
  parse({ bom: true, relax_column_count: true, skip_empty_lines: true, info: true, max_record_size: MAX_FIELD_BYTES * 4 });

/** The header row of a CSV file (reads only as far as its end). */
async function headerOf(path: string): Promise<string[]> {
  const input = createReadStream(path);
  const parser = input.pipe(parse({ bom: true, to_line: 1, relax_column_count: true, max_record_size: MAX_FIELD_BYTES * 4 }));
  try {
    for await (const record of parser) return record as string[];
    throw validationError('file', 'the file is empty: a CSV with a header row (one column named email) is expected');
  } catch (err) {
    if (isAppError(err)) throw err;
    throw classifyFault(err) ?? validationError('file', `not a readable CSV: ${(err as Error).message}`);
  } finally {
    input.destroy();
  }
}

async function hashFile(path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: hash.digest('hex') };
}

export function createContactImportService(deps: ServiceDeps & { subscribers: SubscriberService; audiences: AudienceService; topics: TopicService }): ContactImportService {
  const { db, clock, config, logger } = deps;
  const spoolDir = join(config.dataDir, 'imports');
  // One import runs at a time in a process: they share the database with live traffic.
  let chain: Promise<void> = Promise.resolve();
  let stopping = false;
  const STOPPED = new Error('stopping');

  const find = async (workspaceId: string, id: string): Promise<ContactImport> => {
    const found = isUuid(id) ? await findContactImport(db, workspaceId, id.toLowerCase()) : undefined;
    if (!found) throw notFound(`Contact import ${id}`);
    return found;
  };

  /** Options as the SDK sends them: each multipart field a JSON document or a plain string. */
  function optionsOf(fields: Record<string, string>): ContactImportOptions {
    const raw: Record<string, unknown> = {};
    for (const [name, text] of Object.entries(fields)) {
      if (name === 'on_conflict') raw[name] = text;
      else {
        try {
          raw[name] = JSON.parse(text);
        } catch {
          throw validationError(name, 'must be JSON');
        }
      }
    }
    return parseWith(optionsSchema.strict(), raw, 'body');
  }

  async function checkOptions(workspaceId: string, options: ContactImportOptions): Promise<void> {
    for (const [i, s] of (options.segments ?? []).entries()) {
      await deps.audiences.get(workspaceId, s.id).catch((err: unknown) => {
        throw isAppError(err) && err.code === 'not_found' ? validationError(`segments[${i}].id`, `segment ${s.id} not found`) : err;
      });
    }
    for (const [i, t] of (options.topics ?? []).entries()) await deps.topics.check(workspaceId, t.id, `topics[${i}].id`);
  }

  const declaredOf = async (workspaceId: string) => new Map((await listAllContactProperties(db, workspaceId)).map((p) => [p.key, p.type as FieldType]));

  /** Reads the file and writes its rows; the import row carries progress, counts and errors. */
  async function run(row: ContactImport, path: string, onProgress?: (rows: number, bytesRead: number) => void): Promise<void> {
    const options = optionsOfImport(row);
    const counts = { total: 0, created: 0, updated: 0, skipped: 0, failed: 0 };
    const errors: RowError[] = [];
    const addError = (e: RowError) => {
      counts.failed++;
      if (errors.length < MAX_REPORTED_ERRORS) errors.push(e);
    };
    // Rows refused while read come before those the batch refused: reported in file order.
    const sortedErrors = () => errors.sort((a, b) => a.row - b.row);
    await updateContactImport(db, row.id, { status: 'in_progress', updated_at: clock.now() });
    const input = createReadStream(path);
    const parser = csvParser();
    input.pipe(parser);
    input.on('error', (err) => parser.destroy(err));
    try {
      const declared = await declaredOf(row.workspace_id);
      let layout: Layout | undefined;
      let batch: Array<{ input: SubscriberInput; row: number; line: number }> = [];
      const flush = async () => {
        if (stopping) throw STOPPED;
        const rows = batch;
        batch = [];
        const write = () =>
          deps.subscribers.importBatch(
            row.workspace_id,
            rows.map((r) => r.input),
            {
              onConflict: options.on_conflict ?? 'upsert',
              after: async (trx: Db, written) => {
                const ids = written.map((w) => w.id);
                for (const s of options.segments ?? []) await saveMembers(trx, s.id, ids, clock.now());
                if (options.topics?.length) for (const id of new Set(ids)) await deps.topics.choose(row.workspace_id, id, options.topics, trx);
              },
            },
          );
        // A contact created by the API at the same moment breaks the batch's insert: once more reads it as known.
        const outcomes = await write().catch(() => write());
        outcomes.forEach((o, i) => {
          if (o.outcome === 'failed') addError({ row: rows[i]!.row, line: rows[i]!.line, reason: o.reason });
          else counts[o.outcome]++;
        });
        await updateContactImport(db, row.id, { ...counts, errors: sortedErrors(), updated_at: clock.now() });
        onProgress?.(counts.total, input.bytesRead);
      };
      for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
        if (!layout) {
          layout = layoutOf(record, options, declared);
          continue;
        }
        counts.total++;
        try {
          batch.push({ input: inputOf(record, layout), row: counts.total, line: info.lines });
        } catch (err) {
          addError({ row: counts.total, line: info.lines, reason: (err as Error).message });
        }
        if (batch.length >= BATCH_ROWS) await flush();
      }
      if (!layout) throw validationError('file', 'the file is empty: a CSV with a header row (one column named email) is expected');
      await flush();
      await updateContactImport(db, row.id, { status: 'completed', completed_at: clock.now(), updated_at: clock.now() });
    } catch (err) {
      if (err === STOPPED) throw err;
      const reason = isAppError(err) ? err.message : `not a readable CSV: ${(err as Error).message}`;
      logger.warn({ importId: row.id, err: reason }, 'contact import failed');
      await updateContactImport(db, row.id, { ...counts, errors: sortedErrors(), status: 'failed', failure: reason, completed_at: clock.now(), updated_at: clock.now() });
    } finally {
      input.destroy();
    }
  }

  function queue(row: ContactImport, path: string, spooled: boolean): void {
    chain = chain.then(async () => {
      if (stopping) return;
      try {
        await run(row, path);
        if (spooled) await rm(path, { force: true });
      } catch (err) {
        if (err !== STOPPED) logger.error({ err, importId: row.id }, 'contact import stopped');
      }
    });
  }

  const service: ContactImportService = {
    async spoolPath(id) {
      deps.space.ensure();
      await mkdir(spoolDir, { recursive: true });
      return join(spoolDir, `${id}.csv`);
    },

    async create(workspaceId, upload) {
      const path = join(spoolDir, `${upload.id}.csv`);
      try {
        const options = optionsOf(upload.fields);
        if (upload.idempotencyKey) {
          const earlier = await findContactImportByKey(db, workspaceId, upload.idempotencyKey);
          if (earlier) {
            // The options as written then, compared as the JSON they were stored as.
            if (earlier.file_sha256 !== upload.sha256 || JSON.stringify(earlier.options) !== JSON.stringify(options)) {
              throw new AppError('invalid_idempotent_request', 'This Idempotency-Key was used with another file or other options');
            }
            await rm(path, { force: true });
            return view(earlier);
          }
        }
        await checkOptions(workspaceId, options);
        layoutOf(await headerOf(path), options, await declaredOf(workspaceId));
        const row = queuedImport(workspaceId, { id: upload.id, name: upload.fileName ?? null, bytes: upload.bytes, sha256: upload.sha256, idempotencyKey: upload.idempotencyKey ?? null }, options, clock.now());
        await saveContactImport(db, row);
        queue(row, path, true);
        return view(row);
      } catch (err) {
        await rm(path, { force: true });
        throw err;
      }
    },

    async importFile(workspaceId, path, options, onProgress) {
      let size: number;
      try {
        size = (await stat(path)).size;
      } catch (err) {
        throw validationError('file', `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      const parsed = parseWith(optionsSchema, options, 'options');
      await checkOptions(workspaceId, parsed);
      layoutOf(await headerOf(path), parsed, await declaredOf(workspaceId));
      const { sha256 } = await hashFile(path);
      const row = queuedImport(workspaceId, { id: newId(), name: path.split(/[\\/]/).pop()!, bytes: size, sha256, idempotencyKey: null }, parsed, clock.now());
      await saveContactImport(db, row);
      await run(row, path, (rows, bytesRead) => onProgress?.(rows, bytesRead, size));
      return view((await findContactImport(db, workspaceId, row.id))!);
    },

    get: async (workspaceId, id) => view(await find(workspaceId, id)),

    async list(workspaceId, query) {
      const status = query.status;
      if (status !== undefined && !(CONTACT_IMPORT_STATUSES as readonly unknown[]).includes(status)) throw validationError('status', `must be one of ${CONTACT_IMPORT_STATUSES.join(', ')}`);
      const { rows, more } = await listContactImports(db, workspaceId, status as string | undefined, parsePage(query));
      return { object: 'list', has_more: more, data: rows.map(view) };
    },

    async resume() {
      for (const row of await listUnfinishedContactImports(db)) {
        // Another node's or a CLI's import has no file here: it is theirs to finish.
        const path = join(spoolDir, `${row.id}.csv`);
        if (await stat(path).then(() => true, () => false)) queue(row, path, true);
      }
    },

    async stop() {
      stopping = true;
      await chain;
    },

    idle: () => chain,
  };
  return service;
}

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { toIso, toIsoOrNull } from '../../../shared/clock.js';
import { AppError, isAppError, notFound, validationError } from '../../../shared/errors.js';
import { isUuid, newId } from '../../../shared/ids.js';
import { parseWith } from '../../../shared/validate.js';
import type { FieldType } from '../../../shared/typed-fields.js';
import { listAllContactProperties } from '../../../store/contact-properties.js';
import {
  findContactImport,
  findContactImportByKey,
  listContactImports,
  saveContactImport,
  saveContactImportChunk,
  type ContactImport,
  type RowError,
} from '../../../store/contact-imports.js';
import { parsePage } from '../../../store/infra/list-page.js';
import { newOwnerId } from '../../../workers/kernel.js';
import type { AudienceService } from '../audiences.js';
import type { ServiceDeps } from '../../deps.js';
import type { SubscriberService } from '../subscribers.js';
import type { TopicService } from '../topics.js';
import { headerOf, layoutOf, optionsOfImport, optionsSchema, type ContactImportOptions } from './read-contacts-csv.js';
import { runImport } from './run-import.js';

export type { ContactImportOptions } from './read-contacts-csv.js';

/**
 * Contact imports (Resend's `contacts.imports`): a CSV of contacts, kept in the database and
 * read by a job of the worker kernel (imports/import-job.ts) as a stream, in batches of
 * BATCH_ROWS, each batch one transaction with the import's progress and cursor, so a file of a
 * million rows is never held in memory, `get` shows how far it is, and any node finishes an
 * import whose node died (run-import.ts). Rows are
 * upserted by address (a second upload of the same file updates, never duplicates); a bad
 * row is counted and reported with its line and reason, the others go in.
 */

const CONTACT_IMPORT_STATUSES = ['queued', 'in_progress', 'completed', 'failed'] as const;
type ContactImportStatus = (typeof CONTACT_IMPORT_STATUSES)[number];

interface ContactImportView {
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
  create(
    workspaceId: string,
    upload: {
      id: string;
      fileName: string | null;
      bytes: number;
      sha256: string;
      fields: Record<string, string>;
      idempotencyKey?: string | undefined;
    },
  ): Promise<ContactImportView>;
  /** Imports a local file now (the CLI), reporting rows read as it goes; a serve node finishes it if this process dies. */
  importFile(
    workspaceId: string,
    path: string,
    options: ContactImportOptions,
    onProgress?: (rows: number, bytesRead: number, bytes: number) => void,
  ): Promise<ContactImportView>;
  get(workspaceId: string, id: string): Promise<ContactImportView>;
  list(
    workspaceId: string,
    query: Record<string, unknown>,
  ): Promise<{ object: 'list'; has_more: boolean; data: ContactImportView[] }>;
}

const view = (r: ContactImport): ContactImportView => ({
  object: 'contact_import',
  id: r.id,
  status: r.status as ContactImportStatus,
  created_at: toIso(r.created_at),
  completed_at: toIsoOrNull(r.completed_at),
  counts: {
    total: Number(r.total),
    created: Number(r.created),
    updated: Number(r.updated),
    skipped: Number(r.skipped),
    failed: Number(r.failed),
  },
  file: { name: r.file_name, bytes: Number(r.file_bytes), sha256: r.file_sha256 },
  on_conflict: optionsOfImport(r).on_conflict ?? 'upsert',
  failure: r.failure,
  errors: r.errors,
});

/** A new import, queued, of a file already stored. */
const queuedImport = (
  workspaceId: string,
  file: { id: string; name: string | null; bytes: number; sha256: string; idempotencyKey: string | null },
  options: ContactImportOptions,
  now: number,
): ContactImport => ({
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
  cursor_row: 0,
  lease_owner: null,
  lease_until: null,
});

/** The database keeps an import's file in chunks of this size: one in memory at a time, well under any statement limit. */
const FILE_CHUNK_BYTES = 1024 * 1024;
/** The CLI holds its import this long past each batch; a serve node takes it over when the CLI stops renewing it. */
const CLI_LEASE_MS = 30_000;

/**
 * Copies a file into the database (contact_import_files) for import `id`, so that whichever
 * node takes the import can read it; returns its size and SHA-256.
 */
async function storeFile(
  db: ServiceDeps['db'],
  id: string,
  path: string,
  now: number,
): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  let seq = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: FILE_CHUNK_BYTES })) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
    await saveContactImportChunk(db, id, seq++, chunk as Buffer, now);
  }
  return { bytes, sha256: hash.digest('hex') };
}

export function createContactImportService(
  deps: ServiceDeps & { subscribers: SubscriberService; audiences: AudienceService; topics: TopicService },
): ContactImportService {
  const { db, clock, config } = deps;
  const spoolDir = join(config.dataDir, 'imports');

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
        throw isAppError(err) && err.code === 'not_found'
          ? validationError(`segments[${i}].id`, `segment ${s.id} not found`)
          : err;
      });
    }
    for (const [i, t] of (options.topics ?? []).entries())
      await deps.topics.check(workspaceId, t.id, `topics[${i}].id`);
  }

  const declaredOf = async (workspaceId: string) =>
    new Map((await listAllContactProperties(db, workspaceId)).map((p) => [p.key, p.type as FieldType]));

  return {
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
              throw new AppError(
                'invalid_idempotent_request',
                'This Idempotency-Key was used with another file or other options',
              );
            }
            return view(earlier);
          }
        }
        await checkOptions(workspaceId, options);
        layoutOf(await headerOf(path), options, await declaredOf(workspaceId));
        // The file goes into the database before the import's row: the 201 means any node can finish it.
        await storeFile(db, upload.id, path, clock.now());
        const row = queuedImport(
          workspaceId,
          {
            id: upload.id,
            name: upload.fileName ?? null,
            bytes: upload.bytes,
            sha256: upload.sha256,
            idempotencyKey: upload.idempotencyKey ?? null,
          },
          options,
          clock.now(),
        );
        await saveContactImport(db, row);
        return view(row);
      } finally {
        await rm(path, { force: true });
      }
    },

    async importFile(workspaceId, path, options, onProgress) {
      let size: number;
      try {
        size = (await stat(path)).size;
      } catch (err) {
        throw validationError(
          'file',
          `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        );
      }
      const parsed = parseWith(optionsSchema, options, 'options');
      await checkOptions(workspaceId, parsed);
      layoutOf(await headerOf(path), parsed, await declaredOf(workspaceId));
      const id = newId();
      const { sha256 } = await storeFile(db, id, path, clock.now());
      // Held by this process from the start (no serve node takes it while it runs here), in progress.
      const owner = `cli:${newOwnerId()}`;
      const now = clock.now();
      const row: ContactImport = {
        ...queuedImport(
          workspaceId,
          { id, name: path.split(/[\\/]/).pop()!, bytes: size, sha256, idempotencyKey: null },
          parsed,
          now,
        ),
        status: 'in_progress',
        lease_owner: owner,
        lease_until: now + CLI_LEASE_MS,
      };
      await saveContactImport(db, row);
      await runImport(deps, row, {
        owner,
        leaseMs: CLI_LEASE_MS,
        stopping: () => false,
        onProgress: (rows, bytesRead) => onProgress?.(rows, bytesRead, size),
      });
      return view((await findContactImport(db, workspaceId, row.id))!);
    },

    get: async (workspaceId, id) => view(await find(workspaceId, id)),

    async list(workspaceId, query) {
      const status = query.status;
      if (status !== undefined && !(CONTACT_IMPORT_STATUSES as readonly unknown[]).includes(status))
        throw validationError('status', `must be one of ${CONTACT_IMPORT_STATUSES.join(', ')}`);
      const { rows, more } = await listContactImports(db, workspaceId, status as string | undefined, parsePage(query));
      return { object: 'list', has_more: more, data: rows.map(view) };
    },
  };
}

import { createReadStream } from 'node:fs';
import type { Parser } from 'csv-parse';
import { z } from 'zod';
import { classifyFault, isAppError, validationError } from '../../../shared/errors.js';
import { valueMatches, type FieldType } from '../../../shared/typed-fields.js';
import type { ContactImport } from '../../../store/contact-imports.js';
import type { SubscriberInput } from '../subscribers.js';
import { TOPIC_SUBSCRIPTIONS } from '../topics.js';
import { lazyImport } from '../../../shared/lazy-import.js';

/**
 * How a contact import reads its CSV: the options it was created with, which column feeds
 * which field (resolved once from the header), and a record as a subscriber, or the reason a
 * row cannot be one.
 */

/** Cells longer than this are not a contact's field; also bounds what one CSV record may hold. */
const MAX_FIELD_BYTES = 64 * 1024;

const mapping = z.object({
  column: z.string().min(1).max(200),
  type: z.enum(['string', 'number', 'boolean']).optional(),
});
export const optionsSchema = z.object({
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
  segments: z
    .array(z.object({ id: z.string() }))
    .max(100)
    .optional(),
  topics: z
    .array(z.object({ id: z.string(), subscription: z.enum(TOPIC_SUBSCRIPTIONS) }))
    .max(100)
    .optional(),
});
export type ContactImportOptions = z.infer<typeof optionsSchema>;
/** An import's options as it was created with them (checked then). */
export const optionsOfImport = (r: ContactImport): ContactImportOptions => r.options as ContactImportOptions;

/** A CSV cell as a property value of `type`; undefined for an empty cell (the property is left alone). */
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
export interface Layout {
  email: number;
  firstName: number | undefined;
  lastName: number | undefined;
  unsubscribed: number | undefined;
  properties: Array<{ key: string; index: number; type: FieldType }>;
}

export function layoutOf(header: string[], options: ContactImportOptions, declared: Map<string, FieldType>): Layout {
  const byName = new Map<string, number>();
  header.forEach((h, i) => {
    const name = h.trim().toLowerCase();
    if (!byName.has(name)) byName.set(name, i);
  });
  const map = options.column_map ?? {};
  const column = (field: string, name: string | undefined, fallback: string, required: boolean): number | undefined => {
    const index = byName.get((name ?? fallback).trim().toLowerCase());
    if (index === undefined && (name !== undefined || required)) {
      throw validationError(
        `column_map.${field}`,
        `the file has no column "${name ?? fallback}" (its columns: ${header.slice(0, 20).join(', ')})`,
      );
    }
    return index;
  };
  const properties: Layout['properties'] = [];
  if (map.properties) {
    for (const [key, m] of Object.entries(map.properties)) {
      const declaredType = declared.get(key);
      if (declaredType && m.type && declaredType !== m.type)
        throw validationError(
          `column_map.properties.${key}.type`,
          `the contact property ${key} is declared as ${declaredType}`,
        );
      properties.push({
        key,
        index: column(`properties.${key}.column`, m.column, m.column, true)!,
        type: m.type ?? declaredType ?? 'string',
      });
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
export function inputOf(record: string[], layout: Layout): SubscriberInput {
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

const csvParse = lazyImport(async () => (await import('csv-parse')).parse);

/** A parser of a whole file, each record with its line (`info`). */
export const csvParser = async (): Promise<Parser> =>
  (await csvParse())({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    info: true,
    max_record_size: MAX_FIELD_BYTES * 4,
  });

/** The header row of a CSV file (reads only as far as its end). */
export async function headerOf(path: string): Promise<string[]> {
  const parse = await csvParse();
  const input = createReadStream(path);
  const parser = input.pipe(
    parse({ bom: true, to_line: 1, relax_column_count: true, max_record_size: MAX_FIELD_BYTES * 4 }),
  );
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

import { toIso } from '../../shared/clock.js';
import { AppError, notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import {
  checkTypedValues,
  FIELD_NAME,
  FIELD_TYPES,
  isFieldType,
  valueMatches,
  type FieldSchema,
  type FieldType,
} from '../../shared/typed-fields.js';
import {
  countContactProperties,
  findContactProperty,
  findContactPropertyByKey,
  listAllContactProperties,
  listContactProperties,
  removeContactProperty,
  saveContactProperty,
  updateContactPropertyFallback,
  type ContactProperty,
} from '../../store/contact-properties.js';
import type { Db } from '../../store/infra/db.js';
import { parsePage } from '../../store/infra/list-page.js';
import type { ServiceDeps } from '../deps.js';

/**
 * Declared contact properties (Resend's `contactProperties`): typed custom fields of contacts
 * (string, number, boolean, date) with a fallback value. A contact write that sets a declared
 * property checks its type (subscribers.ts); templates of broadcasts and campaigns get the
 * fallback when a contact has no value (`{{{contact.<key>}}}`, `{{<key>}}`). Undeclared
 * properties stay free-form, as before.
 */

const MAX_CONTACT_PROPERTIES = 100;
/** The contact's own fields and our template names: a property cannot shadow them. */
const RESERVED_KEYS = new Set([
  'email',
  'first_name',
  'last_name',
  'unsubscribed',
  'external_id',
  'metadata',
  'unsubscribe_url',
  'id',
  'status',
]);

interface ContactPropertyView {
  object: 'contact_property';
  id: string;
  key: string;
  type: FieldType;
  fallback_value: string | number | boolean | null;
  created_at: string;
}

export interface ContactPropertyService {
  create(
    workspaceId: string,
    input: { key?: unknown; type?: unknown; fallback_value?: unknown },
  ): Promise<ContactPropertyView>;
  /** By id or key. */
  get(workspaceId: string, idOrKey: string): Promise<ContactPropertyView>;
  list(
    workspaceId: string,
    query: Record<string, unknown>,
  ): Promise<{ object: 'list'; has_more: boolean; data: ContactPropertyView[] }>;
  update(workspaceId: string, idOrKey: string, input: { fallback_value?: unknown }): Promise<ContactPropertyView>;
  remove(workspaceId: string, idOrKey: string): Promise<ContactPropertyView>;
}

const view = (p: ContactProperty): ContactPropertyView => ({
  object: 'contact_property',
  id: p.id,
  key: p.key,
  type: p.type as FieldType,
  fallback_value: p.fallback_value,
  created_at: toIso(p.created_at),
});

/** Throws a validation error for a declared property given a value of another type. */
export async function checkContactProperties(
  db: Db,
  workspaceId: string,
  properties: Record<string, unknown>,
): Promise<void> {
  const declared = await listAllContactProperties(db, workspaceId);
  if (declared.length === 0) return;
  const schema: FieldSchema = Object.fromEntries(declared.map((p) => [p.key, p.type as FieldType]));
  checkTypedValues('properties', schema, properties);
}

const fallbackOf = (type: FieldType, value: unknown): string | number | boolean | null => {
  if (value === undefined || value === null) return null;
  if (!valueMatches(type, value))
    throw validationError('fallback_value', `must be a ${type}${type === 'date' ? ' (ISO 8601)' : ''}, or null`);
  if (typeof value === 'string' && value.length > 1000)
    throw validationError('fallback_value', 'must be at most 1000 characters');
  return value as string | number | boolean;
};

export function createContactPropertyService(deps: ServiceDeps): ContactPropertyService {
  const { db, clock } = deps;

  const find = async (workspaceId: string, idOrKey: string): Promise<ContactProperty> => {
    const found =
      (isUuid(idOrKey) ? await findContactProperty(db, workspaceId, idOrKey.toLowerCase()) : undefined) ??
      (await findContactPropertyByKey(db, workspaceId, idOrKey));
    if (!found) throw notFound(`Contact property ${idOrKey}`);
    return found;
  };

  return {
    async create(workspaceId, input) {
      const { key, type } = input;
      if (typeof key !== 'string' || !FIELD_NAME.test(key))
        throw validationError('key', 'is required: a letter or _ then letters, digits or _, at most 64');
      if (RESERVED_KEYS.has(key.toLowerCase())) throw validationError('key', `${key} is a field of every contact`);
      if (!isFieldType(type)) throw validationError('type', `is required: one of ${FIELD_TYPES.join(', ')}`);
      const fallback = fallbackOf(type, input.fallback_value);
      if (await findContactPropertyByKey(db, workspaceId, key))
        throw new AppError('already_exists', `Contact property ${key} already exists`, { field: 'key' });
      if ((await countContactProperties(db, workspaceId)) >= MAX_CONTACT_PROPERTIES)
        throw validationError('key', `a workspace has at most ${MAX_CONTACT_PROPERTIES} contact properties`);
      const row: ContactProperty = {
        id: newId(),
        workspace_id: workspaceId,
        key,
        type,
        fallback_value: fallback,
        created_at: clock.now(),
      };
      await saveContactProperty(db, row);
      return view(row);
    },

    get: async (workspaceId, idOrKey) => view(await find(workspaceId, idOrKey)),

    async list(workspaceId, query) {
      const { rows, more } = await listContactProperties(db, workspaceId, parsePage(query, 'keyset'));
      return { object: 'list', has_more: more, data: rows.map(view) };
    },

    async update(workspaceId, idOrKey, input) {
      const found = await find(workspaceId, idOrKey);
      if (input.fallback_value !== undefined)
        await updateContactPropertyFallback(db, found.id, fallbackOf(found.type as FieldType, input.fallback_value));
      return view((await findContactProperty(db, workspaceId, found.id))!);
    },

    async remove(workspaceId, idOrKey) {
      const found = await find(workspaceId, idOrKey);
      await removeContactProperty(db, found.id);
      return view(found);
    },
  };
}

import { EVENT_TYPES } from '../../events/event-types.js';
import { toIso, toIsoOrNull } from '../../shared/clock.js';
import { notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { parseSchema, type FieldSchema } from '../../shared/typed-fields.js';
import {
  findEventDefinition,
  findEventDefinitionByName,
  listEventDefinitions,
  removeEventDefinition,
  saveEventDefinition,
  updateEventDefinitionSchema,
  type EventDefinition,
} from '../../store/event-definitions.js';
import { parsePage } from '../../store/infra/list-page.js';
import type { ServiceDeps } from '../deps.js';
import { eventNameSchema } from './definition.js';
import { isOneOf } from '../../shared/one-of.js';

/**
 * Declared custom events (Resend's `events.create` …): a name and, optionally, the type of each
 * payload field. `events.send` checks a declared event's payload against it (workflows.ts),
 * so workflow conditions on `event.<field>` can rely on the type; undeclared events are still
 * accepted as before.
 */

interface EventDefinitionView {
  object: 'event';
  id: string;
  name: string;
  schema: FieldSchema | null;
  created_at: string;
  updated_at: string | null;
}

export interface EventDefinitionService {
  create(workspaceId: string, input: { name?: unknown; schema?: unknown }): Promise<EventDefinitionView>;
  /** By id or by name. */
  get(workspaceId: string, idOrName: string): Promise<EventDefinitionView>;
  list(
    workspaceId: string,
    query: Record<string, unknown>,
  ): Promise<{ object: 'list'; has_more: boolean; data: EventDefinitionView[] }>;
  update(workspaceId: string, idOrName: string, schema: unknown): Promise<EventDefinitionView>;
  remove(workspaceId: string, idOrName: string): Promise<EventDefinitionView>;
  /** The schema a sent event's payload must follow; null when the event is not declared or declares no schema. */
  schemaOf(workspaceId: string, name: string): Promise<FieldSchema | null>;
}

const view = (d: EventDefinition): EventDefinitionView => ({
  object: 'event',
  id: d.id,
  name: d.name,
  schema: d.schema,
  created_at: toIso(d.created_at),
  updated_at: toIsoOrNull(d.updated_at),
});

export function createEventDefinitionService(deps: ServiceDeps): EventDefinitionService {
  const { db, clock } = deps;

  const find = async (workspaceId: string, idOrName: string): Promise<EventDefinition> => {
    const found =
      (isUuid(idOrName) ? await findEventDefinition(db, workspaceId, idOrName.toLowerCase()) : undefined) ??
      (await findEventDefinitionByName(db, workspaceId, idOrName));
    if (!found) throw notFound(`Event ${idOrName}`);
    return found;
  };

  return {
    async create(workspaceId, input) {
      const name = eventNameSchema.safeParse(input.name);
      if (!name.success)
        throw validationError('name', typeof input.name === 'string' ? name.error.issues[0]!.message : 'is required');
      if (isOneOf(EVENT_TYPES, name.data))
        throw validationError('name', `${name.data} is a platform event: mailsvc emits it itself`);
      const schema = parseSchema('schema', input.schema);
      const row: EventDefinition = {
        id: newId(),
        workspace_id: workspaceId,
        name: name.data,
        schema,
        created_at: clock.now(),
        updated_at: null,
      };
      // A name the workspace declared already is already_exists (store/event-definitions.ts).
      await saveEventDefinition(db, row);
      return view(row);
    },

    get: async (workspaceId, idOrName) => view(await find(workspaceId, idOrName)),

    async list(workspaceId, query) {
      const { rows, more } = await listEventDefinitions(db, workspaceId, parsePage(query, 'keyset'));
      return { object: 'list', has_more: more, data: rows.map(view) };
    },

    async update(workspaceId, idOrName, schemaInput) {
      const found = await find(workspaceId, idOrName);
      const schema = parseSchema('schema', schemaInput);
      await updateEventDefinitionSchema(db, found.id, schema, clock.now());
      return view((await findEventDefinition(db, workspaceId, found.id))!);
    },

    async remove(workspaceId, idOrName) {
      const found = await find(workspaceId, idOrName);
      await removeEventDefinition(db, found.id);
      return view(found);
    },

    async schemaOf(workspaceId, name) {
      const found = await findEventDefinitionByName(db, workspaceId, name);
      return found?.schema ?? null;
    },
  };
}

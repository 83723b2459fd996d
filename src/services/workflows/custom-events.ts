import { EVENT_TYPES } from '../../events/event-types.js';
import { requireAddress } from '../../messages/addresses.js';
import type { Clock } from '../../shared/clock.js';
import { notFound, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { checkTypedValues } from '../../shared/typed-fields.js';
import type { Db } from '../../store/infra/db.js';
import { findEventDefinitionByName } from '../../store/event-definitions.js';
import { findSubscriber } from '../../store/subscribers.js';
import { saveWorkflowTrigger, triggerContactKey } from '../../store/workflow-triggers.js';
import { eventNameSchema } from './definition.js';
import { isOneOf } from '../../shared/one-of.js';

/**
 * A custom event sent through the API for one contact: checked, then queued as a workflow
 * trigger for the runner, which starts and resumes the runs it concerns.
 */

/** Largest event payload, as JSON. */
const MAX_EVENT_PAYLOAD_BYTES = 32 * 1024;

export interface SendEventInput {
  event: string;
  contactId?: string | undefined;
  email?: string | undefined;
  payload?: unknown;
  test: boolean;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export async function sendCustomEvent(
  db: Db,
  clock: Clock,
  workspaceId: string,
  input: SendEventInput,
): Promise<{ id: string; event: string }> {
  checkCustomEventName(input.event);
  const contact = await contactOf(db, workspaceId, input);
  const payload = await checkPayload(db, workspaceId, input.event, input.payload ?? {});
  const id = newId();
  await saveWorkflowTrigger(db, {
    id,
    workspace_id: workspaceId,
    event_name: input.event,
    event_id: null,
    subscriber_id: contact.subscriberId,
    email: contact.email,
    contact_key: triggerContactKey(workspaceId, contact.email),
    payload,
    test: input.test === true,
    created_at: clock.now(),
    lease_owner: null,
    lease_until: null,
  });
  return { id, event: input.event };
}

function checkCustomEventName(event: string): void {
  const parsed = eventNameSchema.safeParse(event);
  if (!parsed.success) throw validationError('event', parsed.error.issues[0]!.message);
  if (isOneOf(EVENT_TYPES, event))
    throw validationError('event', `${event} is a platform event: mailsvc emits it itself`);
}

/** The contact by id (a subscriber of the workspace) or by address (anyone). */
async function contactOf(
  db: Db,
  workspaceId: string,
  input: SendEventInput,
): Promise<{ subscriberId: string | null; email: string }> {
  if ((input.contactId === undefined) === (input.email === undefined))
    throw validationError('contact_id', 'give either contact_id or email (not both)');
  if (input.contactId === undefined) return { subscriberId: null, email: requireAddress('email', input.email!) };
  const found = isUuid(input.contactId)
    ? await findSubscriber(db, workspaceId, input.contactId.toLowerCase())
    : undefined;
  if (!found) throw notFound(`Contact ${input.contactId}`);
  return { subscriberId: found.id, email: found.email };
}

async function checkPayload(
  db: Db,
  workspaceId: string,
  event: string,
  payload: unknown,
): Promise<Record<string, unknown>> {
  if (!isPlainObject(payload)) throw validationError('payload', 'must be an object');
  if (Buffer.byteLength(JSON.stringify(payload)) > MAX_EVENT_PAYLOAD_BYTES)
    throw validationError('payload', `must be at most ${MAX_EVENT_PAYLOAD_BYTES} bytes as JSON`);
  // A declared event's payload follows its schema (events.create), so workflows can rely on it.
  const declared = await findEventDefinitionByName(db, workspaceId, event);
  if (declared?.schema) checkTypedValues('payload', declared.schema, payload);
  return payload;
}

import { recordEvent } from '../../events/record-event.js';
import { toIso } from '../../shared/clock.js';
import { validationError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { checkMetadata } from '../../shared/metadata.js';
import { hasLineBreak } from '../../messages/addresses.js';
import type { Db } from '../../store/infra/db.js';
import { listTagsOf, updateSubscriber, type Subscriber, type SubscriberStatus } from '../../store/subscribers.js';
import { findSuppression, removeSuppression, saveSuppressionIfAbsent } from '../../store/suppressions.js';

/**
 * What every way of writing a subscriber shares (one at a time, or a batch of an import): the
 * checks of its fields, the row a new address starts as, its merged properties, its opt-out
 * and the data of its `subscriber.*` events.
 */

export interface SubscriberInput {
  email: string;
  first_name?: string | null | undefined;
  last_name?: string | null | undefined;
  tags?: string[] | undefined;
  domain_id?: string | null | undefined;
  external_id?: string | null | undefined;
  metadata?: Record<string, unknown> | null | undefined;
  /** Set or, with null, remove single metadata keys (Resend's contact properties); others stay. */
  properties?: Record<string, unknown> | undefined;
  /** Opting out (or back in) as the subscriber is written. */
  status?: SubscriberStatus | undefined;
}

export type ImportOutcome =
  { outcome: 'created' | 'updated' | 'skipped'; id: string } | { outcome: 'failed'; reason: string };

const MAX_SUBSCRIBER_TAGS = 50;

export const checkName = (field: string, value: string | null | undefined) => {
  if (value != null && (value.length > 200 || hasLineBreak(value)))
    throw validationError(field, 'must be one line of at most 200 characters');
};

export function checkTags(tags: string[] | undefined): string[] | undefined {
  if (tags === undefined) return undefined;
  if (tags.length > MAX_SUBSCRIBER_TAGS) throw validationError('tags', `at most ${MAX_SUBSCRIBER_TAGS} tags`);
  tags.forEach((t, i) => {
    if (t.trim() === '' || t.length > 100 || /[\u0000-\u001f]/.test(t))
      throw validationError(`tags[${i}]`, 'must be 1 to 100 printable characters');
  });
  return [...new Set(tags.map((t) => t.trim()))];
}

/** The row an address new to the workspace starts as. */
export const newSubscriber = (workspaceId: string, email: string, source: string, now: number): Subscriber => ({
  id: newId(),
  workspace_id: workspaceId,
  email,
  email_key: email.toLowerCase(),
  first_name: null,
  last_name: null,
  status: 'subscribed',
  domain_id: null,
  external_id: null,
  metadata: null,
  source,
  created_at: now,
  updated_at: now,
  unsubscribed_at: null,
});

/** Metadata with `properties` merged in (null removes a key), within the size limit. */
export function mergedMetadata(
  current: Record<string, unknown> | null,
  properties: Record<string, unknown> | undefined,
): Record<string, unknown> | null | undefined {
  if (properties === undefined) return undefined;
  const merged: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(properties)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  // The limit applies to the merged result: the contact's properties together.
  checkMetadata('properties', merged);
  return Object.keys(merged).length === 0 ? null : merged;
}

/** The data of a `subscriber.*` event: the subscriber as it is now, stamped with its last change. */
export const eventDataOf = (s: Subscriber, tags: readonly string[]): Record<string, unknown> => ({
  subscriber_id: s.id,
  email: s.email,
  status: s.status,
  first_name: s.first_name,
  last_name: s.last_name,
  tags,
  external_id: s.external_id,
  metadata: s.metadata,
  timestamp: toIso(s.updated_at),
});

/** The same, its tags read in the change's transaction. */
export const subscriberEventData = async (trx: Db, s: Subscriber): Promise<Record<string, unknown>> =>
  eventDataOf(s, (await listTagsOf(trx, [s.id])).get(s.id) ?? []);

/** Applies a status change asked for by the API or an import (and the opt-out suppression it brings) in the caller's transaction. */
export async function applyStatus(
  trx: Db,
  row: Subscriber,
  status: SubscriberStatus | undefined,
  now: number,
  detail: string,
): Promise<{ row: Subscriber; changed: boolean }> {
  if (status === undefined || status === row.status) return { row, changed: false };
  const next = await setStatus(trx, row, status, null, now);
  if (status === 'unsubscribed') {
    await saveSuppressionIfAbsent(trx, {
      workspace_id: row.workspace_id,
      address: row.email_key,
      scope: 'marketing',
      reason: 'unsubscribe',
      detail,
      email_id: null,
      created_at: now,
    });
  }
  return { row: next, changed: true };
}

/** A subscriber's status and its event; re-subscribing lifts the opt-out it left behind. */
export async function setStatus(
  trx: Db,
  s: Subscriber,
  status: SubscriberStatus,
  emailId: string | null,
  now: number,
): Promise<Subscriber> {
  if (s.status === status) return s;
  const next = { ...s, status, updated_at: now, unsubscribed_at: status === 'unsubscribed' ? now : null };
  await updateSubscriber(trx, s.id, { status, updated_at: now, unsubscribed_at: next.unsubscribed_at });
  if (status === 'unsubscribed') {
    await recordEvent(trx, {
      workspaceId: s.workspace_id,
      type: 'subscriber.unsubscribed',
      emailId,
      data: await subscriberEventData(trx, next),
      at: now,
    });
  } else {
    // Re-subscribing (an explicit request) lifts the opt-out it left behind, never a bounce
    // or complaint suppression.
    if ((await findSuppression(trx, s.workspace_id, s.email_key))?.reason === 'unsubscribe')
      await removeSuppression(trx, s.workspace_id, s.email_key);
    await recordEvent(trx, {
      workspaceId: s.workspace_id,
      type: 'subscriber.updated',
      data: await subscriberEventData(trx, next),
      at: now,
    });
  }
  return next;
}

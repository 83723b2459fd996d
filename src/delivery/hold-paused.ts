import { recordEvent } from '../events/record-event.js';
import type { Clock } from '../shared/clock.js';
import type { Db } from '../store/infra/db.js';
import { listEmailsByIds, refreshEmailStatus, type Email, type QueueItem } from '../store/emails.js';
import { holdClaimedQueueItems, listPausedDomainIds } from '../store/reputation.js';
import { recipientEventData } from './event-data.js';

/** `email.held` for each email that had rows held, and its new status; in the caller's transaction. */
export async function recordHeld(
  trx: Db,
  rows: Array<{ email_id: string; recipient: string }>,
  reason: string,
  now: number,
): Promise<void> {
  const emails = new Map((await listEmailsByIds(trx, [...new Set(rows.map((r) => r.email_id))])).map((e) => [e.id, e]));
  for (const [emailId, email] of emails) {
    const recipients = rows.filter((r) => r.email_id === emailId).map((r) => r.recipient);
    await refreshEmailStatus(trx, emailId, now);
    await recordEvent(trx, {
      workspaceId: email.workspace_id,
      type: 'email.held',
      emailId,
      at: now,
      data: {
        ...recipientEventData(email, recipients[0]!, now),
        to: recipients,
        held: { reason, domain_id: email.domain_id },
      },
    });
  }
}

/**
 * The reputation guard's step in delivery: of the rows just claimed, the live marketing mail
 * of sending domains the guard paused is held (status `held`, with `email.held`) instead of
 * sent; returns the rows to deliver. Transactional mail is never held. The guard itself (in
 * services) decides the pauses and holds the rows already waiting.
 */
export function pausedDomainHold(
  db: Db,
  clock: Clock,
): (owner: string, items: QueueItem[], emails: Map<string, Email>) => Promise<QueueItem[]> {
  return async (owner, items, emails) => {
    // Read at every claim (a small indexed read per batch): a pause applies to the next claim
    // on every node, and no mail slips through while a cached list is stale.
    const ids = new Set(await listPausedDomainIds(db));
    if (ids.size === 0) return items;
    const toHold = items.filter((item) => {
      const email = emails.get(item.email_id);
      return (
        email !== undefined &&
        email.type === 'marketing' &&
        !email.test &&
        email.domain_id !== null &&
        ids.has(email.domain_id)
      );
    });
    if (toHold.length === 0) return items;
    const now = clock.now();
    const held = new Set(
      await db.transaction().execute(async (trx) => {
        const heldIds = await holdClaimedQueueItems(
          trx,
          owner,
          toHold.map((i) => i.id),
          now,
        );
        await recordHeld(
          trx,
          toHold.filter((i) => heldIds.includes(i.id)),
          'the reputation guard paused marketing mail of this domain',
          now,
        );
        return heldIds;
      }),
    );
    return items.filter((i) => !held.has(i.id));
  };
}

import { createHmac } from 'node:crypto';
import { recipientEventData } from '../delivery/event-data.js';
import { classifyEngagement, type Fetch } from '../engagement/classify-engagement.js';
import { isMachine, type EngagementRules } from '../engagement/engagement-rules.js';
import { recordEvent } from '../events/record-event.js';
import { findEmailById, listQueueItemsOfEmail, lockEmail } from '../store/emails.js';
import { listEmailEventsOfType, updateEventData } from '../store/events.js';
import type { MessageLinks } from '../messages/links.js';
import type { ServiceDeps } from './deps.js';

/**
 * Open and click tracking: what happens when a message's signed links (messages/links.ts) are
 * fetched. Every fetch is recorded, classified (engagement/classify-engagement.ts): a person,
 * Apple's Mail Privacy Protection, a mailbox provider's image proxy or a scanner. A token that
 * is not ours records nothing.
 */

const MAX_USER_AGENT = 512;

/** What the tracking endpoint knows of the request besides the token. */
interface Requester {
  method: string;
  ip: string | null;
  userAgent: string | null;
}

export interface TrackingService {
  /** Records an open; false for a token that is not ours. */
  open(token: string, requester: Requester): Promise<boolean>;
  /** Records a click and returns where to send the reader, or null for a token that is not ours. */
  click(token: string, requester: Requester): Promise<string | null>;
}

type Kind = Fetch['kind'];

/**
 * An opaque tag of a client address: the same for the same address, so a click can be matched
 * to an open by the same client, and not the address (an HMAC under the secret key: IPv4's
 * space is small enough to reverse a plain hash). The event holds this, never the address.
 */
const clientTag = (secretKey: Buffer, ip: string): string =>
  createHmac('sha256', secretKey).update(`engagement-client\0${ip}`).digest('base64url').slice(0, 22);

export function createTrackingService(
  deps: ServiceDeps & { links: MessageLinks; rules: EngagementRules },
): TrackingService {
  const { db, dialect, clock, logger, links, rules } = deps;

  async function record(
    emailId: string,
    kind: Kind,
    requester: Requester,
    extra: Record<string, unknown>,
  ): Promise<void> {
    const type = kind === 'open' ? 'email.opened' : 'email.clicked';
    const email = await findEmailById(db, emailId);
    if (!email) return; // the email is gone (retention); the redirect still works
    const items = await listQueueItemsOfEmail(db, emailId);
    const delivered = items
      .filter((i) => i.status === 'delivered' && i.finished_at !== null)
      .map((i) => i.finished_at!);
    const deliveredAt = delivered.length > 0 ? Math.min(...delivered) : null;
    const userAgent = requester.userAgent ? requester.userAgent.slice(0, MAX_USER_AGENT) : null;
    const client = requester.ip ? clientTag(deps.secretKey, requester.ip) : null;
    await db.transaction().execute(async (trx) => {
      await lockEmail(trx, dialect, emailId);
      const now = clock.now();
      const earlier = await listEmailEventsOfType(trx, emailId, type);
      const otherLinks = kind === 'click' ? earlier.filter((e) => e.data.url !== extra.url) : [];
      const lastOther = otherLinks.length > 0 ? Math.max(...otherLinks.map((e) => e.created_at)) : null;
      const openedBySameClient =
        kind === 'click' &&
        client !== null &&
        (await listEmailEventsOfType(trx, emailId, 'email.opened')).some(
          (o) => o.data.client === client && o.data.is_machine !== true,
        );
      const verdict = classifyEngagement(
        {
          kind,
          method: requester.method,
          ip: requester.ip,
          userAgent,
          sinceDelivery: deliveredAt === null ? null : now - deliveredAt,
          sinceOtherLink: lastOther === null ? null : now - lastOther,
          openedBySameClient,
        },
        rules,
      );
      if (verdict.by === 'link_burst') {
        // The clicks this one follows so closely were the same scanner's: their events are
        // corrected (their webhooks went out before anyone could know).
        for (const e of otherLinks) {
          if (now - e.created_at >= rules.timing.burstMs || e.data.is_machine === true) continue;
          e.data = {
            ...e.data,
            classification: 'scanner',
            is_machine: true,
            classified_by: 'link_burst',
            first_human: false,
          };
          await updateEventData(trx, e.id, e.data);
        }
      }
      const machine = isMachine(verdict.class);
      await recordEvent(trx, {
        workspaceId: email.workspace_id,
        type,
        emailId,
        at: now,
        // The message went to all its recipients at once, so who opened it is not known.
        data: recipientEventData(email, items[0]?.recipient ?? '', now, {
          to: items.map((i) => i.recipient),
          ...extra,
          user_agent: userAgent,
          // Which client fetched, to tell a person's open-then-click; never the address itself.
          ...(client ? { client } : {}),
          classification: verdict.class,
          is_machine: machine,
          classified_by: verdict.by,
          first: earlier.length === 0,
          // Metrics count people: the first open (or click) that was not a machine's.
          first_human: !machine && !earlier.some((e) => e.data.is_machine !== true),
        }),
      });
    });
  }

  return {
    async open(token, requester) {
      const open = links.readOpen(token);
      if (!open) return false;
      await record(open.emailId, 'open', requester, {});
      return true;
    },

    async click(token, requester) {
      const click = links.readClick(token);
      if (!click) return null;
      try {
        await record(click.emailId, 'click', requester, { url: click.url });
      } catch (err) {
        // The reader still gets where the link goes; the click is lost, and logged.
        logger.error({ err, emailId: click.emailId }, 'could not record a click');
      }
      return click.url;
    },
  };
}

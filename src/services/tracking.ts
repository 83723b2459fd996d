import { recipientEventData } from '../delivery/event-data.js';
import { recordEvent } from '../events/record-event.js';
import { signToken, tokenKey, verifyToken } from '../shared/signed-token.js';
import { findEmailById, listQueueItemsOfEmail } from '../store/emails.js';
import { hasEmailEvent } from '../store/events.js';
import type { TrackingLinks } from './send/add-tracking.js';
import type { ServiceDeps } from './deps.js';

/**
 * Open and click tracking: signed links (`/t/o/<token>` for the pixel, `/t/c/<token>` for a
 * link) and what happens when they are fetched. A token names the email and, for a click, the
 * exact URL that was in the message, under a MAC keyed from the instance secret: a tampered
 * or made-up token is refused, so the redirect cannot be pointed anywhere else.
 */

export const TRACKING_PATHS = { open: '/t/o/', click: '/t/c/' } as const;
/** Longer tokens are refused by verifyToken: such links are left untracked. */
const MAX_TOKEN_LENGTH = 2048;
const MAX_USER_AGENT = 512;

type OpenToken = { k: 'o'; e: string };
type ClickToken = { k: 'c'; e: string; u: string };

export interface TrackingFlags {
  opens: boolean;
  clicks: boolean;
}

export interface TrackingService {
  /** The links to put in an email's HTML. */
  links(emailId: string, flags: TrackingFlags): TrackingLinks;
  /** Records an open; false for a token that is not ours. */
  open(token: string, userAgent: string | undefined): Promise<boolean>;
  /** Records a click and returns where to send the reader, or null for a token that is not ours. */
  click(token: string, userAgent: string | undefined): Promise<string | null>;
  /** Where a click token leads, without recording anything (HEAD requests of link scanners). */
  clickTarget(token: string): string | null;
}

export function createTrackingService(deps: ServiceDeps): TrackingService {
  const { db, clock, config, logger } = deps;
  const key = tokenKey(deps.secretKey, 'tracking');
  const base = config.http.publicUrl;

  async function record(emailId: string, type: 'email.opened' | 'email.clicked', extra: Record<string, unknown>): Promise<void> {
    const email = await findEmailById(db, emailId);
    if (!email) return; // the email is gone (retention); the redirect still works
    const recipients = (await listQueueItemsOfEmail(db, emailId)).map((i) => i.recipient);
    const now = clock.now();
    await db.transaction().execute(async (trx) => {
      const first = !(await hasEmailEvent(trx, emailId, type));
      await recordEvent(trx, {
        workspaceId: email.workspace_id,
        type,
        emailId,
        at: now,
        // The message went to all its recipients at once, so who opened it is not known.
        data: recipientEventData(email, recipients[0] ?? '', now, { to: recipients, first, ...extra }),
      });
    });
  }

  const clickPayload = (token: string): ClickToken | null => {
    const payload = verifyToken<ClickToken>(key, token);
    if (payload?.k !== 'c' || typeof payload.e !== 'string' || typeof payload.u !== 'string' || !/^https?:\/\//i.test(payload.u)) return null;
    return payload;
  };

  const agent = (userAgent: string | undefined) => (userAgent ? userAgent.slice(0, MAX_USER_AGENT) : null);

  return {
    links(emailId, flags) {
      return {
        openUrl: flags.opens ? `${base}${TRACKING_PATHS.open}${signToken(key, { k: 'o', e: emailId } satisfies OpenToken)}` : null,
        clickUrl: flags.clicks
          ? (url) => {
              // Our own unsubscribe links stay direct: a click there is not engagement.
              if (url.startsWith(`${base}/u/`)) return null;
              const token = signToken(key, { k: 'c', e: emailId, u: url } satisfies ClickToken);
              return token.length <= MAX_TOKEN_LENGTH ? `${base}${TRACKING_PATHS.click}${token}` : null;
            }
          : null,
      };
    },

    async open(token, userAgent) {
      const payload = verifyToken<OpenToken>(key, token);
      if (payload?.k !== 'o' || typeof payload.e !== 'string') return false;
      await record(payload.e, 'email.opened', { user_agent: agent(userAgent) });
      return true;
    },

    clickTarget: (token) => clickPayload(token)?.u ?? null,

    async click(token, userAgent) {
      const payload = clickPayload(token);
      if (!payload) return null;
      try {
        await record(payload.e, 'email.clicked', { url: payload.u, user_agent: agent(userAgent) });
      } catch (err) {
        // The reader still gets where the link goes; the click is lost, and logged.
        logger.error({ err, emailId: payload.e }, 'could not record a click');
      }
      return payload.u;
    },
  };
}

import { signToken, tokenKey, verifyToken } from '../shared/signed-token.js';
import type { TrackingLinks } from './add-tracking.js';

/**
 * The signed links a message carries: the open pixel (`/t/o/<token>`), tracked links
 * (`/t/c/<token>`) and the one-click unsubscribe (`/u/<token>`). A token names the email (and
 * for a click the exact URL that was in the message; for an unsubscribe the workspace and
 * address) under a MAC keyed from the instance secret, so a tampered or made-up token is
 * refused and a redirect cannot be pointed anywhere else. Made here for every message, read
 * back by the tracking and unsubscribe use cases.
 */

export const TRACKING_PATHS = { open: '/t/o/', click: '/t/c/' } as const;
/** Longer tokens are refused by verifyToken: such links are left untracked. */
const MAX_TOKEN_LENGTH = 2048;

export interface TrackingFlags {
  opens: boolean;
  clicks: boolean;
}

type OpenToken = { k: 'o'; e: string };
type ClickToken = { k: 'c'; e: string; u: string };
interface UnsubscribeToken extends Record<string, unknown> {
  /** workspace id */
  w: string;
  /** the recipient's address */
  a: string;
  /** the email the link came in, if any */
  e: string | null;
}

export interface MessageLinks {
  /** The links to put in an email's HTML. */
  tracking(emailId: string, flags: TrackingFlags): TrackingLinks;
  /** The one-click URL for a recipient of a marketing message (RFC 8058). */
  unsubscribe(workspaceId: string, address: string, emailId: string | null): string;
  /** The email an open token names, or null for a token that is not ours. */
  readOpen(token: string): { emailId: string } | null;
  /** The email and URL a click token names, or null for a token that is not ours. */
  readClick(token: string): { emailId: string; url: string } | null;
  /** What an unsubscribe token names, or null for a token that is not ours. */
  readUnsubscribe(token: string): { workspaceId: string; address: string; emailId: string | null } | null;
}

export function messageLinks(secretKey: Buffer, publicUrl: string): MessageLinks {
  const tracking = tokenKey(secretKey, 'tracking');
  const unsubscribe = tokenKey(secretKey, 'unsubscribe');
  return {
    tracking(emailId, flags) {
      return {
        openUrl: flags.opens
          ? `${publicUrl}${TRACKING_PATHS.open}${signToken(tracking, { k: 'o', e: emailId } satisfies OpenToken)}`
          : null,
        clickUrl: flags.clicks
          ? (url) => {
              // Our own unsubscribe links stay direct: a click there is not engagement.
              if (url.startsWith(`${publicUrl}/u/`)) return null;
              const token = signToken(tracking, { k: 'c', e: emailId, u: url } satisfies ClickToken);
              return token.length <= MAX_TOKEN_LENGTH ? `${publicUrl}${TRACKING_PATHS.click}${token}` : null;
            }
          : null,
      };
    },
    unsubscribe: (workspaceId, address, emailId) =>
      `${publicUrl}/u/${signToken(unsubscribe, { w: workspaceId, a: address, e: emailId } satisfies UnsubscribeToken)}`,
    readOpen(token) {
      const p = verifyToken<OpenToken>(tracking, token);
      return p?.k === 'o' && typeof p.e === 'string' ? { emailId: p.e } : null;
    },
    readClick(token) {
      const p = verifyToken<ClickToken>(tracking, token);
      if (p?.k !== 'c' || typeof p.e !== 'string' || typeof p.u !== 'string' || !/^https?:\/\//i.test(p.u)) return null;
      return { emailId: p.e, url: p.u };
    },
    readUnsubscribe(token) {
      const p = verifyToken<UnsubscribeToken>(unsubscribe, token);
      if (!p || typeof p.w !== 'string' || typeof p.a !== 'string') return null;
      return { workspaceId: p.w, address: p.a, emailId: typeof p.e === 'string' ? p.e : null };
    },
  };
}

/** RFC 2369 and RFC 8058 headers: mailbox providers show an unsubscribe button and POST to it. */
export const listUnsubscribeHeaders = (url: string): Record<string, string> => ({
  'List-Unsubscribe': `<${url}>`,
  'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
});

import type { Clock } from '../../shared/clock.js';
import { toIso } from '../../shared/clock.js';
import { signToken, tokenKey, verifyToken } from '../../shared/signed-token.js';

/**
 * The download links of a received message (its raw source and each attachment), at
 * `<http.publicUrl>/r/<token>`: outside authentication, because the `resend` SDK fetches
 * `raw.download_url` with a bare `fetch` (emails.receiving.forward), as Resend's own signed
 * URLs allow. The token names the workspace, the message and the part under a MAC keyed from
 * the instance secret, and expires an hour after it was made (sooner if the message's
 * retention ends first), so a link that leaks stops working.
 */

export const RECEIVED_DOWNLOAD_PATH = '/r/';
/** How long a received message's download link works. */
const RECEIVED_LINK_MS = 3600 * 1000;
const DAY = 24 * 3600 * 1000;

/** `raw`, or an attachment id. */
type ReceivedPart = string;

interface ReceivedToken extends Record<string, unknown> {
  w: string;
  e: string;
  p: ReceivedPart;
  /** Expiry, epoch ms. */
  x: number;
}

interface ReceivedLink {
  download_url: string;
  expires_at: string;
}

export interface ReceivedLinks {
  /** A fresh link to one part of a message received at `receivedAt`. */
  link(workspaceId: string, emailId: string, receivedAt: number, part: ReceivedPart): ReceivedLink;
  /** What a genuine, unexpired token names; null for anything else. */
  read(token: string): { workspaceId: string; emailId: string; part: ReceivedPart } | null;
}

export function receivedLinks(
  secretKey: Buffer,
  publicUrl: string,
  clock: Clock,
  retentionDays: number,
): ReceivedLinks {
  const key = tokenKey(secretKey, 'received download');
  return {
    link(workspaceId, emailId, receivedAt, part) {
      const expires = Math.min(clock.now() + RECEIVED_LINK_MS, receivedAt + retentionDays * DAY);
      const token = signToken(key, { w: workspaceId, e: emailId, p: part, x: expires } satisfies ReceivedToken);
      return { download_url: `${publicUrl}${RECEIVED_DOWNLOAD_PATH}${token}`, expires_at: toIso(expires) };
    },
    read(token) {
      const t = verifyToken<ReceivedToken>(key, token);
      if (
        !t ||
        typeof t.w !== 'string' ||
        typeof t.e !== 'string' ||
        typeof t.p !== 'string' ||
        typeof t.x !== 'number' ||
        t.x < clock.now()
      )
        return null;
      return { workspaceId: t.w, emailId: t.e, part: t.p };
    },
  };
}

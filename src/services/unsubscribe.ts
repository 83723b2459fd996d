import { validationError } from '../shared/errors.js';
import { signToken, tokenKey, verifyToken } from '../shared/signed-token.js';
import type { ServiceDeps } from './deps.js';
import type { SubscriberService } from './subscribers.js';

interface UnsubscribePayload extends Record<string, unknown> {
  /** workspace id */
  w: string;
  /** the recipient's address */
  a: string;
  /** the email the link came in, if any */
  e: string | null;
}

export interface UnsubscribeService {
  /** The one-click URL for a recipient of a marketing message (RFC 8058). */
  link(workspaceId: string, address: string, emailId: string | null): string;
  /** Opts the token's address out; a tampered or foreign token is a 400 and changes nothing. */
  unsubscribe(token: string): Promise<{ address: string }>;
  /** The address a token names, without acting on it (for the confirmation page). */
  peek(token: string): { address: string };
}

export function createUnsubscribeService(deps: ServiceDeps & { subscribers: SubscriberService }): UnsubscribeService {
  const key = tokenKey(deps.secretKey, 'unsubscribe');
  const base = deps.config.http.publicUrl;

  const read = (token: string): UnsubscribePayload => {
    const payload = verifyToken<UnsubscribePayload>(key, token);
    if (!payload || typeof payload.w !== 'string' || typeof payload.a !== 'string') throw validationError('token', 'this unsubscribe link is not valid');
    return payload;
  };

  return {
    link: (workspaceId, address, emailId) => `${base}/u/${signToken(key, { w: workspaceId, a: address, e: emailId } satisfies UnsubscribePayload)}`,
    peek: (token) => ({ address: read(token).a }),
    async unsubscribe(token) {
      const payload = read(token);
      await deps.db.transaction().execute((trx) => deps.subscribers.unsubscribe(trx, payload.w, payload.a, payload.e));
      return { address: payload.a };
    },
  };
}

import { validationError } from '../../shared/errors.js';
import type { MessageLinks } from '../../messages/links.js';
import type { ServiceDeps } from '../deps.js';
import type { SubscriberService } from './subscribers.js';

export interface UnsubscribeService {
  /** Opts the token's address out; a tampered or foreign token is a 400 and changes nothing. */
  unsubscribe(token: string): Promise<{ address: string }>;
}

export function createUnsubscribeService(
  deps: ServiceDeps & { subscribers: SubscriberService; links: MessageLinks },
): UnsubscribeService {
  const read = (token: string) => {
    const payload = deps.links.readUnsubscribe(token);
    if (!payload) throw validationError('token', 'this unsubscribe link is not valid');
    return payload;
  };

  return {
    async unsubscribe(token) {
      const payload = read(token);
      await deps.db
        .transaction()
        .execute((trx) => deps.subscribers.unsubscribe(trx, payload.workspaceId, payload.address, payload.emailId));
      return { address: payload.address };
    },
  };
}

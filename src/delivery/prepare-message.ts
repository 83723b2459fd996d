import type { Clock } from '../shared/clock.js';
import { decryptSecret } from '../shared/crypto.js';
import type { Db } from '../store/infra/db.js';
import { findDomain, listDkimKeys } from '../store/domains.js';
import type { Email } from '../store/emails.js';
import type { Prepared } from './transmit-job.js';
import type { DkimKey, DkimSigner } from './dkim-signer.js';
import { bounceDomainOf, returnPathFor } from './return-path.js';

interface PrepareDeps {
  db: Db;
  clock: Clock;
  secretKey: Buffer;
  signer: DkimSigner;
  returnPathSubdomain: string;
  /** The message of an email that has none stored yet (a campaign's, composed when first delivered). */
  compose(email: Email): Promise<Buffer | undefined>;
}

const KEY_CACHE_MS = 60_000;

/**
 * The message as it goes on the wire: its content (stored with the email, or composed now for a
 * campaign's), signed with the sending domain's active DKIM key, with its VERP envelope sender.
 * Keys are read once a minute per domain, not once per message.
 */
export function messagePreparer(deps: PrepareDeps): (email: Email, stored: Buffer | undefined) => Promise<Prepared> {
  const { db, clock, secretKey } = deps;
  type Sender = { key: DkimKey; returnPathSubdomain: string; requireTls: boolean };
  const senders = new Map<string, { until: number; sender: Sender | null }>();

  // The domain's key and its own settings (domains.update), read once a minute.
  const senderFor = async (email: Email): Promise<Sender | null> => {
    if (!email.domain_id) return null;
    const cached = senders.get(email.domain_id);
    if (cached && cached.until > clock.now()) return cached.sender;
    const domain = await findDomain(db, email.workspace_id, email.domain_id);
    const active = domain ? (await listDkimKeys(db, [domain.id]))[0] : undefined;
    const sender =
      domain && active
        ? {
            key: {
              domain: domain.name,
              selector: active.selector,
              privateKey: decryptSecret(secretKey, active.private_key_sealed),
            },
            returnPathSubdomain: domain.return_path_subdomain ?? deps.returnPathSubdomain,
            requireTls: domain.tls === 'enforced',
          }
        : null;
    senders.set(email.domain_id, { until: clock.now() + KEY_CACHE_MS, sender });
    return sender;
  };

  return async (email, stored) => {
    const [content, sender] = await Promise.all([stored ?? deps.compose(email), senderFor(email)]);
    if (!content) return { kind: 'failed', category: 'message', reason: 'the message content is missing' };
    if (!sender)
      return { kind: 'failed', category: 'config', reason: 'the sending domain has no DKIM key (was it removed?)' };
    const message = await deps.signer.sign(content, sender.key, clock.now());
    return {
      kind: 'message',
      message,
      returnPath: returnPathFor(email.id, bounceDomainOf(sender.key.domain, sender.returnPathSubdomain), secretKey),
      requireTls: sender.requireTls,
    };
  };
}

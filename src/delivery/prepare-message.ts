import type { Clock } from '../shared/clock.js';
import { decryptSecret } from '../shared/crypto.js';
import type { Db } from '../store/db.js';
import { findDomain, listDkimKeys } from '../store/domains.js';
import type { Email } from '../store/tables.js';
import type { Prepared } from './deliver-job.js';
import type { DkimKey, DkimSigner } from './dkim-signer.js';
import { bounceDomainOf, returnPathFor } from './return-path.js';

export interface PrepareDeps {
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
  const keys = new Map<string, { until: number; key: DkimKey | null }>();

  const dkimKeyFor = async (email: Email): Promise<DkimKey | null> => {
    if (!email.domain_id) return null;
    const cached = keys.get(email.domain_id);
    if (cached && cached.until > clock.now()) return cached.key;
    const domain = await findDomain(db, email.workspace_id, email.domain_id);
    const active = domain ? (await listDkimKeys(db, [domain.id]))[0] : undefined;
    const key = domain && active ? { domain: domain.name, selector: active.selector, privateKey: decryptSecret(secretKey, active.private_key_sealed) } : null;
    keys.set(email.domain_id, { until: clock.now() + KEY_CACHE_MS, key });
    return key;
  };

  return async (email, stored) => {
    const [content, key] = await Promise.all([stored ?? deps.compose(email), dkimKeyFor(email)]);
    if (!content) return { kind: 'failed', category: 'message', reason: 'the message content is missing' };
    if (!key) return { kind: 'failed', category: 'config', reason: 'the sending domain has no DKIM key (was it removed?)' };
    const message = await deps.signer.sign(content, key, clock.now());
    return { kind: 'message', message, returnPath: returnPathFor(email.id, bounceDomainOf(key.domain, deps.returnPathSubdomain), secretKey) };
  };
}

import { ConfigError } from '../config/load-config.js';
import { decryptSecret, encryptSecret } from '../shared/crypto.js';
import type { Db } from './infra/db.js';
import { findAnySealedSecret, findInstanceValue, saveInstanceValueOnce } from './instance.js';

const CHECK_KEY = 'secret_key_check';
const CHECK_PLAINTEXT = 'mailsvc secret key check';

/**
 * Refuses to run with a secret key that cannot open the database's secrets. Every node (and
 * the CLI) must use the same `secretKey`: one with another key would start, accept mail and
 * defer every delivery and webhook with "unable to authenticate data", poisoning the cluster
 * quietly. The first start seals a check value with the key; later starts must open it. A
 * database from before the check proves the key against a secret it already holds.
 */
export async function checkSecretKey(db: Db, key: Buffer, now: number): Promise<void> {
  let sealed = await findInstanceValue(db, CHECK_KEY);
  if (sealed === undefined) {
    const existing = await findAnySealedSecret(db);
    if (existing !== undefined && !opens(key, existing)) throw refused();
    sealed = await saveInstanceValueOnce(db, CHECK_KEY, encryptSecret(key, CHECK_PLAINTEXT), now);
  }
  if (!opens(key, sealed)) throw refused();
}

const opens = (key: Buffer, sealed: string): boolean => {
  try {
    decryptSecret(key, sealed);
    return true;
  } catch {
    return false;
  }
};

const refused = () =>
  new ConfigError(
    "config: secretKey does not open this database's secrets (they were sealed with another key): every node must use the same secretKey (or the same <dataDir>/secret.key)",
  );

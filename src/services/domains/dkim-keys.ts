import { generateKeyPair, randomInt } from 'node:crypto';
import { promisify } from 'node:util';
import { encryptSecret } from '../../shared/crypto.js';
import type { DkimKey } from '../../store/domains.js';

const generateKeyPairAsync = promisify(generateKeyPair);

const DKIM_TOKENS_PER_DOMAIN = 3;
const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const TOKEN_LENGTH = 32;

const randomToken = (): string =>
  Array.from({ length: TOKEN_LENGTH }, () => TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)]).join('');

/** A new domain's DKIM keys, one per token (its selector), the private halves sealed. */
export async function newDkimKeys(secretKey: Buffer, domainId: string, now: number): Promise<DkimKey[]> {
  // RSA-2048: every mailbox provider verifies it; key generation runs on libuv's pool.
  const pairs = await Promise.all(
    Array.from({ length: DKIM_TOKENS_PER_DOMAIN }, () =>
      generateKeyPairAsync('rsa', {
        modulusLength: 2048,
        publicKeyEncoding: { type: 'spki', format: 'der' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      }),
    ),
  );
  return pairs.map((pair, position) => ({
    selector: randomToken(),
    domain_id: domainId,
    position,
    private_key_sealed: encryptSecret(secretKey, pair.privateKey),
    public_key: pair.publicKey.toString('base64'),
    created_at: now,
  }));
}

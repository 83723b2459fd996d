import { randomFillSync } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/**
 * Random bytes for prefixed ids, drawn from a 4 KB block of the system CSPRNG refilled when
 * used up: a request and a delivery make several (request id, events, outbox rows), and
 * asking OpenSSL for 16 bytes at a time cost 2.5% of the server's CPU under load (profile,
 * issue 14). Every byte is handed out once. (UUIDv7s keep uuid's own generator, which keeps
 * them increasing within a millisecond.)
 */
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;
function randomFromPool(bytes: number): Buffer {
  if (bytes > POOL_SIZE) return randomFillSync(Buffer.alloc(bytes));
  if (offset + bytes > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  // A copy: the pool is overwritten on the next refill.
  const out = Buffer.from(pool.subarray(offset, offset + bytes));
  offset += bytes;
  return out;
}

/** UUIDv7: sorts by creation time, so ids double as keyset cursors (DESIGN.md). */
export const newId = (): string => uuidv7();

/** A prefixed opaque id for things that are not rows users look up by uuid (requests, events). */
export const newPrefixedId = (prefix: string, bytes = 16): string =>
  `${prefix}${randomFromPool(bytes).toString('base64url')}`;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID_RE.test(value);

import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/** UUIDv7: sorts by creation time, so ids double as keyset cursors (DESIGN.md). */
export const newId = (): string => uuidv7();

/** A prefixed opaque id for things that are not rows users look up by uuid (requests, events). */
export const newPrefixedId = (prefix: string, bytes = 16): string =>
  `${prefix}${randomBytes(bytes).toString('base64url')}`;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID_RE.test(value);

import { validationError } from './errors.js';
import { jsonDepth } from './json-depth.js';

/** `metadata` of emails, campaigns, subscribers and domains, on every intake. */
const METADATA_LIMITS = { bytes: 8 * 1024, depth: 32 } as const;

/**
 * Checks a metadata object, so a record cannot grow without bound: at most 8 KB as UTF-8
 * JSON, objects and arrays nested at most 32 levels (the object itself being the first). The
 * depth is checked first: serialising a value nested thousands of levels overflows the stack.
 */
export function checkMetadata(field: string, value: unknown): void {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw validationError(field, 'must be a JSON object');
  if (jsonDepth(value, METADATA_LIMITS.depth) > METADATA_LIMITS.depth)
    throw validationError(field, `must nest at most ${METADATA_LIMITS.depth} levels deep`);
  if (Buffer.byteLength(JSON.stringify(value)) > METADATA_LIMITS.bytes)
    throw validationError(field, `must be at most ${METADATA_LIMITS.bytes} bytes as JSON`);
}

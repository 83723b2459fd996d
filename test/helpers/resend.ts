import assert from 'node:assert/strict';
import { Resend } from 'resend';
import type { TestDns } from './dns-server.js';
import type { TestServer } from './server.js';

/** The official Resend SDK pointed at the server under test: the one-line switch users make. */
export const resendClient = (server: TestServer, key: string): Resend =>
  new Resend(key, { baseUrl: `${server.httpUrl}/v1` });

/** What the SDK returns: `data` or `error`, never both. */
interface SdkResult<T> {
  data: T | null;
  error: { name: string; message: string; statusCode: number | null } | null;
}

/** Asserts the call succeeded (the SDK gave data and no error) and returns the data. */
export function ok<T>(result: SdkResult<T>, what = 'call'): T {
  assert.equal(result.error, null, `${what}: ${JSON.stringify(result.error)}`);
  assert.ok(result.data, `${what}: no data`);
  return result.data;
}

/** Asserts the call failed the way the SDK reports failures: `name`, `message`, `statusCode`. */
export function failed(result: SdkResult<unknown>, statusCode: number, name: string, message?: RegExp): void {
  assert.equal(result.data, null, `expected an error, got ${JSON.stringify(result.data)}`);
  assert.ok(result.error, 'expected an error');
  assert.equal(result.error.statusCode, statusCode, JSON.stringify(result.error));
  assert.equal(result.error.name, name, JSON.stringify(result.error));
  assert.equal(typeof result.error.message, 'string');
  if (message) assert.match(result.error.message, message);
}

/**
 * Asserts an object carries every field the SDK's type declares (the names are copied from
 * node_modules/resend/dist/index.d.mts), with a value of the declared JSON type.
 */
export function hasFields(
  value: unknown,
  fields: Record<
    string,
    'string' | 'number' | 'boolean' | 'object' | 'array' | 'string|null' | 'array|null' | 'object|null' | 'number|null'
  >,
  what = 'object',
): void {
  assert.ok(value && typeof value === 'object', `${what}: not an object`);
  const record = value as Record<string, unknown>;
  for (const [field, type] of Object.entries(fields)) {
    assert.ok(field in record, `${what}: missing ${field} (${JSON.stringify(record).slice(0, 300)})`);
    const v = record[field];
    const actual = v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
    assert.ok(type.split('|').includes(actual), `${what}.${field}: ${actual}, expected ${type}`);
  }
}

/** Publishes what a domain needs in the test DNS: the customer's CNAMEs and our TXT keys. */
export async function publishDomain(server: TestServer, dns: TestDns, name: string): Promise<void> {
  const records = await server.runtime.services.domains.recordsToPublish(server.workspaceId, name);
  for (const r of records.customer) dns.set(r.name, 'CNAME', [r.value]);
  for (const r of records.dkimHost) dns.set(r.name, 'TXT', [r.value]);
}

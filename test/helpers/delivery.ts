import { promises as dnsPromises } from 'node:dns';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import type { Db } from '../../src/store/db.js';
import type { TestDns } from './dns-server.js';

/** Routes `domain` to MX hosts: [name, preference, A addresses, AAAA addresses]. */
export function routeDomain(dns: TestDns, domain: string, hosts: Array<{ name: string; preference: number; a?: string[]; aaaa?: string[] }>): void {
  dns.set(domain, 'MX', hosts.map((h) => ({ preference: h.preference, exchange: h.name })));
  for (const h of hosts) {
    if (h.a) dns.set(h.name, 'A', h.a);
    if (h.aaaa) dns.set(h.name, 'AAAA', h.aaaa);
  }
}

/** DKIM verification by mailauth's verifier (not our code), resolving keys in the test DNS. */
export async function verifyDkim(raw: Buffer, dns: TestDns) {
  const resolver = new dnsPromises.Resolver();
  resolver.setServers([dns.server]);
  const result = await dkimVerify(raw, { resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') as Promise<string[][]> });
  return result.results;
}

/** Polls `check` until it returns a value, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The email's status, queue rows, attempts and events, straight from the database. */
export async function emailState(db: Db, emailId: string) {
  // The email last: delivery writes its attempts, events, rows and status in one transaction,
  // so a caller waiting for an attempt also sees the status that came with it (on PostgreSQL
  // each statement reads the database as it is when the statement starts).
  const attempts = await db.selectFrom('delivery_attempts').selectAll().where('email_id', '=', emailId).orderBy('started_at').orderBy('id').execute();
  const events = await db.selectFrom('events').selectAll().where('email_id', '=', emailId).orderBy('created_at').orderBy('id').execute();
  const items = await db.selectFrom('queue_items').selectAll().where('email_id', '=', emailId).orderBy('recipient').execute();
  const email = await db.selectFrom('emails').selectAll().where('id', '=', emailId).executeTakeFirstOrThrow();
  return { email, items, attempts, events: events.map((e) => ({ ...e, data: JSON.parse(e.data) as Record<string, any> })) };
}

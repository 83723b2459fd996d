import { promises as dnsPromises } from 'node:dns';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import type { Db } from '../../src/store/infra/db.js';
import type { TestDns } from './dns-server.js';
import type { TestMx } from './mx-server.js';

/** Routes `domain` to MX hosts: [name, preference, A addresses, AAAA addresses]. */
export function routeDomain(
  dns: TestDns,
  domain: string,
  hosts: Array<{ name: string; preference: number; a?: string[]; aaaa?: string[] }>,
): void {
  dns.set(
    domain,
    'MX',
    hosts.map((h) => ({ preference: h.preference, exchange: h.name })),
  );
  for (const h of hosts) {
    if (h.a) dns.set(h.name, 'A', h.a);
    if (h.aaaa) dns.set(h.name, 'AAAA', h.aaaa);
  }
}

/** DKIM verification by mailauth's verifier (not our code), resolving keys in the test DNS. */
export async function verifyDkim(raw: Buffer, dns: TestDns) {
  const resolver = new dnsPromises.Resolver();
  resolver.setServers([dns.server]);
  const result = await dkimVerify(raw, {
    resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT'),
  });
  return result.results;
}

/** Polls `check` until it returns a value, or fails after `timeoutMs` (default a minute: a deadline for a failure, on a loaded machine too, not a speed). */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 60_000,
  what = 'condition',
): Promise<T> {
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
  // One snapshot: delivery writes an email's attempts, events, rows and status in one
  // transaction, and separate reads could each see a different side of its commit (a bounced
  // email with its last attempt still missing). PostgreSQL: REPEATABLE READ; SQLite: the
  // transaction holds the process's one connection, so no write lands between the reads.
  const { attempts, events, items, email } = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => ({
      attempts: await trx
        .selectFrom('delivery_attempts')
        .selectAll()
        .where('email_id', '=', emailId)
        .orderBy('started_at')
        .orderBy('id')
        .execute(),
      events: await trx.selectFrom('events').selectAll().where('email_id', '=', emailId).orderBy('seq').execute(),
      items: await trx
        .selectFrom('queue_items')
        .selectAll()
        .where('email_id', '=', emailId)
        .orderBy('recipient')
        .execute(),
      email: await trx.selectFrom('emails').selectAll().where('id', '=', emailId).executeTakeFirstOrThrow(),
    }));
  return {
    email,
    items,
    attempts,
    events: events.map((e) => ({ ...e, data: JSON.parse(e.data) as Record<string, any> })),
  };
}

/** Waits until a message with each of `messageIds` reached the MX (at least once), at most `timeoutMs`. */
export async function allArrived(mx: TestMx, messageIds: Iterable<string>, timeoutMs: number): Promise<void> {
  const expected = new Set(messageIds);
  const missing = () => {
    const seen = new Set(mx.messages.map((m) => m.messageId));
    return [...expected].filter((id) => !seen.has(id)).length;
  };
  await eventually(
    async () => missing() === 0,
    timeoutMs,
    `every message at the MX (${missing()} of ${expected.size} missing)`,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; ${missing()} of ${expected.size} still missing`);
  });
}

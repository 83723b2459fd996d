import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { eventually } from '../helpers/delivery.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import { testPostgresUrl } from '../helpers/postgres.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Issue 23: on PostgreSQL, the keys, workspaces and domains every request reads are kept in
 * memory, and a change any node (or anyone) commits reaches every node's memory through
 * LISTEN/NOTIFY (migration 0043, store/infra/row-cache.ts). Two nodes on one database: A changes,
 * B serves.
 */
describe(
  'rows kept in memory on PostgreSQL',
  { skip: testPostgresUrl() ? false : 'PostgreSQL only (SQLite reads are local and kept nowhere)' },
  () => {
    let dns: TestDns;
    let a: TestServer;
    let b: TestServer;
    let sql: pg.Client;
    const quiet = { delivery: { enabled: false }, webhooks: { enabled: false }, dkim: { host: 'dkim.mailsvc.test' } };

    before(async () => {
      dns = await startDnsServer();
      a = await startTestServer({ ...quiet, delivery: { enabled: false, dnsServers: [dns.server] } });
      const secretKey = a.runtime.deps.secretKey.toString('base64');
      b = await startTestServer({
        ...quiet,
        delivery: { enabled: false, dnsServers: [dns.server] },
        database: a.config.database,
        secretKey,
      });
      await addVerifiedDomain(a, dns, 'shop.test');
      sql = new pg.Client({ connectionString: a.config.database });
      await sql.connect();
    });
    after(async () => {
      await sql?.end();
      await b?.close();
      await a?.close();
      await dns?.close();
    });

    const send = (server: TestServer, key: string) =>
      request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: { from: 'orders@shop.test', to: 'someone@example.org', subject: 'Hi', text: 'Hello' },
      });
    const listening = async () =>
      Number(
        (
          await sql.query(
            `select count(*) as n from pg_stat_activity where datname = current_database() and query = 'listen mailsvc_rows'`,
          )
        ).rows[0].n,
      );
    /** A change no node hears about: the trigger is off while it runs. */
    const silently = async (statement: string, params: unknown[]) => {
      await sql.query('begin');
      await sql.query('alter table credentials disable trigger credentials_changed');
      await sql.query(statement, params);
      await sql.query('alter table credentials enable trigger credentials_changed');
      await sql.query('commit');
    };
    const keyId = async (secret: string) =>
      (await a.runtime.services.credentials.authenticate(secret, 'v1')).credentialId;

    it('serves a key from memory, and refuses it on every node once another revokes it', async () => {
      const key = await a.key();
      const id = await keyId(key);
      assert.equal((await send(a, key)).status, 200);
      assert.equal((await send(b, key)).status, 200);
      await eventually(async () => ((await listening()) >= 2 ? true : undefined), 120_000, 'both nodes listening');
      assert.equal((await send(b, key)).status, 200, 'read while listening: kept');
      // Revoked behind the nodes' backs: B still has the key in memory, which shows it is kept.
      await silently('update credentials set revoked_at = $1 where id = $2', [Date.now(), id]);
      const kept = await send(b, key);
      assert.equal(kept.status, 200, `B answers from memory: ${show(kept)}`);
      // A send is the shared request limit's two statements, BEGIN, three inserts and COMMIT; the
      // key, the workspace and its domains (three more) come from memory. The node's periodic
      // tasks count too, now and then: the fewest of five sends is the send's own. The request
      // log is written after the answer, in a transaction of its own (three statements): each
      // send waits for the last one's to land, or a busy machine counts it in the next send.
      const logs = async () => Number((await sql.query('select count(*)::int as n from api_logs')).rows[0].n);
      const logsSettled = async () => {
        let last = -1;
        for (let tries = 0; tries < 100; tries++) {
          const now = await logs();
          if (now === last) return;
          last = now;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.fail('the request log never settled');
      };
      const used: number[] = [];
      for (let i = 0; i < 5; i++) {
        await logsSettled();
        const before = b.runtime.store.statements();
        assert.equal((await send(b, key)).status, 200);
        used.push(b.runtime.store.statements() - before);
      }
      assert.ok(Math.min(...used) <= 7, `at most 7 statements a send: ${used.join(', ')}`);

      // Any committed change to the row is heard: B drops it and reads the revocation.
      await sql.query('update credentials set revoked_at = revoked_at + 1 where id = $1', [id]);
      const refused = await eventually(
        async () => {
          const res = await send(b, key);
          return res.status === 401 ? res : undefined;
        },
        5000,
        'B refuses the revoked key',
      );
      assert.match(refused.body.message ?? refused.body.error?.message, /revoked/);
    });

    it('a key revoked through the API is refused at once on that node and within moments on the other', async () => {
      const key = await a.key();
      const listed = await a.runtime.services.credentials.authenticate(key, 'v1');
      assert.equal((await send(a, key)).status, 200);
      assert.equal((await send(b, key)).status, 200);
      assert.equal((await send(b, key)).status, 200);
      await a.runtime.services.credentials.revoke(listed.credentialId);
      assert.equal((await send(a, key)).status, 401, 'refused at once where it was revoked');
      await eventually(async () => ((await send(b, key)).status === 401 ? true : undefined), 5000, 'B refuses it');
    });

    it('a domain removed on one node stops sending on the other', async () => {
      const key = await a.key();
      await addVerifiedDomain(a, dns, 'gone.test');
      const from = (server: TestServer) =>
        request(server.httpUrl, 'POST', '/v1/emails', {
          key,
          body: { from: 'news@gone.test', to: 'someone@example.org', subject: 'Hi', text: 'Hello' },
        });
      assert.equal((await from(b)).status, 200);
      assert.equal((await from(b)).status, 200);
      await a.runtime.services.domains.remove(a.workspaceId, 'gone.test');
      await eventually(
        async () => ((await from(b)).status === 403 ? true : undefined),
        5000,
        'B refuses the removed domain',
      );
    });

    it('keeps nothing while its listening connection is down: a change no one announces is still seen', async () => {
      const key = await a.key();
      assert.equal((await send(b, key)).status, 200);
      assert.equal((await send(b, key)).status, 200);
      await eventually(async () => ((await listening()) >= 2 ? true : undefined), 120_000, 'both nodes listening');
      await sql.query(
        `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query = 'listen mailsvc_rows'`,
      );
      await silently('update credentials set revoked_at = $1 where id = $2', [Date.now(), await keyId(key)]);
      // Without the listening connection B cannot know what changed: it must read again, not serve what it kept.
      await eventually(
        async () => ((await send(b, key)).status === 401 ? true : undefined),
        5000,
        'B reads the revocation',
      );
      // And it listens again.
      await eventually(
        async () => {
          await send(b, await a.key());
          return (await listening()) >= 1 ? true : undefined;
        },
        10_000,
        'listening again',
      );
    });
  },
);

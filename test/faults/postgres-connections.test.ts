import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  acceptedOrRefused,
  faultRig,
  faultsPostgres,
  postgresUnavailable,
  send,
  undelivered,
  type FaultRig,
} from './fixture.js';

/**
 * PostgreSQL drops connections: a failover, a restart for a minor upgrade,
 * `idle_session_timeout`, PgBouncer recycling them. Here every backend of the node's database
 * is terminated, 20 times at varied moments, while mail is sent and delivered and while the
 * pool sits idle. The process must never exit; every answer is 2xx or a retryable 503; every
 * message answered 2xx arrives.
 */
const unavailable = await postgresUnavailable();

describe('PostgreSQL connections terminated under a running node', { skip: unavailable ?? false }, () => {
  let rig: FaultRig;
  let admin: pg.Client;

  before(async () => {
    rig = await faultRig({ database: 'postgres' });
    admin = new pg.Client({ connectionString: faultsPostgres() });
    admin.on('error', () => {});
    await admin.connect();
  });
  after(async () => {
    await admin?.end().catch(() => {});
    await rig?.close();
  });

  /** Terminates every connection to the node's database but the test's own: returns how many. */
  const terminateAll = async (): Promise<number> => {
    const name = new URL(rig.database!.url).pathname.slice(1);
    const { rows } = await admin.query<{ pid: number }>(
      'select pg_terminate_backend(pid), pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
      [name],
    );
    return rows.length;
  };

  it('never exits, refuses only retryably, and delivers everything it accepted', async (t) => {
    const node = await rig.serve({ MAILSVC_DELIVERY_CONCURRENCY: '4' });
    const accepted: string[] = [];
    const answers = { accepted: 0, refused: 0 };
    let n = 0;
    let slowest = 0;
    let sending = true;
    // Two clients sending one message after another, as applications would.
    const client = async () => {
      while (sending && n < 2000) {
        const started = Date.now();
        const res = await send(node.url, rig.key, n++).catch((err: Error) => {
          throw new Error(
            `no answer (${err.message}); the node ${node.alive() ? 'is up' : 'exited'}: ${node.output().slice(-1500)}`,
          );
        });
        slowest = Math.max(slowest, Date.now() - started);
        if (acceptedOrRefused(res)) {
          accepted.push(res.body.id);
          answers.accepted++;
        } else answers.refused++;
      }
    };
    const clients = [client(), client()];
    let terminated = 0;
    try {
      // 20 rounds: 14 during the stream of sends and deliveries, at moments 50-650 ms apart;
      // then 6 while the node is idle (its pool and the LISTEN connection only).
      for (let round = 0; round < 14; round++) {
        await new Promise((r) => setTimeout(r, 50 + ((round * 137) % 600)));
        terminated += await terminateAll();
        assert.ok(node.alive(), `the node exited after round ${round + 1}: ${node.output().slice(-1500)}`);
      }
    } finally {
      sending = false;
      await Promise.all(clients);
    }
    for (let round = 0; round < 6; round++) {
      await new Promise((r) => setTimeout(r, 300 + round * 150));
      terminated += await terminateAll();
      assert.ok(node.alive(), `the node exited on an idle round: ${node.output().slice(-1500)}`);
    }
    t.diagnostic(
      `${answers.accepted} accepted, ${answers.refused} refused (503), slowest answer ${slowest} ms, ${terminated} connections terminated in 20 rounds`,
    );
    assert.ok(answers.accepted > 20, 'mail was accepted between the rounds');

    const missing = await undelivered(rig.mx, accepted, 60_000);
    assert.deepEqual(missing, [], `${missing.length} of ${accepted.length} accepted messages never arrived`);

    // And it still answers at once afterwards, on fresh connections.
    const after = await send(node.url, rig.key, 99_999);
    assert.equal(after.status, 200, after.text);
    assert.ok(node.alive());
    assert.equal(await node.stop(), 0, node.output().slice(-1500));
  });
});

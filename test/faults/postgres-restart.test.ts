import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { request } from '../helpers/http.js';
import type { Served } from '../helpers/cli.js';
import { faultRig, postgresUnavailable, send, smtpSend, undelivered, type FaultRig } from './fixture.js';

/**
 * PostgreSQL stopped for a few seconds (a restart for a minor upgrade, a failover), under two
 * nodes sharing it. Stops and starts the server itself (`pg_ctlcluster`): .ci/run runs the
 * fault tests alone, after the suites. MAILSVC_FAULTS_PG_CLUSTER names the cluster ("15 main"
 * by default: the Debian cluster behind 127.0.0.1:5432).
 */
const cluster = (
  process.env.MAILSVC_FAULTS_PG_CLUSTER ??
  `${existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql')[0] : '15'} main`
).split(' ');
const skip = await (async () => {
  if (process.getuid?.() !== 0) return 'stopping PostgreSQL needs root';
  if (!existsSync('/usr/bin/pg_ctlcluster')) return 'pg_ctlcluster is not installed (Debian postgresql-common)';
  return postgresUnavailable();
})();

const pgctl = (action: 'stop' | 'start') =>
  execFileSync(
    'pg_ctlcluster',
    ['--skip-systemctl-redirect', ...cluster, action, ...(action === 'stop' ? ['-m', 'fast'] : [])],
    { stdio: 'pipe' },
  );

/** Runs `call`, asserting it answers within `ms`; returns its answer and how long it took. */
async function prompt<T>(call: () => Promise<T>, ms: number, what: string): Promise<{ value: T; took: number }> {
  const started = Date.now();
  const value = await call();
  const took = Date.now() - started;
  assert.ok(took < ms, `${what} took ${took} ms (at most ${ms})`);
  return { value, took };
}

describe('PostgreSQL stopped and started under two nodes', { skip: skip ?? false }, () => {
  let rig: FaultRig;
  let nodes: Served[];

  before(async () => {
    rig = await faultRig({ database: 'postgres' });
    nodes = [await rig.serve(), await rig.serve()];
  });
  after(async () => {
    // Whatever happened, the server is left running for what comes after.
    try {
      pgctl('start');
    } catch {
      // already running
    }
    await rig?.close();
  });

  it('answers promptly and clearly while it is down, readyz follows, mail flows again within seconds', async (t) => {
    const accepted: string[] = [];
    for (const [i, node] of nodes.entries()) {
      const res = await send(node.url, rig.key, i);
      assert.equal(res.status, 200, res.text);
      accepted.push(res.body.id);
      assert.equal((await request(node.url, 'GET', '/readyz')).status, 200);
    }

    pgctl('stop');
    let slowest = 0;
    try {
      const until = Date.now() + 4000;
      let rounds = 0;
      while (Date.now() < until) {
        for (const node of nodes) {
          const refused = await prompt(
            () => send(node.url, rig.key, 100 + rounds),
            2000,
            'POST /v1/emails with the database down',
          );
          slowest = Math.max(slowest, refused.took);
          assert.equal(refused.value.status, 503, refused.value.text);
          assert.equal(refused.value.body.error.code, 'storage_unavailable');
          assert.match(refused.value.body.error.message, /database is unreachable/);
          assert.equal(refused.value.body.error.retryable, true);
          assert.match(refused.value.headers.get('retry-after') ?? '', /^\d+$/);
          const legacy = await prompt(
            () => request(node.url, 'GET', '/api/v1/emails', { key: rig.key }),
            2000,
            'a legacy read',
          );
          assert.equal(legacy.value.status, 503, legacy.value.text);
          assert.equal(legacy.value.body.code, 'SERVICE_UNAVAILABLE');
          const ready = await prompt(() => request(node.url, 'GET', '/readyz'), 2000, 'GET /readyz');
          assert.equal(ready.value.status, 503);
          assert.notEqual(ready.value.body.database, 'reachable');
          assert.equal((await request(node.url, 'GET', '/healthz')).status, 200, 'alive, if not ready');
        }
        rounds++;
      }
      // SMTP: a fault is 451 4.3.0 at AUTH, never 535 (the key is right).
      const smtp = await prompt(() => smtpSend(nodes[0]!.smtpPort, rig.key, 1), 4000, 'an SMTP submission');
      assert.equal(smtp.value.accepted, false);
      assert.equal(smtp.value.code, 451, smtp.value.response);
      assert.match(smtp.value.response, /^451 4\.3\.0 /);
      for (const node of nodes) assert.ok(node.alive(), node.output().slice(-1500));
    } finally {
      pgctl('start');
    }
    const back = Date.now();

    // Within seconds: both nodes ready, accepting, and delivering what they accepted before and after.
    for (const node of nodes) {
      let res = await send(node.url, rig.key, 900);
      while (res.status !== 200 && Date.now() - back < 15_000) {
        await new Promise((r) => setTimeout(r, 200));
        res = await send(node.url, rig.key, 900);
      }
      assert.equal(res.status, 200, res.text);
      accepted.push(res.body.id);
      assert.equal((await request(node.url, 'GET', '/readyz')).status, 200);
    }
    const acceptedAfter = Date.now() - back;
    const smtp = await smtpSend(nodes[1]!.smtpPort, rig.key, 2);
    assert.equal(smtp.accepted, true, smtp.response);
    assert.deepEqual(await undelivered(rig.mx, accepted, 30_000), []);
    t.diagnostic(
      `slowest refusal while down ${slowest} ms; both nodes accepting ${acceptedAfter} ms after PostgreSQL started, delivered ${Date.now() - back} ms after`,
    );
    for (const node of nodes) {
      assert.ok(node.alive());
      assert.equal(await node.stop(), 0, node.output().slice(-1500));
    }
  });
});

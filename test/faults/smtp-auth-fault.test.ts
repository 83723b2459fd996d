import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { request } from '../helpers/http.js';
import { faultRig, postgresUnavailable, smtpSend, type FaultRig } from './fixture.js';

/**
 * SMTP AUTH while the database cannot answer the key's look-up, and only that: another
 * session holds the credentials table locked past the node's statement timeout (as a
 * migration or a long administrative statement would), while the table of the failed-login
 * counters stays free. The client is told to retry (451 4.3.0), never that its key is wrong
 * (535), and the failures do not count towards its lockout (20 a minute): the right key works
 * at once when the lock goes.
 */
const unavailable = await postgresUnavailable();

describe('SMTP AUTH during a database fault', { skip: unavailable ?? false }, () => {
  let rig: FaultRig;

  before(async () => {
    rig = await faultRig({
      database: 'postgres',
      env: { MAILSVC_DATABASE_STATEMENT_TIMEOUT_MS: '300', MAILSVC_DELIVERY_ENABLED: 'false' },
    });
  });
  after(async () => {
    await rig?.close();
  });

  it('answers 451 4.3.0, not 535, and does not lock the client out', async () => {
    const node = await rig.serve();
    // A key this node has never looked up: not in its row cache, so AUTH must read the table.
    const created = await request(node.url, 'POST', '/v1/api-keys', { key: rig.key, body: { name: 'smtp' } });
    assert.equal(created.status, 201, created.text);
    const key: string = created.body.token;

    const admin = new pg.Client({ connectionString: rig.database!.url });
    admin.on('error', () => {});
    await admin.connect();
    await admin.query('begin');
    await admin.query('lock table credentials in access exclusive mode');
    try {
      // More attempts than the lockout allows (20 a minute per client address).
      for (let i = 0; i < 25; i++) {
        const a = await smtpSend(node.smtpPort, key, i);
        assert.equal(a.accepted, false);
        assert.notEqual(a.code, 535, `a database fault is not a wrong key: ${a.response}`);
        assert.match(a.response, /^451 4\.3\.0 /, a.response);
        assert.match(a.command ?? '', /^AUTH/);
      }
      // A wrong key is refused as such: the look-up by hash fails the same way, so it too can only be "retry".
    } finally {
      await admin.query('rollback');
      await admin.end();
    }
    const after = await smtpSend(node.smtpPort, key, 99);
    assert.equal(after.accepted, true, `the right key works once the database does (no lockout): ${after.response}`);
    // And a wrong key still counts: 20 refusals, then the lockout (454).
    const codes: Array<number | null> = [];
    for (let i = 0; i < 21; i++) codes.push((await smtpSend(node.smtpPort, `${key.slice(0, -4)}XXXX`, i)).code);
    assert.deepEqual(codes.slice(0, 20), Array(20).fill(535));
    assert.equal(codes[20], 454);
    assert.ok(node.alive());
    assert.equal(await node.stop(), 0, node.output().slice(-1500));
  });
});

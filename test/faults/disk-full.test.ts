import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from '../helpers/http.js';
import { acceptedOrRefused, faultRig, send, smtpSend, undelivered, type FaultRig } from './fixture.js';

/**
 * The disk under an SQLite node fills up. A 48 MB tmpfs holds the database and the data
 * directory; a file fills it. First with the reserve off (storage.minFreeBytes 0), so SQLite
 * itself meets ENOSPC mid-write; then with a reserve, which refuses new mail before SQLite
 * ever does. Each time: clear refusals on every surface (503 storage_full, SMTP 452 4.3.1,
 * never 500 or 535), the process stays up, and once the file is removed everything accepted
 * before is delivered and new mail is accepted, with no restart.
 */
const why = (() => {
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  if (process.platform !== 'linux') return 'tmpfs is Linux';
  return null;
})();

/** Writes zeros into `file` until the file system refuses (ENOSPC); returns the bytes written. */
function fill(file: string): number {
  const fd = openSync(file, 'w');
  let written = 0;
  try {
    for (const size of [1024 * 1024, 64 * 1024, 4096]) {
      const chunk = Buffer.alloc(size);
      for (let i = 0; i < 100_000; i++) {
        try {
          written += writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}

describe('a full disk under an SQLite node', { skip: why ?? false }, () => {
  let mountPoint: string;
  let rig: FaultRig;
  let filler: string;
  const mailed: string[] = [];
  const smtpAccepted: string[] = [];

  before(async () => {
    mountPoint = mkdtempSync(join(tmpdir(), 'mailsvc-disk-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', mountPoint]);
    mkdirSync(join(mountPoint, 'data'));
    filler = join(mountPoint, 'filler');
    rig = await faultRig({
      database: { sqliteFile: join(mountPoint, 'mailsvc.db'), dataDir: join(mountPoint, 'data') },
      env: { MAILSVC_STORAGE_MIN_FREE_BYTES: '0' },
    });
  });
  after(async () => {
    await rig?.close();
    try {
      execFileSync('umount', [mountPoint]);
    } catch {
      execFileSync('umount', ['-l', mountPoint]);
    }
    rmSync(mountPoint, { recursive: true, force: true });
  });

  it('SQLite meets ENOSPC: 503 storage_full and SMTP 452 (not 500, not 535), up throughout, nothing lost', async (t) => {
    const node = await rig.serve();
    // The recipient's server defers everything for now: accepted mail stays queued through the fault.
    rig.mx.hooks = { onData: () => ({ code: 451, text: '4.3.0 Come back later' }) };
    for (let i = 0; i < 10; i++) {
      const res = await send(node.url, rig.key, mailed.length);
      assert.equal(res.status, 200, res.text);
      mailed.push(res.body.id);
    }
    t.diagnostic(`filled the disk with ${(fill(filler) / 1024 / 1024).toFixed(1)} MB`);

    // Messages large enough that the database must grow to hold them; a few may still fit in
    // pages SQLite had already allocated (accepted then, and delivered later like the rest).
    const big = `<p>${'x'.repeat(200_000)}</p>`;
    let refused: Awaited<ReturnType<typeof send>> | null = null;
    for (let i = 0; i < 200 && !refused; i++) {
      const res = await request(node.url, 'POST', '/v1/emails', {
        key: rig.key,
        body: { from: 'Shop <hello@sender.test>', to: `r${mailed.length}@dest.test`, subject: 'Big', html: big },
      });
      if (acceptedOrRefused(res, node)) mailed.push(res.body.id);
      else refused = res;
    }
    assert.ok(refused, 'a full disk refuses new mail');
    assert.equal(refused.body.error.code, 'storage_full');
    assert.match(refused.body.error.message, /storage is full.*disk space/);
    const legacy = await request(node.url, 'POST', '/api/v1/send', {
      key: rig.key,
      body: { from: 'hello@sender.test', to: 'l@dest.test', subject: 'Big', html: big },
    });
    assert.equal(legacy.status, 503, legacy.text);
    assert.equal(legacy.body.code, 'SERVICE_UNAVAILABLE');

    // SMTP: AUTH succeeds (the key is right), the message is refused as the disk's fault.
    const smtp = await smtpSend(node.smtpPort, rig.key, 0, big);
    assert.equal(smtp.accepted, false);
    assert.notEqual(smtp.code, 535, `a full disk is not a wrong key: ${smtp.response}`);
    assert.equal(smtp.code, 452, smtp.response);
    assert.match(smtp.response, /^452 4\.3\.1 /);

    assert.ok(node.alive(), node.output().slice(-1500));
    const health = await request(node.url, 'GET', '/healthz');
    assert.equal(health.status, 200);

    // Space comes back: no restart; new mail is accepted on both surfaces, everything is delivered.
    rmSync(filler);
    rig.mx.hooks = {};
    let again = await send(node.url, rig.key, mailed.length);
    for (let i = 0; i < 50 && again.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 200));
      again = await send(node.url, rig.key, mailed.length);
    }
    assert.equal(again.status, 200, again.text);
    mailed.push(again.body.id);
    const smtpAgain = await smtpSend(node.smtpPort, rig.key, 1);
    assert.equal(smtpAgain.accepted, true, smtpAgain.response);
    smtpAccepted.push('s1@dest.test');
    const missing = await undelivered(rig.mx, mailed, 60_000);
    assert.deepEqual(missing, [], `${missing.length} of ${mailed.length} accepted messages never arrived`);
    assert.ok(
      rig.mx.messages.some((m) => m.to.includes('s1@dest.test')),
      'the message sent over SMTP after the fault arrived',
    );
    assert.equal(await node.stop(), 0, node.output().slice(-1500));
  });

  it('with a reserve (storage.minFreeBytes), mail is refused before SQLite sees ENOSPC; reads, readyz and recovery', async () => {
    // Leave 4 MB free, under a reserve of 8 MB.
    const node = await rig.serve({ MAILSVC_STORAGE_MIN_FREE_BYTES: String(8 * 1024 * 1024) });
    const ready = await request(node.url, 'GET', '/readyz');
    assert.equal(ready.status, 200, ready.text);
    rig.mx.hooks = { onData: () => ({ code: 451, text: '4.3.0 Come back later' }) };
    const queued = await send(node.url, rig.key, 5000);
    assert.equal(queued.status, 200, queued.text);
    fill(filler);
    rmSync(filler);
    const hole = openSync(filler, 'w');
    // Everything but 4 MB: below the reserve, with room to spare for SQLite.
    const size =
      Number(execFileSync('df', ['--output=avail', '-B1', mountPoint]).toString().split('\n')[1]) - 4 * 1024 * 1024;
    writeSync(hole, Buffer.alloc(size));
    closeSync(hole);
    await new Promise((r) => setTimeout(r, 1100)); // the reading is cached for a second

    const refused = await send(node.url, rig.key, 5001);
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.body.error.code, 'storage_full');
    assert.match(refused.body.error.message, /below its reserve.*storage\.minFreeBytes/);
    assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/);
    const smtp = await smtpSend(node.smtpPort, rig.key, 5002);
    assert.equal(smtp.code, 452, smtp.response);
    assert.equal(smtp.command, 'MAIL FROM', 'refused before the message is sent');
    const notReady = await request(node.url, 'GET', '/readyz');
    assert.equal(notReady.status, 503);
    assert.deepEqual(notReady.body, { status: 'unavailable', database: 'reachable', storage: 'low' });
    // Reads go on.
    const read = await request(node.url, 'GET', `/v1/emails/${queued.body.id}`, { key: rig.key });
    assert.equal(read.status, 200, read.text);
    const metrics = await request(node.url, 'GET', '/metrics');
    assert.match(metrics.text, /^mailsvc_storage_free_bytes\{path="[^"]+"\} \d+/m);
    assert.match(
      metrics.text,
      new RegExp(`^mailsvc_storage_min_free_bytes\\{path="[^"]+"\\} ${8 * 1024 * 1024}$`, 'm'),
    );

    // Delivery of what is queued goes on below the reserve.
    rig.mx.hooks = {};
    assert.deepEqual(await undelivered(rig.mx, [queued.body.id], 30_000), []);
    rmSync(filler);
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await request(node.url, 'GET', '/readyz')).status, 200);
    const accepted = await send(node.url, rig.key, 5003);
    assert.equal(accepted.status, 200, accepted.text);
    assert.deepEqual(await undelivered(rig.mx, [accepted.body.id], 30_000), []);
    assert.ok(node.alive());
    assert.equal(await node.stop(), 0);
  });
});

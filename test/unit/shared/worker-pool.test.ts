import { pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SIGN_TASK, poolSigner } from '../../../src/delivery/dkim-signer.js';
import { COMPOSE_TASK, poolComposer, type ComposeInput } from '../../../src/messages/compose.js';
import { createWorkerPool } from '../../../src/shared/worker-pool.js';
import { repoPath } from '../../../scripts/repo-root.js';

const input: ComposeInput = {
  from: { name: 'Zoë Shop', address: 'orders@shop.test' },
  to: [{ name: '', address: 'ann@dest.test' }],
  cc: [],
  replyTo: [],
  subject: 'Ihre Bestellung – danke',
  html: '<p>Hello <b>Ann</b></p><img src="cid:logo">',
  headers: { 'X-Entity-Ref-ID': 'r-1' },
  attachments: [
    {
      filename: 'a.bin',
      content: Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251)),
      contentType: 'application/octet-stream',
    },
    { filename: 'logo.png', content: Buffer.from('png bytes'), contentType: 'image/png', cid: 'logo' },
  ],
  messageId: '<m-1@shop.test>',
  date: new Date('2026-11-23T10:00:00Z'),
};

/** MIME boundaries are random: compare messages with them replaced. */
const normalise = (raw: Buffer) => {
  const text = raw.toString('latin1');
  const boundaries = [...text.matchAll(/boundary="([^"]+)"/g)].map((m) => m[1]!);
  return boundaries.reduce((t, b, i) => t.split(b).join(`BOUNDARY${i}`), text);
};

describe('worker pool: composing and signing off the event loop', () => {
  const inline = createWorkerPool({ threads: 0, tasks: { compose: COMPOSE_TASK, sign: SIGN_TASK } });
  const threaded = createWorkerPool({ threads: 2, tasks: { compose: COMPOSE_TASK, sign: SIGN_TASK } });
  after(() => threaded.close());

  it('a worker thread composes the same message as the main thread, attachments byte for byte', async () => {
    const [a, b] = await Promise.all([poolComposer(inline)(input), poolComposer(threaded)(input)]);
    assert.ok(Buffer.isBuffer(b));
    assert.equal(normalise(b), normalise(a));
    const text = b.toString('latin1');
    assert.match(text, /^Subject: =\?UTF-8\?/m, 'the subject is RFC 2047 encoded');
    assert.match(text, /Hello \*?ANN\*?|Hello Ann/i, 'the text part is derived from the HTML');
    assert.ok(
      text.includes(input.attachments[0]!.content.subarray(0, 57).toString('base64')),
      'attachment bytes in the message',
    );
  });

  it('many tasks in flight on several threads each get their own answer', async () => {
    const subjects = Array.from({ length: 40 }, (_, i) => `Message ${i}`);
    const composed = await Promise.all(
      subjects.map((subject) => poolComposer(threaded)({ ...input, attachments: [], subject })),
    );
    composed.forEach((raw, i) => assert.match(raw.toString('latin1'), new RegExp(`^Subject: Message ${i}\\r$`, 'm')));
  });

  it('a failing task rejects its caller with the error, and the pool goes on working', async () => {
    const signer = poolSigner(threaded);
    await assert.rejects(
      signer.sign(
        Buffer.from('Subject: x\r\n\r\nbody'),
        { domain: 'shop.test', selector: 's1', privateKey: 'not a key' },
        Date.now(),
      ),
      /^Error: DKIM signing failed: /,
    );
    const raw = await poolComposer(threaded)({ ...input, attachments: [] });
    assert.match(raw.toString('latin1'), /^Message-ID: <m-1@shop\.test>\r$/m);
  });

  it('a thread that dies (exits, or throws outside a task) fails only its tasks and is replaced; the process goes on', async () => {
    // A task that can end its own thread, the way a native crash or an out-of-memory would.
    const pool = createWorkerPool({
      threads: 1,
      tasks: {
        echo: `(require) => async (request) => {
          if (request === 'exit') process.exit(3);
          if (request === 'throw') return new Promise(() => setImmediate(() => { throw new Error('thrown outside any task'); }));
          return { value: request };
        }`,
      },
    });
    try {
      assert.equal(await pool.run('echo', 'before'), 'before');
      await assert.rejects(pool.run('echo', 'exit'), /worker thread exited with code 3/);
      assert.equal(await pool.run('echo', 'after an exit'), 'after an exit');
      // The task in flight when its thread died fails: it does not hang.
      await assert.rejects(pool.run('echo', 'throw'), /thrown outside any task/);
      assert.equal(await pool.run('echo', 'after an uncaught error'), 'after an uncaught error');
    } finally {
      await pool.close();
    }
  });

  it("starts threads as tasks need them, up to its size, each sized as asked; reports each one's memory", async () => {
    const pool = createWorkerPool({
      threads: 2,
      tasks: { compose: COMPOSE_TASK },
      size: { youngGenerationMb: 6, heapMb: 64 },
    });
    try {
      assert.deepEqual(await pool.memory(), [], 'no thread before the first task');
      await poolComposer(pool)(input);
      await poolComposer(pool)(input);
      assert.equal((await pool.memory()).length, 1, 'one at a time: one thread');
      await Promise.all(Array.from({ length: 10 }, () => poolComposer(pool)(input)));
      const memory = await pool.memory();
      assert.equal(memory.length, 2, 'busy: a second thread, and no more');
      for (const m of memory) {
        assert.ok(
          m.heapUsed > 0 && m.heapUsed <= m.heapTotal && m.young > 0 && m.heapTotal < m.heapLimit,
          JSON.stringify(m),
        );
        assert.equal(m.heapLimit, (64 + 6) * 1024 * 1024, 'old generation and young generation as asked');
        assert.ok(m.young <= 4 * 1024 * 1024, 'two semi-spaces of a third each');
        assert.ok(m.external >= m.arrayBuffers);
      }
      assert.deepEqual(await inline.memory(), []);
    } finally {
      await pool.close();
    }
  });

  it("sizes its threads as asked even when the process was started with V8 sizes of its own (the launcher's)", () => {
    const script = `
      import { createWorkerPool } from ${JSON.stringify(pathToFileURL(repoPath('src/shared/worker-pool.ts')).href)};
      import { getHeapStatistics } from 'node:v8';
      const pool = createWorkerPool({ threads: 1, tasks: { echo: '(require) => async (r) => ({ value: r })' }, size: { youngGenerationMb: 6, heapMb: 64 } });
      await pool.run('echo', 1);
      const [thread] = await pool.memory();
      console.log(JSON.stringify({ main: getHeapStatistics().heap_size_limit, thread: thread.heapLimit }));
      await pool.close();`;
    // A file, not -e: a thread inherits --input-type, and the pool's threads run CommonJS.
    const file = join(mkdtempSync(join(tmpdir(), 'pool-')), 'sized.mjs');
    writeFileSync(file, script);
    const out = execFileSync(
      process.execPath,
      ['--max-semi-space-size=16', '--max-old-space-size=300', '--import', 'tsx', file],
      { encoding: 'utf8' },
    );
    const { main, thread } = JSON.parse(out) as { main: number; thread: number };
    assert.equal(main, (300 + 3 * 16) * 2 ** 20, 'the main isolate keeps the sizes it started with');
    assert.equal(thread, (64 + 6) * 2 ** 20, 'the thread has its own');
  });

  it('refuses unknown tasks and work after close', async () => {
    const pool = createWorkerPool({ threads: 1, tasks: { compose: COMPOSE_TASK } });
    await assert.rejects(pool.run('nope', {}), /unknown task nope/);
    await pool.close();
    await assert.rejects(pool.run('compose', input), /closed/);
  });
});

import assert from 'node:assert/strict';
import { createWriteStream, openAsBlob } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Resend } from 'resend';
import { eventually } from '../helpers/delivery.js';
import { testPostgresUrl } from '../helpers/postgres.js';
import { ok } from '../helpers/resend.js';
import { startServeRig, type ServeRig } from '../helpers/serve-rig.js';

/**
 * Contact imports are jobs of the worker kernel: two `mailsvc serve` processes on one
 * PostgreSQL database, each with its own data directory (the upload is kept in the database,
 * not beside the node that took it). kill -9 of the node running a large import mid-way: the
 * other takes it over once its lease runs out and finishes it from the last committed batch,
 * every row there exactly once.
 */
describe(
  'a contact import taken over by another node',
  { skip: testPostgresUrl() ? false : 'set MAILSVC_TEST_POSTGRES to run' },
  () => {
    let rig: ServeRig;

    before(async () => {
      rig = await startServeRig({ name: 'import' });
    });
    after(() => rig?.close());

    const importRow = (id: string) =>
      rig.runtime.store.db
        .selectFrom('contact_imports')
        .select(['status', 'lease_owner', 'cursor_row', 'total'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();

    it(
      'kill -9 of the node running a large import: the other finishes it, every row once',
      { timeout: 600_000 },
      async () => {
        const rows = 20_000;
        const file = join(rig.dir, 'contacts.csv');
        const out = createWriteStream(file);
        out.write('email,first_name\n');
        for (let i = 0; i < rows; i++) {
          if (!out.write(`node${i}@import.test,N${i}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
        }
        await new Promise<void>((r) => out.end(() => r()));

        const a = await rig.serve('a');
        const b = await rig.serve('b');
        const id = ok(
          await new Resend(rig.key, { baseUrl: a.url }).contacts.imports.create({
            file: await openAsBlob(file, { type: 'text/csv' }),
          }),
          'create',
        ).id;

        // Whichever node claimed it (the one it was uploaded to is woken first; the other polls): its owner id carries its pid.
        let row = await importRow(id);
        for (;;) {
          row = await importRow(id);
          assert.notEqual(row.status, 'completed', 'the import finished before the kill: make the file larger');
          if (row.lease_owner && Number(row.total) >= 2000) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        const [running, survivor] = row.lease_owner.split(':')[1] === String(a.child.pid) ? [a, b] : [b, a];
        assert.equal(row.lease_owner.split(':')[1], String(running.child.pid));
        await running.kill();
        const atKill = await importRow(id);
        assert.equal(atKill.status, 'in_progress');
        assert.ok(Number(atKill.cursor_row) < rows);

        const resend = new Resend(rig.key, { baseUrl: survivor.url });
        const done = await eventually(
          async () => {
            const got = ok(await resend.contacts.imports.get(id), 'get');
            return got.status === 'completed' || got.status === 'failed' ? got : undefined;
          },
          480_000,
          'the import finished on the survivor',
        );
        assert.equal(done.status, 'completed');
        // Resumed after the dead node's last committed batch: nothing read twice, nothing missed.
        assert.deepEqual(done.counts, { total: rows, created: rows, updated: 0, skipped: 0, failed: 0 });
        const finished = await importRow(id);
        assert.equal(finished.lease_owner, null);
        assert.equal(finished.status, 'completed');
        const n = await rig.runtime.store.db
          .selectFrom('subscribers')
          .where('workspace_id', '=', rig.workspaceId)
          .where('email_key', 'like', 'node%@import.test')
          .select((eb) => [
            eb.fn.countAll<string>().as('n'),
            eb.fn.count<string>('email_key').distinct().as('distinct'),
          ])
          .executeTakeFirstOrThrow();
        assert.equal(Number(n.n), rows, 'one subscriber per row');
        assert.equal(Number(n.distinct), rows);
        assert.equal(
          (await rig.runtime.services.subscribers.get(rig.workspaceId, `node${rows - 1}@import.test`)).first_name,
          `N${rows - 1}`,
        );
        // The file is gone from the database once the import is done.
        const chunks = await rig.runtime.store.db
          .selectFrom('contact_import_files')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('import_id', '=', id)
          .executeTakeFirstOrThrow();
        assert.equal(Number(chunks.n), 0);
        assert.ok(survivor.alive());
      },
    );
  },
);

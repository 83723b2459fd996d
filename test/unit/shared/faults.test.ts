import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SQLite } from '../../../src/store/infra/sqlite-driver.js';
import { runCli } from '../../../src/cli/program.js';
import { errorReply } from '../../../src/intake/smtp/reply.js';
import { legacyBody, versionedBody } from '../../../src/intake/http/middleware/render-errors.js';
import { AppError, classifyFault, isFault, toAppError } from '../../../src/shared/errors.js';
import { faultOf, type FaultKind } from '../../../src/shared/faults.js';
import { watchFreeSpace, reserveFor } from '../../../src/store/infra/free-space.js';

/** An error as its library raises it: a code, and (node-postgres) a severity. */
const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code, severity: 'FATAL' });
const sysError = (code: string) => Object.assign(new Error(`${code} something`), { code, errno: -1, syscall: 'write' });
const sqliteError = (code: string) => Object.assign(new Error('sqlite says'), { code });

describe('faults: which errors are the machine failing', () => {
  const table: Array<[string, unknown, boolean, FaultKind | null]> = [
    // [what, error, from the database driver, kind]
    ['PostgreSQL admin_shutdown (pg_terminate_backend, a restart)', pgError('57P01'), true, 'database_unreachable'],
    ['PostgreSQL crash_shutdown', pgError('57P02'), true, 'database_unreachable'],
    ['PostgreSQL cannot_connect_now (starting up)', pgError('57P03'), true, 'database_unreachable'],
    ['PostgreSQL connection_exception', pgError('08006'), true, 'database_unreachable'],
    ['PostgreSQL connection_failure, not from the driver', pgError('08001'), false, 'database_unreachable'],
    ['PostgreSQL too_many_connections', pgError('53300'), true, 'database_unreachable'],
    ['PostgreSQL disk_full', pgError('53100'), true, 'disk_full'],
    ['PostgreSQL io_error', pgError('58030'), true, 'disk_failing'],
    ['PostgreSQL statement timeout', pgError('57014'), true, 'database_busy'],
    ["PostgreSQL unique_violation is the request's", pgError('23505'), true, null],
    ['PostgreSQL syntax error is a bug', pgError('42601'), true, null],
    [
      'a five-letter code on something not from PostgreSQL',
      Object.assign(new Error('x'), { code: '57P01' }),
      false,
      null,
    ],
    [
      'node-postgres: connection terminated',
      new Error('Connection terminated unexpectedly'),
      true,
      'database_unreachable',
    ],
    [
      'node-postgres: client not queryable',
      new Error('Client has encountered a connection error and is not queryable'),
      true,
      'database_unreachable',
    ],
    ['pg-pool: acquire timeout', new Error('timeout exceeded when trying to connect'), true, 'database_unreachable'],
    ['connection refused from the driver', sysError('ECONNREFUSED'), true, 'database_unreachable'],
    ['connection refused elsewhere (an attachment URL) is not the database', sysError('ECONNREFUSED'), false, null],
    ['connection reset from the driver', sysError('ECONNRESET'), true, 'database_unreachable'],
    ['ENOSPC', sysError('ENOSPC'), false, 'disk_full'],
    ['EDQUOT', sysError('EDQUOT'), false, 'disk_full'],
    ['EIO', sysError('EIO'), false, 'disk_failing'],
    ['EROFS', sysError('EROFS'), false, 'disk_failing'],
    ['EACCES is a configuration mistake, not a fault', sysError('EACCES'), false, null],
    ['SQLITE_FULL', sqliteError('SQLITE_FULL'), true, 'disk_full'],
    ['SQLITE_IOERR_WRITE', sqliteError('SQLITE_IOERR_WRITE'), true, 'disk_failing'],
    ['SQLITE_IOERR', sqliteError('SQLITE_IOERR'), false, 'disk_failing'],
    ['SQLITE_READONLY', sqliteError('SQLITE_READONLY'), true, 'disk_failing'],
    ['SQLITE_BUSY past the busy timeout', sqliteError('SQLITE_BUSY'), true, 'database_busy'],
    ['SQLITE_BUSY_SNAPSHOT', sqliteError('SQLITE_BUSY_SNAPSHOT'), true, 'database_busy'],
    ["SQLITE_CONSTRAINT_UNIQUE is the request's", sqliteError('SQLITE_CONSTRAINT_UNIQUE'), true, null],
    ['a fault wrapped as a cause', new Error('outer', { cause: sysError('ENOSPC') }), false, 'disk_full'],
    [
      'every address refused (AggregateError)',
      new AggregateError([sysError('ECONNREFUSED'), sysError('ECONNREFUSED')], 'refused'),
      true,
      'database_unreachable',
    ],
    ['a plain bug', new TypeError('x is undefined'), true, null],
    ['not an error at all', 'a string', true, null],
  ];
  for (const [what, err, fromDatabase, kind] of table) {
    it(what, () => assert.equal(faultOf(err, fromDatabase), kind));
  }

  it('a real SQLite error on a full disk is SQLITE_FULL, and classified', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-faults-'));
    try {
      const db = new SQLite(join(dir, 'small.db'));
      db.pragma('max_page_count = 8');
      db.exec('create table t (v blob)');
      let caught: unknown;
      try {
        for (let i = 0; i < 100; i++) db.prepare('insert into t values (?)').run(Buffer.alloc(4096));
      } catch (err) {
        caught = err;
      }
      db.close();
      assert.equal((caught as { code?: string }).code, 'SQLITE_FULL');
      assert.equal(classifyFault(caught, true)?.code, 'storage_full');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('faults: each surface renders them as a temporary refusal', () => {
  const cases: Array<[FaultKind, unknown, { code: string; smtp: number; enhanced: string }]> = [
    ['disk_full', sysError('ENOSPC'), { code: 'storage_full', smtp: 452, enhanced: '4.3.1' }],
    ['disk_failing', sqliteError('SQLITE_IOERR_WRITE'), { code: 'storage_unavailable', smtp: 451, enhanced: '4.3.0' }],
    ['database_unreachable', pgError('57P01'), { code: 'storage_unavailable', smtp: 451, enhanced: '4.3.0' }],
    ['database_busy', sqliteError('SQLITE_BUSY'), { code: 'storage_unavailable', smtp: 451, enhanced: '4.3.0' }],
  ];
  for (const [kind, raw, expected] of cases) {
    it(`${kind}: versioned 503 with Retry-After, legacy 503 SERVICE_UNAVAILABLE, SMTP ${expected.smtp} ${expected.enhanced}`, () => {
      const err = toAppError(raw);
      assert.equal(err.code, expected.code);
      assert.equal(err.status, 503);
      assert.ok(err.retryAfter !== undefined && err.retryAfter > 0);
      const versioned = versionedBody('req_1', err);
      assert.deepEqual(versioned.error, { code: expected.code, message: err.message, retryable: true });
      assert.equal(versioned.statusCode, 503);
      assert.match(versioned.error.message, kind.startsWith('disk') ? /disk|storage/ : /database/);
      assert.deepEqual(legacyBody(err), { success: false, error: err.message, code: 'SERVICE_UNAVAILABLE' });
      const smtp = errorReply(raw);
      assert.equal(smtp.responseCode, expected.smtp);
      assert.ok(smtp.message.startsWith(`${expected.enhanced} `), smtp.message);
      assert.ok(isFault(raw));
    });
  }

  it('an error that is not a fault stays a 500 with no detail, and SMTP 451 4.3.0 (never 535 or 550)', () => {
    const err = toAppError(new TypeError('boom'));
    assert.equal(err.code, 'internal_error');
    assert.equal(err.status, 500);
    assert.equal(errorReply(new TypeError('boom')).responseCode, 451);
    assert.equal(isFault(new TypeError('boom')), false);
  });

  it("a request's own error keeps its reply on SMTP", () => {
    const refused = errorReply(new AppError('forbidden', 'not your domain'));
    assert.equal(refused.responseCode, 550);
    assert.equal(refused.message, '5.7.1 not your domain');
  });

  it('the CLI: one line on stderr and exit 75 (EX_TEMPFAIL) when the database cannot be reached', async () => {
    const out: string[] = [];
    const err: string[] = [];
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    const code = await runCli(['keys', 'list'], {
      stdout: (t) => out.push(t),
      stderr: (t) => err.push(t),
      env: { MAILSVC_DATABASE: 'postgres://postgres@127.0.0.1:1/none', MAILSVC_DATABASE_ACQUIRE_TIMEOUT_MS: '2000' },
      stderrIsTTY: false,
      stdoutIsTTY: false,
      stdinIsTTY: false,
      ask: async () => '',
      columns: 80,
    });
    assert.equal(code, 75);
    const text = err.join('');
    assert.equal(text.trim().split('\n').length, 1, text);
    assert.match(text, /^mailsvc: the database or its disk failed \(.*ECONNREFUSED.*\); try again later\n$/);
    assert.equal(out.join(''), '');
  });
});

describe('the disk reserve (storage.minFreeBytes)', () => {
  it('"auto" is 256 MB or 5% of the file system, whichever is smaller; a number is itself', () => {
    assert.equal(reserveFor('auto', 100 * 1024 ** 3), 256 * 1024 ** 2);
    assert.equal(reserveFor('auto', 1024 ** 3), Math.floor(1024 ** 3 * 0.05));
    assert.equal(reserveFor(0, 1024 ** 3), 0);
    assert.equal(reserveFor(12345, 1024 ** 3), 12345);
  });

  it('refuses at, and only below, the reserve; re-reads at most once a second', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-space-'));
    try {
      let now = 0;
      const probe = watchFreeSpace([dir], 0, () => now);
      const free = probe.read()[0]!.freeBytes;
      assert.ok(free > 0);
      // A reserve just under, at, and just over what is free (the disk moves a little meanwhile: a margin of 1 MB).
      const under = watchFreeSpace([dir], free - 1024 * 1024, () => now);
      assert.equal(under.ok(), true);
      assert.doesNotThrow(() => under.ensure());
      const over = watchFreeSpace([dir], free + 1024 * 1024, () => now);
      assert.equal(over.ok(), false);
      assert.throws(
        () => over.ensure(),
        (err: AppError) =>
          err.code === 'storage_full' && err.status === 503 && /storage\.minFreeBytes/.test(err.message),
      );
      assert.equal(watchFreeSpace([dir], 0, () => now).ok(), true, '0 turns the check off');
      // Cached: the same reading within a second, a new one after.
      const first = probe.read();
      now += 500;
      assert.equal(probe.read(), first);
      now += 600;
      assert.notEqual(probe.read(), first);
      // Two paths on one file system are read once.
      assert.equal(watchFreeSpace([dir, join(dir, 'not-yet-made')], 'auto').read().length, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load-config.js';
import { openRuntime, type Runtime } from '../../src/runtime.js';
import { createLogger } from '../../src/shared/logger.js';
import { runCliProcess } from '../helpers/cli.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { verifyDomainWith } from '../helpers/domains.js';
import { queueEmail } from '../helpers/mail.js';
import { testDatabase, type TestDatabase } from '../helpers/postgres.js';

/**
 * Issue 22, defect 4: a node started with another `secretKey` cannot open the DKIM keys and
 * webhook secrets; it must refuse to start, with one line naming the setting, and claim nothing.
 */
describe('a node with another secretKey', () => {
  const keyA = randomBytes(32).toString('base64');
  let dir: string;
  let dns: TestDns;
  let database: TestDatabase;
  let env: Record<string, string>;
  let runtime: Runtime;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-secret-'));
    database = await testDatabase(join(dir, 'mailsvc.db'));
    dns = await startDnsServer();
    env = {
      MAILSVC_DATABASE: database.url,
      MAILSVC_DATA_DIR: dir,
      MAILSVC_HTTP_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_ENABLED: 'false',
      MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
      MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
      MAILSVC_LOG_LEVEL: 'warn',
    };
    // The database as the first node left it: a DKIM key sealed with key A, mail waiting.
    runtime = await openRuntime(loadConfig({ env: { ...env, MAILSVC_SECRET_KEY: keyA } }), {
      logger: createLogger('silent'),
    });
    const workspaceId = (await runtime.services.workspaces.ensureDefault()).id;
    await verifyDomainWith(runtime.services.domains, dns, 'sender.test', workspaceId);
    for (let i = 0; i < 5; i++)
      await queueEmail(runtime.store.db, { workspaceId, domain: 'sender.test', to: [`r${i}@dest.test`] });
  });
  after(async () => {
    await runtime.close();
    await dns.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const leased = async () =>
    Number(
      (
        await runtime.store.db
          .selectFrom('queue_items')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('lease_owner', 'is not', null)
          .executeTakeFirstOrThrow()
      ).n,
    );

  const refusedWith = async (key: string) => {
    const result = await runCliProcess(['serve'], { ...env, MAILSVC_SECRET_KEY: key });
    assert.notEqual(result.code, 0, 'serve exits non-zero');
    const lines = result.stderr.trim().split('\n');
    assert.equal(lines.length, 1, `one line on stderr: ${result.stderr}`);
    assert.match(lines[0]!, /secretKey/);
    assert.doesNotMatch(result.stderr, /HTTP API on/, 'it never listened');
    assert.equal(await leased(), 0, 'it claimed nothing');
  };

  it('refuses to start, naming secretKey, and claims nothing', async () => {
    await refusedWith(randomBytes(32).toString('base64'));
  });

  it('also when the database predates the check: the key is proven against a secret it holds', async () => {
    await runtime.store.db.deleteFrom('instance').execute();
    await refusedWith(randomBytes(32).toString('base64'));
    assert.equal(
      await runtime.store.db.selectFrom('instance').selectAll().executeTakeFirst(),
      undefined,
      'the wrong key wrote no check value',
    );
  });

  it('the CLI refuses too, and the right key still opens the database', async () => {
    const wrong = await runCliProcess(['domains', 'list'], {
      ...env,
      MAILSVC_SECRET_KEY: randomBytes(32).toString('base64'),
    });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /secretKey/);
    const right = await runCliProcess(['domains', 'list'], { ...env, MAILSVC_SECRET_KEY: keyA });
    assert.equal(right.code, 0, right.stderr);
    assert.match(right.stdout, /sender\.test/);
  });
});

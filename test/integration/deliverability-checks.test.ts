import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MTASTSPolicy } from 'mailauth';
import { runCliProcess } from '../helpers/cli.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Domain health through a real DNS server on loopback: for a domain with good records, one
 * with none and one with wrong ones, every check reports the right status, what it found and
 * what to publish; the API, the CLI (exit code) and `domain.updated` webhooks agree.
 */

const HOST = 'mta.mailsvc.test';
const SENDING_IP = '192.0.2.10';

describe('deliverability checks of sending domains', () => {
  let dns: TestDns;
  let server: TestServer;
  let receiver: WebhookReceiver;
  let key: string;
  const policies = new Map<string, MTASTSPolicy>();

  before(async () => {
    dns = await startDnsServer();
    receiver = await startWebhookReceiver();
    server = await startTestServer(
      {
        delivery: { dnsServers: [dns.server], hostname: HOST, enabled: false },
        dkim: { host: 'dkim.mailsvc.test' },
        smtp: { inbound: { enabled: true, port: 0 } },
        deliverability: { reportDomain: 'reports.mailsvc.test' },
        webhooks: { allowPrivateNetworks: true, pollInterval: 20 },
      },
      {
        // The policy file is served over HTTPS on port 443 in real life; here a fetcher plays it.
        mtaStsFetcher: async (domain) => policies.get(domain) ?? { id: false, mode: 'none' },
      },
    );
    dns.set(HOST, 'A', [SENDING_IP]);
    key = await server.key();
    const hook = await request(server.httpUrl, 'POST', '/v1/webhooks', {
      key,
      body: { url: `${receiver.url}/domains`, events: ['domain.updated'] },
    });
    assert.equal(hook.status, 201, show(hook));

    // good.example: everything right.
    await addVerifiedDomain(server, dns, 'good.example');
    dns.set('bounces.good.example', 'TXT', [`v=spf1 a:${HOST} -all`]);
    dns.set('bounces.good.example', 'MX', [{ preference: 10, exchange: HOST }]);
    dns.set('_dmarc.good.example', 'TXT', ['v=DMARC1; p=quarantine; rua=mailto:dmarc@reports.mailsvc.test']);
    dns.set('_mta-sts.good.example', 'TXT', ['v=STSv1; id=2026112301']);
    dns.set('good.example', 'MX', [{ preference: 10, exchange: 'mx.good.example' }]);
    policies.set('good.example', { id: '2026112301', mode: 'enforce', mx: ['mx.good.example'], maxAge: 86400 });
    dns.set('_smtp._tls.good.example', 'TXT', ['v=TLSRPTv1; rua=mailto:tls-reports@reports.mailsvc.test']);

    // missing.example: DKIM verified, nothing else.
    await addVerifiedDomain(server, dns, 'missing.example');

    // wrong.example: every record published, each one wrong.
    await addVerifiedDomain(server, dns, 'wrong.example');
    dns.set('bounces.wrong.example', 'TXT', ['v=spf1 ip4:198.51.100.7 -all']);
    dns.set('bounces.wrong.example', 'MX', [{ preference: 10, exchange: 'mx.elsewhere.test' }]);
    dns.set('_dmarc.wrong.example', 'TXT', ['v=DMARC1; rua=mailto:someone@wrong.example']);
    dns.set('_mta-sts.wrong.example', 'TXT', ['v=STSv1; id=not valid!']);
    dns.set('_smtp._tls.wrong.example', 'TXT', ['v=TLSRPTv1; rua=someone@wrong.example']);
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
    await dns?.close();
  });

  const checksOf = async (domain: string) => {
    const verify = await request(server.httpUrl, 'POST', `/v1/domains/${domain}/verify`, { key });
    assert.equal(verify.status, 200, show(verify));
    const read = await request(server.httpUrl, 'GET', `/v1/domains/${domain}`, { key });
    assert.equal(read.status, 200, show(read));
    assert.deepEqual(read.body.checks, verify.body.checks, 'GET shows what the last check found');
    return read.body.checks;
  };

  it('reports every check ok for a domain with good records', async () => {
    const checks = await checksOf('good.example');
    assert.equal(checks.status, 'ok', JSON.stringify(checks, null, 2));
    for (const name of ['dkim', 'spf', 'dmarc', 'return_path_mx', 'mta_sts', 'tls_rpt'])
      assert.equal(checks[name].status, 'ok', `${name}: ${checks[name].message}`);
    assert.deepEqual(
      checks.spf.results,
      [{ ip: SENDING_IP, result: 'pass' }],
      'SPF evaluated by mailauth for the sending address',
    );
    assert.equal(checks.spf.domain, 'bounces.good.example');
    assert.equal(checks.spf.found, `v=spf1 a:${HOST} -all`);
    assert.equal(checks.dmarc.policy, 'quarantine');
    assert.equal(checks.dmarc.dkim_aligned, true);
    assert.equal(
      checks.dmarc.spf_aligned,
      true,
      'bounces.good.example aligns with good.example under relaxed alignment',
    );
    assert.deepEqual(checks.dmarc.publish, [], 'the rua already names our report address');
    assert.equal(checks.mta_sts.mode, 'enforce');
    assert.equal(checks.dkim.records.length, 3);
    assert.ok(
      dns.queries.includes('TXT _dmarc.good.example') && dns.queries.includes('TXT bounces.good.example'),
      'asked the configured DNS server',
    );
  });

  it('says what to publish for a domain with nothing published', async () => {
    const checks = await checksOf('missing.example');
    assert.equal(checks.dkim.status, 'ok');
    assert.equal(checks.spf.status, 'not_published');
    assert.deepEqual(checks.spf.publish, [
      { type: 'TXT', name: 'bounces.missing.example', value: `v=spf1 a:${HOST} -all` },
    ]);
    assert.equal(checks.dmarc.status, 'not_published');
    assert.deepEqual(checks.dmarc.publish, [
      { type: 'TXT', name: '_dmarc.missing.example', value: 'v=DMARC1; p=none; rua=mailto:dmarc@reports.mailsvc.test' },
    ]);
    assert.equal(checks.return_path_mx.status, 'not_published');
    assert.deepEqual(checks.return_path_mx.publish, [
      { type: 'MX', name: 'bounces.missing.example', value: `10 ${HOST}` },
    ]);
    assert.equal(checks.mta_sts.status, 'not_published');
    assert.equal(checks.mta_sts.required, false);
    assert.equal(checks.tls_rpt.status, 'not_published');
    assert.deepEqual(checks.tls_rpt.publish, [
      {
        type: 'TXT',
        name: '_smtp._tls.missing.example',
        value: 'v=TLSRPTv1; rua=mailto:tls-reports@reports.mailsvc.test',
      },
    ]);
    assert.equal(checks.status, 'not_published');
  });

  it('reports wrong records as failing, with what was found and the corrected record', async () => {
    const checks = await checksOf('wrong.example');
    assert.equal(checks.spf.status, 'failing');
    assert.deepEqual(checks.spf.results, [{ ip: SENDING_IP, result: 'fail' }]);
    assert.equal(checks.spf.found, 'v=spf1 ip4:198.51.100.7 -all');
    assert.deepEqual(checks.spf.publish, [
      { type: 'TXT', name: 'bounces.wrong.example', value: `v=spf1 ip4:198.51.100.7 a:${HOST} -all` },
    ]);
    assert.match(checks.spf.message, /does not authorise this server/);
    assert.equal(checks.dmarc.status, 'failing');
    assert.match(checks.dmarc.message, /no valid p= tag/);
    assert.equal(checks.return_path_mx.status, 'failing');
    assert.match(checks.return_path_mx.message, /mx\.elsewhere\.test/);
    assert.equal(checks.mta_sts.status, 'failing');
    assert.match(checks.mta_sts.message, /no valid id=/);
    assert.equal(checks.tls_rpt.status, 'failing');
    assert.equal(checks.status, 'failing');

    // An SPF record that does not name us at all, and two of them.
    dns.set('bounces.wrong.example', 'TXT', ['v=spf1 -all', 'v=spf1 a -all']);
    const twice = await checksOf('wrong.example');
    assert.equal(twice.spf.status, 'failing');
    assert.match(twice.spf.message, /2 SPF records/);
    // Strict SPF alignment with a return-path subdomain: DMARC still passes on DKIM.
    dns.set('_dmarc.wrong.example', 'TXT', ['v=DMARC1; p=reject; aspf=s']);
    const strict = await checksOf('wrong.example');
    assert.equal(strict.dmarc.status, 'warning');
    assert.equal(strict.dmarc.spf_aligned, false);
    assert.equal(strict.dmarc.policy, 'reject');
    assert.deepEqual(strict.dmarc.publish, [
      {
        type: 'TXT',
        name: '_dmarc.wrong.example',
        value: 'v=DMARC1; p=reject; aspf=s; rua=mailto:dmarc@reports.mailsvc.test',
      },
    ]);
  });

  it('flags an enforced MTA-STS policy that does not cover the MX', async () => {
    policies.set('good.example', { id: '2026112301', mode: 'enforce', mx: ['other.good.example'], maxAge: 86400 });
    try {
      const checks = await checksOf('good.example');
      assert.equal(checks.mta_sts.status, 'failing');
      assert.match(checks.mta_sts.message, /mx\.good\.example/);
    } finally {
      policies.set('good.example', { id: '2026112301', mode: 'enforce', mx: ['mx.good.example'], maxAge: 86400 });
    }
  });

  it('emits domain.updated when a check changes status, and only then', async () => {
    const events = async (): Promise<Array<{ type: string; data: any }>> => {
      const rows = await server.runtime.store.db
        .selectFrom('events')
        .selectAll()
        .where('type', '=', 'domain.updated')
        .orderBy('created_at')
        .execute();
      return rows
        .map((r) => ({ type: r.type, data: JSON.parse(r.data) }))
        .filter((e) => e.data.name === 'missing.example');
    };
    await checksOf('missing.example');
    const before = (await events()).length;
    assert.ok(before >= 1, 'the first checks were an update');
    await checksOf('missing.example');
    assert.equal((await events()).length, before, 'no event when nothing changed');

    dns.set('_dmarc.missing.example', 'TXT', ['v=DMARC1; p=none; rua=mailto:dmarc@reports.mailsvc.test']);
    const checks = await checksOf('missing.example');
    assert.equal(checks.dmarc.status, 'ok');
    assert.equal((await events()).length, before + 1);
    const [event] = await receiver.waitFor(
      1,
      (r) =>
        r.json?.type === 'domain.updated' &&
        r.json.data.name === 'missing.example' &&
        r.json.data.changes.some(
          (c: { check: string; from: string | null }) => c.check === 'dmarc' && c.from === 'not_published',
        ),
    );
    assert.ok(event, 'a domain.updated webhook');
    assert.deepEqual(event.json.data.changes, [{ check: 'dmarc', from: 'not_published', to: 'ok' }]);
    assert.equal(event.json.data.checks.dmarc, 'ok');
    assert.equal(event.json.data.status, 'verified');
  });

  it('runs the same checks from `mailsvc domains check`, exiting 1 while a required check fails', async () => {
    const env = {
      MAILSVC_DATABASE: server.config.database,
      MAILSVC_DATA_DIR: server.dir,
      MAILSVC_DELIVERY_DNS_SERVERS: JSON.stringify([dns.server]),
      MAILSVC_DELIVERY_HOSTNAME: HOST,
      MAILSVC_DKIM_HOST: 'dkim.mailsvc.test',
      MAILSVC_SMTP_INBOUND_ENABLED: 'true',
      MAILSVC_DELIVERABILITY_REPORT_DOMAIN: 'reports.mailsvc.test',
      MAILSVC_LOG_LEVEL: 'warn',
    };
    const wrong = await runCliProcess(['domains', 'check', 'wrong.example'], env);
    assert.equal(wrong.code, 1, wrong.stderr);
    assert.match(wrong.stdout, /^wrong\.example \(verified\): \d+ checks need attention/m);
    assert.match(wrong.stdout, /failing\s+spf\s+bounces\.wrong\.example has 2 SPF records/);
    assert.match(wrong.stdout, /publish: TXT bounces\.wrong\.example "v=spf1 .*a:mta\.mailsvc\.test/);
    assert.match(wrong.stdout, /mta_sts\s+\(optional\) The MTA-STS record has no valid id=/);

    const good = await runCliProcess(['domains', 'check', 'good.example', '--json'], env);
    // The CLI fetches the MTA-STS policy over HTTPS, which this test does not serve: a warning, not a failure.
    assert.equal(good.code, 0, good.stdout + good.stderr);
    const json = JSON.parse(good.stdout);
    assert.equal(json.checks.spf.status, 'ok');
    assert.equal(json.checks.dmarc.status, 'ok');

    const dnsCmd = await runCliProcess(['domains', 'dns', 'good.example'], env);
    assert.equal(dnsCmd.code, 0, dnsCmd.stderr);
    assert.match(dnsCmd.stdout, /_dmarc\.good\.example\s+"v=DMARC1; p=none; rua=mailto:dmarc@reports\.mailsvc\.test"/);
    assert.match(dnsCmd.stdout, /good\.example\._report\._dmarc\.reports\.mailsvc\.test\s+"v=DMARC1"/);
  });
});

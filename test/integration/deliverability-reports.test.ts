import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { zipSync } from 'fflate';
import nodemailer from 'nodemailer';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startInbound } from '../../src/intake/smtp/inbound.js';
import { loadSubmissionTls } from '../../src/intake/smtp/tls-files.js';
import { inboundKinds } from '../../src/receiving/inbound-kinds.js';
import { repoPath } from '../../scripts/repo-root.js';

/**
 * DMARC aggregate reports (gzip and zip XML) and TLS reports (gzip JSON) mailed over SMTP to
 * the inbound listener, as Google, Microsoft or Yahoo send them, then read back from the API.
 */

const fill = (template: string, values: Record<string, string>) =>
  template.replace(/\{\{(\w+)\}\}/g, (_, k: string) => values[k] ?? '');
const DMARC = readFileSync(repoPath('test/fixtures/dmarc-aggregate.xml'), 'utf8');
const TLS = readFileSync(repoPath('test/fixtures/tls-report.json'), 'utf8');
const DAY = 24 * 3600;

describe('DMARC and TLS reports on the inbound listener', () => {
  let dns: TestDns;
  let server: TestServer;
  let key: string;
  let transport: ReturnType<typeof nodemailer.createTransport>;
  const yesterday = Math.floor(Date.now() / 1000 / DAY - 1) * DAY;

  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer({
      delivery: { dnsServers: [dns.server], hostname: 'mta.mailsvc.test', enabled: false },
      dkim: { host: 'dkim.mailsvc.test' },
      smtp: { inbound: { enabled: true, port: 0 } },
      deliverability: { sendingIps: ['192.0.2.10'] },
    });
    await addVerifiedDomain(server, dns, 'shop.example');
    key = await server.key();
    // As a receiver's report mailer would: plain SMTP to the listener, STARTTLS offered (self-signed).
    transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.inboundPort!,
      secure: false,
      tls: { rejectUnauthorized: false },
    });
  });
  after(async () => {
    transport?.close();
    await server?.close();
    await dns?.close();
  });

  const dmarcXml = (reportId: string, domain = 'shop.example', begin = yesterday) =>
    fill(DMARC, { report_id: reportId, domain, begin: String(begin), end: String(begin + DAY - 1) });
  const mailReport = (to: string, attachment: { filename: string; content: Buffer; contentType: string }) =>
    transport.sendMail({
      from: 'noreply-dmarc-support@google.com',
      to,
      subject: `Report domain: shop.example Submitter: google.com Report-ID: ${attachment.filename}`,
      text: 'This is an aggregate report from google.com.',
      attachments: [attachment],
    });

  it('stores a gzip DMARC report sent to dmarc@<hostname> and shows it per day and source', async () => {
    const info = await mailReport('dmarc@mta.mailsvc.test', {
      filename: `google.com!shop.example!${yesterday}!${yesterday + DAY - 1}.xml.gz`,
      content: gzipSync(dmarcXml('r-1')),
      contentType: 'application/gzip',
    });
    assert.match(info.response, /^250 .*1 DMARC and 0 TLS report/);
    const res = await request(server.httpUrl, 'GET', '/v1/domains/shop.example/dmarc-reports', { key });
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.reports, 1);
    assert.equal(res.body.messages, 49);
    assert.equal(res.body.dmarc_pass, 42);
    assert.equal(res.body.days.length, 1);
    const day = res.body.days[0];
    assert.equal(day.date, new Date(yesterday * 1000).toISOString().slice(0, 10));
    const [ours, other] = day.sources;
    assert.deepEqual(ours, {
      source_ip: '192.0.2.10',
      this_server: true,
      messages: 42,
      dkim_pass: 42,
      spf_pass: 40,
      dkim_aligned: 42,
      spf_aligned: 40,
      dmarc_pass: 42,
      dispositions: { none: 42 },
      reporters: ['google.com'],
    });
    // Mail sent as shop.example from somewhere else becomes visible.
    assert.equal(other.source_ip, '203.0.113.66');
    assert.equal(other.this_server, false);
    assert.equal(other.messages, 7);
    assert.equal(other.spf_pass, 7, 'SPF passed for its own envelope domain');
    assert.equal(other.dmarc_pass, 0, 'but nothing aligned');
  });

  it('stores a zipped report (Google sends zip) and takes the same report only once', async () => {
    const zipped = Buffer.from(
      zipSync({ [`google.com!shop.example!${yesterday}!${yesterday + DAY - 1}.xml`]: Buffer.from(dmarcXml('r-2')) }),
    );
    const first = await mailReport('dmarc@mta.mailsvc.test', {
      filename: 'report.zip',
      content: zipped,
      contentType: 'application/zip',
    });
    assert.match(first.response, /^250 .*1 DMARC/);
    const again = await mailReport('DMARC@mta.mailsvc.test', {
      filename: 'report.zip',
      content: zipped,
      contentType: 'application/zip',
    });
    assert.match(again.response, /^250 .*nothing to do/);
    const res = await request(server.httpUrl, 'GET', '/v1/domains/shop.example/dmarc-reports?days=7', { key });
    assert.equal(res.body.reports, 2);
    assert.equal(res.body.messages, 98);
  });

  it('stores a TLS report sent to tls-reports@<hostname>, for our domain only', async () => {
    const json = fill(TLS, {
      report_id: 'tls-1',
      domain: 'shop.example',
      start: new Date(yesterday * 1000).toISOString(),
      end: new Date((yesterday + DAY - 1) * 1000).toISOString(),
    });
    const info = await mailReport('tls-reports@mta.mailsvc.test', {
      filename: 'company-x.example!shop.example!1.json.gz',
      content: gzipSync(json),
      contentType: 'application/tlsrpt+gzip',
    });
    assert.match(info.response, /^250 .*0 DMARC and 1 TLS report/);
    const res = await request(server.httpUrl, 'GET', '/v1/domains/shop.example/tls-reports', { key });
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.reports, 1);
    assert.deepEqual(res.body.days[0].reporters, ['Company-X']);
    assert.equal(res.body.days[0].successful, 5326);
    assert.equal(res.body.days[0].failed, 303);
    assert.deepEqual(
      res.body.days[0].failures.map((f: { result_type: string; sessions: number; receiving_mx_hostname: string }) => [
        f.result_type,
        f.sessions,
        f.receiving_mx_hostname,
      ]),
      [
        ['certificate-expired', 100, 'mx.shop.example'],
        ['starttls-not-supported', 200, 'mx.shop.example'],
        ['validation-failure', 3, 'mx.shop.example'],
      ],
    );
  });

  it('accepts but does not keep reports about domains it does not serve, and refuses what is not a report', async () => {
    const foreign = await mailReport('dmarc@mta.mailsvc.test', {
      filename: 'x.xml.gz',
      content: gzipSync(dmarcXml('r-3', 'someone-else.example')),
      contentType: 'application/gzip',
    });
    assert.match(foreign.response, /^250 .*nothing to do/);
    await assert.rejects(
      mailReport('dmarc@mta.mailsvc.test', {
        filename: 'x.xml.gz',
        content: gzipSync('<html>not a report</html>'),
        contentType: 'application/gzip',
      }),
      (err: Error & { responseCode?: number }) =>
        err.responseCode === 550 && /not a DMARC aggregate report/.test(err.message),
    );
    await assert.rejects(
      transport.sendMail({ from: 'a@b.example', to: 'dmarc@mta.mailsvc.test', subject: 'hello', text: 'just a note' }),
      (err: Error & { responseCode?: number }) => err.responseCode === 550,
    );
    // Other addresses at the report domain are not mailboxes.
    await assert.rejects(
      transport.sendMail({ from: 'a@b.example', to: 'postmaster-x@mta.mailsvc.test', subject: 'hello', text: 'x' }),
      (err: Error & { responseCode?: number }) => err.responseCode === 550 && /no such mailbox/.test(err.message),
    );
  });

  it('caps the unpacked size: a report just under 20 MB is read, one byte over is refused', async () => {
    const base = dmarcXml('r-big');
    // Padding inside the document (an XML comment) up to the limit; gzip makes it tiny on the wire.
    const pad = (total: number) =>
      Buffer.from(base.replace('<feedback>', `<feedback><!--${' '.repeat(total - Buffer.byteLength(base) - 7)}-->`));
    const under = pad(20 * 1024 * 1024);
    assert.equal(under.length, 20 * 1024 * 1024);
    const ok = await mailReport('dmarc@mta.mailsvc.test', {
      filename: 'big.xml.gz',
      content: gzipSync(under),
      contentType: 'application/gzip',
    });
    assert.match(ok.response, /^250 .*1 DMARC/);
    const over = pad(20 * 1024 * 1024 + 1);
    await assert.rejects(
      mailReport('dmarc@mta.mailsvc.test', {
        filename: 'bigger.xml.gz',
        content: gzipSync(over),
        contentType: 'application/gzip',
      }),
      (err: Error & { responseCode?: number }) => err.responseCode === 550 && /cannot gunzip/.test(err.message),
    );
  });

  it('answers 400 for a bad range and 404 for a domain of another workspace', async () => {
    const bad = await request(server.httpUrl, 'GET', '/v1/domains/shop.example/dmarc-reports?days=0', { key });
    assert.equal(bad.status, 400, show(bad));
    const other = await server.runtime.services.workspaces.create('other');
    const otherKey = await server.key({ workspaceId: other.id });
    const hidden = await request(server.httpUrl, 'GET', '/v1/domains/shop.example/dmarc-reports', { key: otherKey });
    assert.equal(hidden.status, 404, show(hidden));
  });
});

/**
 * Issue 22, defect 3: the 250 to a report comes only once what it stored is on disk, as for
 * bounces and received mail (a reporter never sends a report twice). A second listener on the
 * same runtime, whose durability wait the test holds, takes the report.
 */
describe('the inbound listener answers a report only once it is durable', () => {
  let dns: TestDns;
  let server: TestServer;
  let listener: Awaited<ReturnType<typeof startInbound>>;
  let release: (() => void) | null = null;
  let waits = 0;

  before(async () => {
    dns = await startDnsServer();
    server = await startTestServer({
      delivery: { dnsServers: [dns.server], hostname: 'mta.mailsvc.test', enabled: false },
      dkim: { host: 'dkim.mailsvc.test' },
      smtp: { inbound: { enabled: true, port: 0 } },
    });
    await addVerifiedDomain(server, dns, 'shop.example');
    const { runtime } = server;
    const held = async () => {
      waits++;
      await new Promise<void>((r) => (release = r));
      await runtime.services.durable();
    };
    listener = await startInbound({
      services: { ...runtime.services, durable: held },
      kinds: inboundKinds({ ...runtime.deps, batcher: runtime.services.batcher }),
      config: server.config,
      logger: runtime.deps.logger,
      clock: runtime.deps.clock,
      tls: await loadSubmissionTls(server.config),
    });
  });
  after(async () => {
    release?.();
    await listener?.close();
    await server?.close();
    await dns?.close();
  });

  it('holds the 250 to a DMARC report until the write is durable', async () => {
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: listener.port,
      secure: false,
      tls: { rejectUnauthorized: false },
    });
    const day = Math.floor(Date.now() / 1000 / DAY - 1) * DAY;
    const sent = transport.sendMail({
      from: 'noreply-dmarc-support@google.com',
      to: 'dmarc@mta.mailsvc.test',
      subject: 'Report domain: shop.example',
      text: 'aggregate report',
      attachments: [
        {
          filename: 'r.xml.gz',
          content: gzipSync(
            fill(DMARC, {
              report_id: 'durable-1',
              domain: 'shop.example',
              begin: String(day),
              end: String(day + DAY - 1),
            }),
          ),
          contentType: 'application/gzip',
        },
      ],
    });
    let answered = false;
    void sent.then(
      () => (answered = true),
      () => (answered = true),
    );
    for (let i = 0; i < 100 && !release; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(waits, 1, 'the listener waited for durability');
    // The report is committed (another reader sees it) but the answer waits for the sync.
    const stored = await server.runtime.store.db
      .selectFrom('dmarc_reports')
      .select('report_id')
      .where('report_id', '=', 'durable-1')
      .executeTakeFirst();
    assert.ok(stored, 'the report was written');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(answered, false, 'no 250 while the write is not durable');
    release!();
    const info = await sent;
    assert.match(info.response, /^250 .*1 DMARC and 0 TLS report/);
    transport.close();
  });
});

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { generate } from 'selfsigned';
import type { Config } from '../../src/config/schema.js';
import { localSettings, runDoctor, type DoctorCheck } from '../../src/checks/doctor.js';
import { runCliProcess } from '../helpers/cli.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { startNtpServer, type TestNtp } from '../helpers/ntp-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * `mailsvc doctor` against a real DNS server on loopback (A, PTR and DNSBL records, good and
 * wrong), a real NTP server on loopback, real certificate files and the real data directory.
 */

const HOST = 'mail.good.example';
const IP = '192.0.2.10';
const ZONE = 'bl.blocklist.example';

describe('mailsvc doctor', () => {
  let dns: TestDns;
  let ntp: TestNtp;
  let server: TestServer;
  let dir: string;
  let goodCert: { key: string; cert: string };

  before(async () => {
    dns = await startDnsServer();
    ntp = await startNtpServer(0);
    server = await startTestServer({ delivery: { dnsServers: [dns.server], hostname: HOST, enabled: false } });
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-doctor-'));
    const ca = await generate([{ name: 'commonName', value: 'doctor test CA' }], {
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
      ],
    });
    const leaf = await generate([{ name: 'commonName', value: HOST }], {
      algorithm: 'sha256',
      ca: { key: ca.private, cert: ca.cert },
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'subjectAltName', altNames: [{ type: 2, value: HOST }] },
      ],
    });
    goodCert = { key: join(dir, 'key.pem'), cert: join(dir, 'cert.pem') };
    writeFileSync(goodCert.key, leaf.private);
    writeFileSync(goodCert.cert, leaf.cert);
    const self = await generate([{ name: 'commonName', value: HOST }], { algorithm: 'sha256' });
    writeFileSync(join(dir, 'self.pem'), self.cert);
    const expired = await generate([{ name: 'commonName', value: HOST }], {
      algorithm: 'sha256',
      ca: { key: ca.private, cert: ca.cert },
      notBeforeDate: new Date(Date.now() - 90 * 86_400_000),
      notAfterDate: new Date(Date.now() - 86_400_000),
    });
    writeFileSync(join(dir, 'expired.pem'), expired.cert);

    dns.set(HOST, 'A', [IP]);
    dns.set('10.2.0.192.in-addr.arpa', 'PTR', [HOST]);
  });
  after(async () => {
    await server?.close();
    await ntp?.close();
    await dns?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The test server's configuration with the doctor's settings changed. */
  const configWith = (changes: {
    hostname?: string;
    dkimHost?: string;
    publicUrl?: string;
    sendingIps?: string[];
    dnsbl?: string[];
    ntp?: string[];
    cert?: string;
    submissionHost?: string;
    dataDir?: string;
    minFreeBytes?: number;
  }): Config => ({
    ...server.config,
    storage: { minFreeBytes: changes.minFreeBytes ?? server.config.storage.minFreeBytes },
    dataDir: changes.dataDir ?? join(dir, 'data'),
    http: { ...server.config.http, publicUrl: changes.publicUrl ?? `https://${HOST}` },
    dkim: { host: changes.dkimHost ?? `dkim.${HOST}` },
    delivery: { ...server.config.delivery, hostname: changes.hostname ?? HOST },
    smtp: {
      ...server.config.smtp,
      submission: {
        ...server.config.smtp.submission,
        host: changes.submissionHost ?? '0.0.0.0',
        tls: { key: goodCert.key, cert: changes.cert ?? goodCert.cert },
      },
    },
    deliverability: {
      ...server.config.deliverability,
      sendingIps: changes.sendingIps ?? [],
      dnsbl: changes.dnsbl ?? [ZONE],
      ntpServers: changes.ntp ?? [ntp.server],
    },
  });
  const doctor = (config: Config, options: { localAddresses?: string[]; diskFailBytes?: number } = {}) =>
    runDoctor({
      config,
      resolver: server.runtime.deps.resolver,
      db: server.runtime.store.db,
      now: () => Date.now(),
      localAddresses: options.localAddresses ?? [IP],
      ...options,
    });
  const byName = (checks: DoctorCheck[]) => Object.fromEntries(checks.map((c) => [c.name, c]));

  it('passes a well set-up host', async () => {
    const checks = byName(await doctor(configWith({})));
    for (const name of [
      'hostname',
      'dkim_host',
      'public_url',
      'forward_dns',
      `reverse_dns ${IP}`,
      'tls_certificate',
      `dnsbl ${ZONE}`,
      'clock',
      'data_dir',
    ]) {
      assert.equal(checks[name]?.status, 'ok', `${name}: ${JSON.stringify(checks[name])}`);
    }
    assert.match(checks[`reverse_dns ${IP}`]!.message, /192\.0\.2\.10 -> mail\.good\.example -> 192\.0\.2\.10/);
    assert.ok(
      dns.queries.includes(`A 10.2.0.192.${ZONE}`),
      'the blocklist was asked through the configured DNS server',
    );
    assert.equal(checks.inbound!.status, 'warning', 'the inbound listener is off in this test');
    assert.equal(checks.domains!.status, 'not_published');
  });

  it('says what to fix for a bad host name, forward and reverse DNS', async () => {
    const local = byName(await doctor(configWith({ hostname: 'localhost', sendingIps: [IP] })));
    assert.equal(local.hostname!.status, 'failing');
    assert.match(local.hostname!.fix!, /delivery\.hostname/);

    dns.set('mail.elsewhere.example', 'A', ['192.0.2.20']);
    dns.set('20.2.0.192.in-addr.arpa', 'PTR', ['host-192-0-2-20.provider.example']);
    const wrong = byName(await doctor(configWith({ hostname: 'mail.elsewhere.example' })));
    assert.equal(wrong.forward_dns!.status, 'warning', wrong.forward_dns!.message);
    assert.equal(wrong['reverse_dns 192.0.2.20']!.status, 'failing');
    assert.match(
      wrong['reverse_dns 192.0.2.20']!.message,
      /PTR of 192\.0\.2\.20 is host-192-0-2-20\.provider\.example, not mail\.elsewhere\.example/,
    );
    assert.match(wrong['reverse_dns 192.0.2.20']!.fix!, /hosting provider/);

    const missing = byName(await doctor(configWith({ hostname: 'mail.nowhere.example', sendingIps: ['192.0.2.30'] })));
    assert.equal(missing.forward_dns!.status, 'not_published');
    assert.equal(missing['reverse_dns 192.0.2.30']!.status, 'not_published');

    // PTR names the host, but the host does not resolve back to that address.
    dns.set('40.2.0.192.in-addr.arpa', 'PTR', [HOST]);
    const unconfirmed = byName(await doctor(configWith({ sendingIps: ['192.0.2.40'] })));
    assert.equal(unconfirmed['reverse_dns 192.0.2.40']!.status, 'failing');
    assert.match(unconfirmed['reverse_dns 192.0.2.40']!.message, /does not resolve back/);
  });

  it('fails the defaults that only work on this machine: dkim.host, delivery.hostname, http.publicUrl', async () => {
    // The test server runs on the defaults, as `npx mailsvc serve` does on a laptop.
    assert.deepEqual(
      localSettings(server.config).map((s) => s.key),
      ['dkim.host', 'http.publicUrl'],
    );
    assert.deepEqual(
      localSettings({ ...server.config, delivery: { ...server.config.delivery, hostname: 'vm' } }).map((s) => s.key),
      ['dkim.host', 'delivery.hostname', 'http.publicUrl'],
    );
    const defaults = byName(
      await doctor(configWith({ dkimHost: server.config.dkim.host, publicUrl: server.config.http.publicUrl })),
    );
    assert.equal(defaults.dkim_host!.status, 'failing');
    assert.match(defaults.dkim_host!.message, /dkim\.host is dkim\.localhost: .*no domain can be verified/);
    assert.match(defaults.dkim_host!.fix!, /mailsvc init/);
    assert.equal(defaults.public_url!.status, 'failing');
    assert.match(defaults.public_url!.message, /http\.publicUrl is http:\/\/localhost:3000/);
    for (const [publicUrl, status] of [
      ['http://127.0.0.1:3000', 'failing'],
      ['http://10.1.2.3', 'failing'],
      ['http://[::1]:3000', 'failing'],
      ['http://mail', 'failing'],
      ['http://8.8.8.8', 'ok'],
      ['https://mail.good.example', 'ok'],
    ] as const) {
      assert.equal(byName(await doctor(configWith({ publicUrl }))).public_url!.status, status, publicUrl);
    }
  });

  it('reports a listing on a DNS blocklist, and a list that refuses to answer', async () => {
    dns.set(`10.2.0.192.${ZONE}`, 'A', ['127.0.0.2']);
    dns.set(`10.2.0.192.${ZONE}`, 'TXT', ['Listed for spam, see https://blocklist.example/lookup']);
    try {
      const listed = byName(await doctor(configWith({})));
      assert.equal(listed[`dnsbl ${ZONE}`]!.status, 'failing');
      assert.match(listed[`dnsbl ${ZONE}`]!.message, /192\.0\.2\.10 \(127\.0\.0\.2: Listed for spam/);
      dns.set(`10.2.0.192.${ZONE}`, 'A', ['127.255.255.254']);
      const refused = byName(await doctor(configWith({})));
      assert.equal(refused[`dnsbl ${ZONE}`]!.status, 'warning');
      assert.match(refused[`dnsbl ${ZONE}`]!.fix!, /your own resolver/);
    } finally {
      dns.remove(`10.2.0.192.${ZONE}`);
    }
  });

  it('compares the clock with NTP: within 1 s ok, a few seconds a warning, far off failing', async () => {
    for (const [offset, status] of [
      [300, 'ok'],
      [5_000, 'warning'],
      [-30_000, 'failing'],
    ] as const) {
      ntp.offsetMs = offset;
      const clock = byName(await doctor(configWith({}))).clock!;
      assert.equal(clock.status, status, `${offset} ms: ${clock.message}`);
    }
    ntp.offsetMs = 0;
    const unreachable = byName(await doctor(configWith({ ntp: ['127.0.0.1:9'] }))).clock!;
    assert.equal(unreachable.status, 'warning');
    assert.match(unreachable.message, /Could not compare the clock/);
  });

  it('fails a self-signed certificate on a public listener and an expired one; warns on loopback', async () => {
    const publicSelf = byName(await doctor(configWith({ cert: join(dir, 'self.pem') }))).tls_certificate!;
    assert.equal(publicSelf.status, 'failing');
    assert.match(publicSelf.message, /self-signed and the listener is public/);
    const loopbackSelf = byName(
      await doctor(configWith({ cert: join(dir, 'self.pem'), submissionHost: '127.0.0.1' })),
    ).tls_certificate!;
    assert.equal(loopbackSelf.status, 'warning');
    const expired = byName(await doctor(configWith({ cert: join(dir, 'expired.pem') }))).tls_certificate!;
    assert.equal(expired.status, 'failing');
    assert.match(expired.message, /expired/);
  });

  it('checks the data directory is writable and has room', async () => {
    const readOnly = join(dir, 'readonly');
    writeFileSync(join(dir, 'placeholder'), '');
    const full = byName(await doctor(configWith({}), { diskFailBytes: Number.MAX_SAFE_INTEGER })).data_dir!;
    assert.equal(full.status, 'failing');
    assert.match(full.message, /GiB free/);
    assert.match(full.message, /new mail is refused below \d+ MB: storage\.minFreeBytes/);
    // Below the reserve the server refuses mail now: doctor says so, whatever its own thresholds.
    const reserved = byName(
      await doctor(configWith({ minFreeBytes: Number.MAX_SAFE_INTEGER }), { diskFailBytes: 0 }),
    ).data_dir!;
    assert.equal(reserved.status, 'failing');
    assert.match(reserved.message, /refuses new mail now \(503 storage_full, SMTP 452\)/);
    const spacious = byName(await doctor(configWith({ minFreeBytes: 0 }), { diskFailBytes: 0 })).data_dir!;
    assert.notEqual(spacious.status, 'failing');
    if (process.getuid?.() !== 0) {
      // root writes anywhere; the permission check only means something for other users.
      const { mkdirSync } = await import('node:fs');
      mkdirSync(readOnly);
      chmodSync(readOnly, 0o500);
      const denied = byName(await doctor(configWith({ dataDir: readOnly }))).data_dir!;
      assert.equal(denied.status, 'failing');
    }
    // A data directory under a file cannot be created.
    const impossible = byName(await doctor(configWith({ dataDir: join(dir, 'placeholder', 'data') }))).data_dir!;
    assert.equal(impossible.status, 'failing');
    assert.match(impossible.message, /Cannot write/);
  });

  it('prints one line per check with the fix, and exits 1 when something fails (CLI)', async () => {
    const env = {
      MAILSVC_DATABASE: server.config.database,
      MAILSVC_DATA_DIR: join(dir, 'cli-data'),
      // Every process on a database needs its secret key.
      MAILSVC_SECRET_KEY: server.runtime.deps.secretKey.toString('base64'),
      MAILSVC_DELIVERY_DNS_SERVERS: JSON.stringify([dns.server]),
      MAILSVC_DELIVERY_HOSTNAME: 'mail.elsewhere.example',
      MAILSVC_DELIVERABILITY_DNSBL: JSON.stringify([ZONE]),
      MAILSVC_DELIVERABILITY_NTP_SERVERS: JSON.stringify([ntp.server]),
      MAILSVC_LOG_LEVEL: 'warn',
    };
    const text = await runCliProcess(['doctor'], env);
    assert.equal(text.code, 1, text.stderr);
    assert.match(
      text.stdout,
      /^failing\s+reverse_dns 192\.0\.2\.20\s+The PTR of 192\.0\.2\.20 is host-192-0-2-20\.provider\.example/m,
    );
    assert.match(
      text.stdout,
      /^\s+fix: Ask your hosting provider to set the reverse DNS \(PTR\) of 192\.0\.2\.20 to mail\.elsewhere\.example\./m,
    );
    assert.match(text.stdout, /^ok\s+clock\s+/m);
    assert.match(text.stdout, /check\(s\) failing.*fix them before your first campaign\.$/m);
    const json = await runCliProcess(['doctor', '--json'], env);
    assert.equal(json.code, 1);
    const parsed = JSON.parse(json.stdout);
    assert.equal(parsed.ok, false);
    assert.ok(parsed.checks.some((c: DoctorCheck) => c.name === 'reverse_dns 192.0.2.20' && c.status === 'failing'));
  });
});

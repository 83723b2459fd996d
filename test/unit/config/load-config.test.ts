import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, envName, listSettings, loadConfig } from '../../../src/config/load-config.js';

const tmpFile = (content: string) => {
  const file = join(mkdtempSync(join(tmpdir(), 'mailsvc-cfg-')), 'config.json');
  writeFileSync(file, content);
  return file;
};

describe('loadConfig', () => {
  it('has every key of DESIGN.md with its default', () => {
    const c = loadConfig({ env: {} });
    assert.equal(c.database, 'sqlite:./data/mailsvc.db');
    assert.equal(c.http.host, '127.0.0.1');
    assert.equal(c.http.port, 3000);
    assert.equal(c.http.publicUrl, 'http://localhost:3000');
    assert.equal(c.smtp.submission.host, '127.0.0.1');
    assert.equal(c.smtp.submission.port, 2587);
    assert.equal(c.smtp.submission.tls, null);
    assert.equal(c.smtp.inbound.enabled, false);
    assert.equal(c.smtp.inbound.port, 2525);
    assert.ok(c.delivery.hostname.length > 0);
    assert.deepEqual(c.delivery.dnsServers, []);
    assert.equal(c.delivery.port, 25);
    assert.equal(c.delivery.relay, null);
    assert.equal(c.dkim.host, 'dkim.localhost');
    assert.equal(c.webhooks.allowPrivateNetworks, false);
  });

  it('names environment variables after the key path', () => {
    assert.equal(envName('http.port'), 'MAILSVC_HTTP_PORT');
    assert.equal(envName('http.publicUrl'), 'MAILSVC_HTTP_PUBLIC_URL');
    assert.equal(envName('smtp.submission.port'), 'MAILSVC_SMTP_SUBMISSION_PORT');
    assert.equal(envName('delivery.dnsServers'), 'MAILSVC_DELIVERY_DNS_SERVERS');
    assert.equal(
      new Set(listSettings().map((s) => envName(s.path))).size,
      listSettings().length,
      'no two keys share a variable',
    );
  });

  it('layers file, then environment, then overrides', () => {
    const file = tmpFile(
      JSON.stringify({ http: { port: 4000, host: '0.0.0.0' }, delivery: { dnsServers: ['127.0.0.1:53'] } }),
    );
    const c = loadConfig({
      file,
      env: { MAILSVC_HTTP_PORT: '5000', MAILSVC_DELIVERY_DNS_SERVERS: '127.0.0.1:5353, [::1]:5353' },
      overrides: { log: { level: 'silent' } },
    });
    assert.equal(c.http.port, 5000);
    assert.equal(c.http.host, '0.0.0.0');
    assert.deepEqual(c.delivery.dnsServers, ['127.0.0.1:5353', '[::1]:5353']);
    assert.equal(c.log.level, 'silent');
    const viaEnvFile = loadConfig({ env: { MAILSVC_CONFIG: file } });
    assert.equal(viaEnvFile.http.port, 4000);
  });

  it('parses JSON objects and booleans from the environment', () => {
    const c = loadConfig({
      env: {
        MAILSVC_DELIVERY_RELAY: '{"host":"smtp.example.net","port":587,"auth":{"user":"u","pass":"p"}}',
        MAILSVC_WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      },
    });
    assert.deepEqual(c.delivery.relay, {
      host: 'smtp.example.net',
      port: 587,
      secure: false,
      rejectUnauthorized: true,
      auth: { user: 'u', pass: 'p' },
    });
    assert.equal(c.webhooks.allowPrivateNetworks, true);
  });

  it('refuses bad values with one line naming the key and the source', () => {
    const cases: Array<[() => unknown, RegExp]> = [
      [
        () => loadConfig({ env: { MAILSVC_HTTP_PORT: 'abc' } }),
        /^config: http\.port must be an integer from 0 to 65535, got "abc" \(from MAILSVC_HTTP_PORT\)$/,
      ],
      [
        () => loadConfig({ env: { MAILSVC_DATABASE: 'mysql://x' } }),
        /^config: database must be "sqlite:PATH" or "postgres:\/\/\.\.\."/,
      ],
      [
        () => loadConfig({ env: { MAILSVC_HTTP_PUBLIC_URL: 'ftp://x' } }),
        /^config: http\.publicUrl must be an http\(s\) URL/,
      ],
      [
        () => loadConfig({ env: { MAILSVC_SECRET_KEY: 'short' } }),
        /^config: secretKey must be base64 of exactly 32 bytes/,
      ],
      [() => loadConfig({ file: tmpFile('{"http":{"prot":1}}'), env: {} }), /^config: unknown key "http\.prot" in /],
      [() => loadConfig({ file: tmpFile('{"http":'), env: {} }), /^config: .* is not valid JSON/],
      [
        () => loadConfig({ file: '/nonexistent/mailsvc.json', env: {} }),
        /^config: cannot read \/nonexistent\/mailsvc\.json: ENOENT$/,
      ],
      [
        () => loadConfig({ file: tmpFile('{"log":{"level":"loud"}}'), env: {} }),
        /^config: log\.level must be one of fatal, error/,
      ],
      [
        () => loadConfig({ file: tmpFile('{"delivery":{"retrySchedule":[]}}'), env: {} }),
        /^config: delivery\.retrySchedule must be a non-empty array/,
      ],
    ];
    for (const [load, message] of cases) {
      assert.throws(load, (err: Error) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.match(err.message, message);
        assert.ok(!err.message.includes('\n'), 'one line');
        return true;
      });
    }
  });

  it('http.bodyMemory: 1 MB to 16 GB of large messages at once, 16 MB by default', () => {
    assert.equal(loadConfig({ env: {} }).http.bodyMemory, 16 * 1024 * 1024);
    assert.equal(loadConfig({ env: { MAILSVC_HTTP_BODY_MEMORY: String(1024 * 1024) } }).http.bodyMemory, 1024 * 1024);
    assert.equal(
      loadConfig({ env: { MAILSVC_HTTP_BODY_MEMORY: String(16 * 1024 ** 3) } }).http.bodyMemory,
      16 * 1024 ** 3,
    );
    for (const bad of [1024 * 1024 - 1, 16 * 1024 ** 3 + 1]) {
      assert.throws(
        () => loadConfig({ env: { MAILSVC_HTTP_BODY_MEMORY: String(bad) } }),
        /^ConfigError: config: http\.bodyMemory must be an integer from 1048576 to 17179869184/,
      );
    }
  });

  it('describes every setting for the README', () => {
    for (const { path, setting } of listSettings()) {
      assert.ok(setting.description.length > 10, `${path} has a description`);
      assert.doesNotThrow(() => setting.parse(setting.default, false), `${path} default parses`);
    }
  });
});

import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { benchEnv, cli, freePort, verifiedBenchDomain } from './lib.js';
import { startSink } from './smtp-sink.js';

/**
 * What the side-by-side and memory benches run the product against: a certificate for the
 * submission listener (RSA-2048, or ECDSA P-256; readable by Postfix too), a loopback DNS
 * routing `sink.bench` to a loopback sink, the settings (Postfix's destination limit, no
 * periodic domain checks), an API key whose workspace's plan does not meter the bench, a
 * verified `bench.example`, and the 2 KB message both send.
 */
export async function sinkBench(name: string, certificate: 'rsa' | 'ecdsa' = 'rsa') {
  const dir = mkdtempSync(join(tmpdir(), `mailsvc-${name}-`));
  chmodSync(dir, 0o755);
  const cert = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-nodes',
      '-days',
      '30',
      '-subj',
      '/CN=localhost',
      ...(certificate === 'ecdsa' ? ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'] : ['-newkey', 'rsa:2048']),
      '-keyout',
      cert.key,
      '-out',
      cert.cert,
    ],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`openssl: ${made.stderr}`);
  chmodSync(cert.key, 0o644);

  const dns = await startDnsServer();
  const sink = await startSink();
  dns.set('sink.bench', 'MX', [{ preference: 10, exchange: 'mx.sink.bench' }]);
  dns.set('mx.sink.bench', 'A', ['127.0.0.1']);
  const submissionPort = await freePort();
  const env = benchEnv({
    MAILSVC_DELIVERY_DNS_SERVERS: dns.server,
    MAILSVC_DELIVERY_PORT: String(sink.port),
    MAILSVC_DELIVERY_HOSTNAME: 'mailsvc-bench.localhost',
    MAILSVC_DELIVERY_DEFAULT_DOMAIN_LIMIT: JSON.stringify({ concurrency: 20, perMinute: 10_000_000 }),
    MAILSVC_DOMAINS_RECHECK_INTERVAL: '0',
    MAILSVC_SMTP_SUBMISSION_PORT: String(submissionPort),
    MAILSVC_SMTP_SUBMISSION_IMPLICIT_TLS: 'false',
    MAILSVC_SMTP_SUBMISSION_TLS: JSON.stringify(cert),
  });
  const { key, workspace_id: workspaceId } = JSON.parse(
    await cli(['keys', 'create', '--name', 'bench', '--json'], env),
  ) as { key: string; workspace_id: string };
  await cli(
    ['workspaces', 'set-plan', workspaceId, 'enterprise', '--transactional', '1000000', '--marketing', '1000000'],
    env,
  );
  await verifiedBenchDomain(env, dns);
  const paragraph =
    '<p>Thank you for your order. Your items will ship within two business days; you will receive a tracking number by email.</p>';
  const body = JSON.stringify({
    from: 'Shop <orders@bench.example>',
    to: 'customer@sink.bench',
    subject: 'Your order has shipped',
    html: paragraph.repeat(6),
  });
  return { cert, dns, sink, submissionPort, env, key, workspaceId, body };
}

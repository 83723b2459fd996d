import { X509Certificate } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  writeFileSync,
  openSync,
  fsyncSync,
  closeSync,
} from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config/schema.js';
import { submissionTlsPaths } from '../config/tls-paths.js';
import { isNoRecordError, type DnsResolver } from '../shared/dns.js';
import { listAllDomains } from '../store/domains.js';
import type { Db } from '../store/infra/db.js';
import { needsAction, type CheckStatus } from './check-status.js';
import { measureClockOffset } from './clock-offset.js';
import { domainChecksOf } from './domain-checks.js';
import { reversedLabels, ptrName } from './reverse-name.js';
import { addressesOf, sendingAddresses } from './sending-addresses.js';
import { ipPoolChecks } from './ip-pool-addresses.js';
import { reserveFor } from '../store/infra/free-space.js';

/**
 * `mailsvc doctor`: the installation as a receiving mail server sees it, one check per line
 * with what to fix. Every DNS look-up goes through the configured resolver.
 */

export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  /** Whether a problem here is a failure (exit 1) rather than advice. */
  required: boolean;
  message: string;
  /** What to do, in words; null when nothing. */
  fix: string | null;
}

interface DoctorEnv {
  config: Config;
  resolver: DnsResolver;
  db: Db;
  now: () => number;
  /** This machine's own addresses (network interfaces); tests may name them. */
  localAddresses?: string[];
  /** Bytes free below which the data directory fails, and warns (defaults: 1 GiB, 5 GiB). */
  diskFailBytes?: number;
  diskWarnBytes?: number;
}

const GiB = 1024 ** 3;
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

const result = (
  name: string,
  status: CheckStatus,
  message: string,
  fix: string | null = null,
  required = true,
): DoctorCheck => ({ name, status, required, message, fix });

/** A host name receivers accept in EHLO: at least two labels of letters, digits and hyphens, not a local name. */
export function isFullyQualified(name: string): boolean {
  const host = name.replace(/\.$/, '').toLowerCase();
  const labels = host.split('.');
  if (labels.length < 2 || host.length > 253) return false;
  if (!labels.every((l) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(l))) return false;
  if (/^\d+$/.test(labels[labels.length - 1]!)) return false;
  return !['localhost', 'localdomain', 'local', 'lan', 'internal', 'home', 'invalid'].includes(
    labels[labels.length - 1]!,
  );
}

function hostnameCheck(config: Config): DoctorCheck {
  const host = config.delivery.hostname;
  if (isFullyQualified(host)) return result('hostname', 'ok', `EHLO name ${host} is a fully qualified domain name.`);
  return result(
    'hostname',
    'failing',
    `EHLO name "${host}" is not a fully qualified public name; many receivers refuse or junk mail from it.`,
    'Set delivery.hostname (MAILSVC_DELIVERY_HOSTNAME) to the public name of this server, e.g. mail.example.com.',
  );
}

/**
 * Settings still at values that only work on this machine, each with why it matters: the
 * defaults let `mailsvc serve` run on a laptop, but nobody on the internet can resolve
 * `dkim.localhost`, open `http://localhost:3000` or trust an EHLO of `vm`.
 */
export function localSettings(config: Config): Array<{ key: string; value: string; why: string }> {
  const out: Array<{ key: string; value: string; why: string }> = [];
  if (!isFullyQualified(config.dkim.host)) {
    out.push({
      key: 'dkim.host',
      value: config.dkim.host,
      why: "customers' DKIM CNAMEs point under it, and nobody can resolve it, so no domain can be verified",
    });
  }
  if (!isFullyQualified(config.delivery.hostname)) {
    out.push({
      key: 'delivery.hostname',
      value: config.delivery.hostname,
      why: 'receivers refuse or junk mail from a server that greets them with it, and the MX records to publish would name it',
    });
  }
  const url = new URL(config.http.publicUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const privateIp = ipaddr.isValid(host) && ipaddr.process(host).range() !== 'unicast';
  if (privateIp || (!ipaddr.isValid(host) && !isFullyQualified(host))) {
    out.push({
      key: 'http.publicUrl',
      value: config.http.publicUrl,
      why: 'tracking, unsubscribe and attachment links in sent mail point at it, and recipients cannot open it',
    });
  }
  return out;
}

/** One check per setting that cannot work on the internet. */
function publicSettingsChecks(config: Config): DoctorCheck[] {
  const local = new Map(localSettings(config).map((s) => [s.key, s]));
  const check = (name: string, key: string, fix: string, okText: string): DoctorCheck => {
    const found = local.get(key);
    return found ? result(name, 'failing', `${key} is ${found.value}: ${found.why}.`, fix) : result(name, 'ok', okText);
  };
  return [
    check(
      'dkim_host',
      'dkim.host',
      "Set dkim.host to a zone you publish records in, e.g. dkim.mail.example.com (`mailsvc init` sets it from the server's name).",
      `DKIM keys are published under ${config.dkim.host}.`,
    ),
    check(
      'public_url',
      'http.publicUrl',
      'Set http.publicUrl to the address people reach this server at, e.g. https://mail.example.com (behind a reverse proxy with TLS).',
      `Links in mail point at ${config.http.publicUrl}.`,
    ),
  ];
}

const localAddresses = (): string[] =>
  Object.values(networkInterfaces())
    .flat()
    .flatMap((i) => (i ? [ipaddr.process(i.address).toString()] : []));

async function forwardDnsCheck(env: DoctorEnv): Promise<{ check: DoctorCheck; addresses: string[] }> {
  const host = env.config.delivery.hostname;
  let addresses: string[];
  try {
    addresses = await addressesOf(host, env.resolver);
  } catch (err) {
    return {
      check: result(
        'forward_dns',
        'warning',
        `Could not look up ${host}: ${(err as Error).message}.`,
        'Check delivery.dnsServers and your network, then run doctor again.',
      ),
      addresses: [],
    };
  }
  if (addresses.length === 0) {
    return {
      check: result(
        'forward_dns',
        'not_published',
        `${host} has no A or AAAA record.`,
        `Publish an A record (and AAAA if you send over IPv6) for ${host} pointing at this server's public address.`,
      ),
      addresses,
    };
  }
  const mine = new Set(
    env.config.deliverability.sendingIps.length > 0
      ? env.config.deliverability.sendingIps.map((ip) => ipaddr.process(ip).toString())
      : (env.localAddresses ?? localAddresses()),
  );
  if (addresses.some((a) => mine.has(a)))
    return {
      check: result('forward_dns', 'ok', `${host} resolves to ${addresses.join(', ')}, an address of this server.`),
      addresses,
    };
  return {
    check: result(
      'forward_dns',
      'warning',
      `${host} resolves to ${addresses.join(', ')}, which is not an address of this machine (fine behind 1:1 NAT).`,
      `Point ${host} at this server, or list its public addresses in deliverability.sendingIps.`,
    ),
    addresses,
  };
}

async function reverseDnsChecks(env: DoctorEnv, ips: string[]): Promise<DoctorCheck[]> {
  const host = env.config.delivery.hostname.replace(/\.$/, '').toLowerCase();
  if (ips.length === 0)
    return [
      result(
        'reverse_dns',
        'warning',
        'No sending address is known, so reverse DNS cannot be checked.',
        `Publish an A record for ${host} or set deliverability.sendingIps.`,
      ),
    ];
  return Promise.all(
    ips.map(async (ip) => {
      const name = `reverse_dns ${ip}`;
      let ptr: string[];
      try {
        ptr = (await env.resolver.resolvePtr(ptrName(ip))).map((p) => p.replace(/\.$/, '').toLowerCase());
      } catch (err) {
        if (!isNoRecordError(err))
          return result(name, 'warning', `Could not look up the PTR of ${ip}: ${(err as Error).message}.`);
        ptr = [];
      }
      const fix = `Ask your hosting provider to set the reverse DNS (PTR) of ${ip} to ${host}.`;
      if (ptr.length === 0)
        return result(
          name,
          'not_published',
          `${ip} has no reverse DNS (PTR); Gmail and Yahoo require one that matches.`,
          fix,
        );
      if (!ptr.includes(host))
        return result(
          name,
          'failing',
          `The PTR of ${ip} is ${ptr.join(', ')}, not ${host}.`,
          `${fix} Or set delivery.hostname to ${ptr[0]} if that name resolves to ${ip}.`,
        );
      let back: string[] = [];
      try {
        back = await addressesOf(host, env.resolver);
      } catch {
        // Reported by forward_dns.
      }
      if (!back.includes(ip))
        return result(
          name,
          'failing',
          `The PTR of ${ip} is ${host}, but ${host} does not resolve back to ${ip} (forward-confirmed reverse DNS fails).`,
          `Publish an A/AAAA record ${host} -> ${ip}.`,
        );
      return result(name, 'ok', `${ip} -> ${host} -> ${ip} (forward-confirmed reverse DNS).`);
    }),
  );
}

function certificateCheck(config: Config, now: number): DoctorCheck {
  const paths = submissionTlsPaths(config);
  const production = !LOOPBACK.has(config.smtp.submission.host);
  const selfSignedStatus: CheckStatus = production ? 'failing' : 'warning';
  const fix =
    "Set smtp.submission.tls to the key and certificate files of a certificate from a public CA (e.g. Let's Encrypt) for " +
    config.delivery.hostname +
    '.';
  if (!existsSync(paths.cert)) {
    return paths.generated
      ? result(
          'tls_certificate',
          selfSignedStatus,
          'No submission certificate yet: the server generates a self-signed one on first start, which mail clients refuse to trust.',
          fix,
          production,
        )
      : result(
          'tls_certificate',
          'failing',
          `The configured certificate ${paths.cert} cannot be read.`,
          'Check smtp.submission.tls.cert.',
        );
  }
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(paths.cert));
  } catch (err) {
    return result(
      'tls_certificate',
      'failing',
      `${paths.cert} is not a PEM certificate: ${(err as Error).message}.`,
      fix,
    );
  }
  const validTo = Date.parse(cert.validTo);
  const validFrom = Date.parse(cert.validFrom);
  if (validTo < now)
    return result(
      'tls_certificate',
      'failing',
      `The submission certificate expired on ${new Date(validTo).toISOString().slice(0, 10)}.`,
      'Renew it (certbot renew, or your CA), then restart mailsvc.',
    );
  if (validFrom > now)
    return result(
      'tls_certificate',
      'failing',
      `The submission certificate is not valid before ${new Date(validFrom).toISOString()}: is the clock right?`,
      null,
    );
  const selfSigned = cert.issuer === cert.subject && cert.verify(cert.publicKey);
  if (selfSigned)
    return result(
      'tls_certificate',
      selfSignedStatus,
      `The submission certificate is self-signed${production ? ` and the listener is public (${config.smtp.submission.host})` : ''}: mail clients will refuse it.`,
      fix,
      production,
    );
  if (!cert.checkHost(config.delivery.hostname)) {
    return result(
      'tls_certificate',
      'warning',
      `The submission certificate does not name ${config.delivery.hostname} (${cert.subjectAltName ?? cert.subject}).`,
      'Use a certificate for the name clients connect to.',
      false,
    );
  }
  const days = Math.floor((validTo - now) / 86_400_000);
  if (days < 14)
    return result(
      'tls_certificate',
      'warning',
      `The submission certificate expires in ${days} days.`,
      'Renew it, then restart mailsvc.',
    );
  return result(
    'tls_certificate',
    'ok',
    `Certificate for ${config.delivery.hostname}, valid until ${new Date(validTo).toISOString().slice(0, 10)}.`,
  );
}

async function blocklistChecks(env: DoctorEnv, ips: string[]): Promise<DoctorCheck[]> {
  const zones = env.config.deliverability.dnsbl;
  if (zones.length === 0 || ips.length === 0) return [];
  return Promise.all(
    zones.map(async (zone) => {
      const name = `dnsbl ${zone}`;
      const listed: string[] = [];
      const refused: string[] = [];
      const errors: string[] = [];
      for (const ip of ips) {
        const query = `${reversedLabels(ip)}.${zone}`;
        let answers: string[];
        try {
          answers = await env.resolver.resolve4(query);
        } catch (err) {
          if (!isNoRecordError(err)) errors.push(`${ip}: ${(err as Error).message}`);
          continue;
        }
        // 127.255.255.x: the list refused the query (Spamhaus: public resolver, or over the free limit).
        if (answers.every((a) => a.startsWith('127.255.255.'))) {
          refused.push(ip);
          continue;
        }
        let reason = '';
        try {
          reason = (await env.resolver.resolveTxt(query)).map((t) => t.join('')).join(' ');
        } catch {
          // A listing without a TXT explanation.
        }
        listed.push(`${ip} (${answers.join(', ')}${reason ? `: ${reason}` : ''})`);
      }
      if (listed.length > 0)
        return result(
          name,
          'failing',
          `Listed on ${zone}: ${listed.join('; ')}.`,
          `Find out why (the list's lookup page), fix the cause, then request removal from ${zone}.`,
        );
      if (refused.length > 0) {
        return result(
          name,
          'warning',
          `${zone} refused to answer for ${refused.join(', ')} (it blocks public resolvers).`,
          'Query it through your own resolver: set delivery.dnsServers to a local unbound or bind.',
          false,
        );
      }
      if (errors.length > 0)
        return result(name, 'warning', `Could not query ${zone}: ${errors.join('; ')}.`, null, false);
      return result(name, 'ok', `${ips.join(', ')} not listed on ${zone}.`);
    }),
  );
}

async function clockCheck(env: DoctorEnv): Promise<DoctorCheck | null> {
  const servers = env.config.deliverability.ntpServers;
  if (servers.length === 0) return null;
  const problems: string[] = [];
  for (const server of servers) {
    const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(server);
    const host = m?.[1] ?? m?.[2] ?? server;
    const port = m?.[3] ? Number(m[3]) : 123;
    let address = host;
    if (!ipaddr.isValid(host)) {
      try {
        address = (await addressesOf(host, env.resolver))[0] ?? '';
      } catch (err) {
        problems.push(`${host}: ${(err as Error).message}`);
        continue;
      }
      if (!address) {
        problems.push(`${host} has no address`);
        continue;
      }
    }
    try {
      const { offsetMs } = await measureClockOffset(address, port, 3000, env.now);
      const seconds = Math.abs(offsetMs) / 1000;
      const side = offsetMs > 0 ? 'ahead of' : 'behind';
      const text = `The clock is ${seconds.toFixed(3)} s ${side} ${server}.`;
      const fix = 'Run an NTP client (systemd-timesyncd or chrony) and check `timedatectl`.';
      if (seconds <= 1) return result('clock', 'ok', text);
      if (seconds <= 10) return result('clock', 'warning', text, fix);
      return result(
        'clock',
        'failing',
        `${text} Receivers distrust mail dated in the future and DKIM signatures with wrong times.`,
        fix,
      );
    } catch (err) {
      problems.push(`${server}: ${(err as Error).message}`);
    }
  }
  return result(
    'clock',
    'warning',
    `Could not compare the clock with ${servers.join(', ')} (${problems.join('; ')}).`,
    'Allow outgoing NTP (UDP 123) or set deliverability.ntpServers to a reachable server; make sure an NTP client runs.',
    false,
  );
}

function dataDirCheck(env: DoctorEnv): DoctorCheck {
  const dir = env.config.dataDir;
  const probe = join(dir, `.doctor-${process.pid}`);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(probe, 'mailsvc doctor\n');
    const fd = openSync(probe, 'r+');
    fsyncSync(fd);
    closeSync(fd);
    rmSync(probe);
  } catch (err) {
    return result(
      'data_dir',
      'failing',
      `Cannot write to ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}.`,
      `Make ${dir} writable by the user mailsvc runs as.`,
    );
  }
  const fs = statfsSync(dir);
  const free = fs.bavail * fs.bsize;
  const total = fs.blocks * fs.bsize;
  const failAt = env.diskFailBytes ?? GiB;
  const warnAt = env.diskWarnBytes ?? 5 * GiB;
  const reserve = reserveFor(env.config.storage.minFreeBytes, total);
  const text = `${dir} is writable; ${(free / GiB).toFixed(1)} GiB free of ${(total / GiB).toFixed(1)} GiB (new mail is refused below ${(reserve / 1024 ** 2).toFixed(0)} MB: storage.minFreeBytes).`;
  if (free < reserve)
    return result(
      'data_dir',
      'failing',
      `${text} The server refuses new mail now (503 storage_full, SMTP 452); queued mail is still delivered.`,
      'Free disk space (old logs, backups) or move dataDir and the database to a larger disk; mail is accepted again within a second of it.',
    );
  if (free < failAt)
    return result(
      'data_dir',
      'failing',
      `${text} Below ${(failAt / GiB).toFixed(1)} GiB the queue and the database can run out of room.`,
      'Free disk space or move dataDir (and the database) to a larger disk.',
    );
  if (free < warnAt) return result('data_dir', 'warning', text, 'Free some disk space soon.', false);
  return result('data_dir', 'ok', text);
}

function inboundCheck(config: Config): DoctorCheck {
  if (config.smtp.inbound.enabled)
    return result(
      'inbound',
      'ok',
      `The inbound listener runs (port ${config.smtp.inbound.port}): bounces, complaints and DMARC and TLS reports come back.`,
      null,
      false,
    );
  return result(
    'inbound',
    'warning',
    'The inbound listener is off: asynchronous bounces, complaints and DMARC and TLS reports cannot come back, so bad addresses stay on your lists.',
    'Set smtp.inbound.enabled to true, port 25, and publish the MX records `mailsvc domains dns` prints.',
    false,
  );
}

async function domainsCheck(env: DoctorEnv): Promise<DoctorCheck> {
  const domains = await listAllDomains(env.db);
  if (domains.length === 0)
    return result(
      'domains',
      'not_published',
      'No sending domain yet.',
      'Add one: mailsvc domains add example.com, then publish what mailsvc domains dns prints.',
      false,
    );
  const problems: string[] = [];
  for (const d of domains) {
    const checks = domainChecksOf(d);
    if (!checks) {
      problems.push(`${d.name} (never checked)`);
      continue;
    }
    const bad = (['dkim', 'spf', 'dmarc', 'return_path_mx', 'mta_sts', 'tls_rpt'] as const).filter(
      (k) => checks[k] && needsAction(checks[k]),
    );
    if (bad.length > 0 || d.status !== 'verified')
      problems.push(`${d.name} (${[...(d.status !== 'verified' ? ['not verified'] : []), ...bad].join(', ')})`);
  }
  if (problems.length === 0)
    return result('domains', 'ok', `${domains.length} domain(s), every check passed at the last run.`, null, false);
  return result(
    'domains',
    'failing',
    `Domains that need attention: ${problems.join('; ')}.`,
    'Run mailsvc domains check DOMAIN for what to publish.',
    false,
  );
}

/** Every check, in the order a person fixes them. */
export async function runDoctor(env: DoctorEnv): Promise<DoctorCheck[]> {
  const { config } = env;
  const forward = await forwardDnsCheck(env);
  let ips: string[] = [];
  try {
    ips = await sendingAddresses(config, env.resolver);
  } catch {
    // Reported by forward_dns.
  }
  const [reverse, blocklists, clock] = await Promise.all([
    reverseDnsChecks(env, ips),
    blocklistChecks(env, ips),
    clockCheck(env),
  ]);
  return [
    hostnameCheck(config),
    ...publicSettingsChecks(config),
    forward.check,
    ...reverse,
    certificateCheck(config, env.now()),
    ...blocklists,
    ...(clock ? [clock] : []),
    dataDirCheck(env),
    inboundCheck(config),
    await domainsCheck(env),
    ...(await ipPoolChecks(env.db, env.resolver)),
  ];
}

/** A check that makes `mailsvc doctor` exit non-zero. */
export const doctorFails = (c: DoctorCheck): boolean =>
  c.status === 'failing' || (c.required && c.status === 'not_published');

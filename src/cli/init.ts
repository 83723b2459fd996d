import { existsSync, writeFileSync } from 'node:fs';
import { hostname, networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import ipaddr from 'ipaddr.js';
import type { Command } from 'commander';
import { loadConfig } from '../config/load-config.js';
import { isFullyQualified } from '../checks/doctor.js';
import { validationError } from '../shared/errors.js';
import { commandName } from './command-name.js';
import { CliExit, globals, output, table, type CliIo } from './io.js';

/**
 * `mailsvc init`: from one answer, the server's public name, every setting that must name it
 * (the EHLO name, the DKIM host, the public URL, where reports come back) and the records that
 * set the server itself up. Asks on a terminal; takes flags otherwise.
 */

interface InitAnswers {
  host: string;
  /** Public addresses of the server (for the A/AAAA and PTR records); may be empty. */
  ips: string[];
  /** Listen on 25, 587 and 465 on every interface, as a mail server on the internet does. */
  standardPorts: boolean;
  /** Where the database and generated files live, absolute; absent: `./data` where serve runs. */
  dataDir?: string | undefined;
}

const DEFAULT_FILE = 'mailsvc.json';

const letsEncrypt = (host: string) => ({
  key: `/etc/letsencrypt/live/${host}/privkey.pem`,
  cert: `/etc/letsencrypt/live/${host}/fullchain.pem`,
});

/** The configuration file's content: only what init decides, the rest stays at its default. */
export function initConfig(answers: InitAnswers): Record<string, unknown> {
  const { host } = answers;
  const cert = letsEncrypt(host);
  return {
    ...(answers.dataDir ? { database: `sqlite:${join(answers.dataDir, 'mailsvc.db')}`, dataDir: answers.dataDir } : {}),
    // Behind a reverse proxy on this host that terminates TLS for the public URL (Caddy in front
    // of 127.0.0.1:3000): only it is believed about the client's address, not any hop count.
    http: { publicUrl: `https://${host}`, trustProxy: ['127.0.0.1', '::1'] },
    delivery: { hostname: host, returnPathSubdomain: 'bounces' },
    dkim: { host: `dkim.${host}` },
    deliverability: { reportDomain: host, ...(answers.ips.length > 0 ? { sendingIps: answers.ips } : {}) },
    ...(answers.standardPorts
      ? {
          smtp: {
            submission: { host: '0.0.0.0', port: 587, tlsPort: 465, ...(existsSync(cert.cert) ? { tls: cert } : {}) },
            inbound: { enabled: true, host: '0.0.0.0', port: 25 },
          },
        }
      : {}),
  };
}

interface Row {
  type: string;
  name: string;
  value: string;
}

/** The records of the server itself, once: its name, and the MX that brings reports and bounces back. */
function serverRecords(answers: InitAnswers): { publish: Row[]; ptr: Row[] } {
  const { host } = answers;
  const v4 = answers.ips.filter((ip) => ipaddr.parse(ip).kind() === 'ipv4');
  const v6 = answers.ips.filter((ip) => ipaddr.parse(ip).kind() === 'ipv6');
  const publish = [
    ...(v4.length > 0
      ? v4.map((ip) => ({ type: 'A', name: host, value: ip }))
      : [{ type: 'A', name: host, value: "<the server's IPv4 address>" }]),
    ...v6.map((ip) => ({ type: 'AAAA', name: host, value: ip })),
    // dmarc@ and tls-reports@<host> receive the reports of every sending domain.
    { type: 'MX', name: host, value: `10 ${host}` },
  ];
  const ptr = (answers.ips.length > 0 ? answers.ips : ["<the server's IPv4 address>"]).map((ip) => ({
    type: 'PTR',
    name: ip,
    value: host,
  }));
  return { publish, ptr };
}

/** Public addresses of this machine's interfaces: the likely answer to "which addresses?". */
function publicAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .flatMap((i) =>
      i && !i.internal && ipaddr.isValid(i.address) && ipaddr.process(i.address).range() === 'unicast'
        ? [ipaddr.process(i.address).toString()]
        : [],
    );
}

function checkHost(value: string): string {
  const host = value.trim().toLowerCase().replace(/\.$/, '');
  if (!isFullyQualified(host))
    throw validationError(
      'host',
      `"${value}" is not a public host name; give the name this server is reached at, e.g. mail.example.com`,
    );
  return host;
}

function checkIps(values: string[]): string[] {
  return values
    .flatMap((v) => v.split(/[\s,]+/))
    .filter(Boolean)
    .map((ip) => {
      if (!ipaddr.isValid(ip)) throw validationError('ip', `"${ip}" is not an IP address`);
      return ipaddr.process(ip).toString();
    });
}

async function askAnswers(
  io: CliIo,
  ask: (q: string) => Promise<string>,
  given: { host?: string; ips: string[] },
): Promise<InitAnswers> {
  io.stderr('Set up mailsvc for a real domain. Press Enter to take the value in brackets.\n');
  const suggested = isFullyQualified(hostname()) ? hostname() : '';
  let host = given.host;
  while (host === undefined) {
    const answer =
      (
        await ask(`Public host name of this server${suggested ? ` [${suggested}]` : ' (e.g. mail.example.com)'}: `)
      ).trim() || suggested;
    try {
      host = checkHost(answer);
    } catch (err) {
      io.stderr(`  ${(err as Error).message}\n`);
    }
  }
  let ips = given.ips;
  while (ips.length === 0) {
    const detected = publicAddresses();
    const answer = (
      await ask(
        `Its public IP addresses, comma-separated${detected.length > 0 ? ` [${detected.join(', ')}]` : ' (Enter to fill them in later)'}: `,
      )
    ).trim();
    try {
      ips = checkIps([answer || detected.join(',')]);
      break;
    } catch (err) {
      io.stderr(`  ${(err as Error).message}\n`);
    }
  }
  const ports = (
    await ask('Listen on the standard mail ports (25 for bounces and reports, 587 and 465 for applications)? [Y/n]: ')
  )
    .trim()
    .toLowerCase();
  return { host, ips, standardPorts: !ports.startsWith('n') };
}

export function registerInitCommands(program: Command, io: CliIo): void {
  program
    .command('init')
    .description(
      'write a configuration file for a server on the internet from its public host name, and print the DNS records of the server itself',
    )
    .option('--host <name>', 'the public host name of this server, e.g. mail.example.com (asked on a terminal)')
    .option('--ip <address...>', 'its public IP addresses (for the A, AAAA and PTR records)')
    .option('--local-ports', 'keep the unprivileged ports (2587, 2465; inbound off) instead of 25, 587 and 465')
    .option('--data-dir <dir>', 'where the SQLite database and generated files live (default: ./data where serve runs)')
    .option('--force', 'replace the configuration file if it exists')
    .action(
      async (
        opts: { host?: string; ip?: string[]; localPorts?: boolean; dataDir?: string; force?: boolean },
        cmd: Command,
      ) => {
        const file = globals(cmd).config ?? io.env.MAILSVC_CONFIG ?? DEFAULT_FILE;
        if (existsSync(file) && !opts.force) {
          io.stderr(
            `mailsvc: ${file} exists already; run with --force to replace it, or --config FILE to write another\n`,
          );
          throw new CliExit(1);
        }
        const ips = checkIps(opts.ip ?? []);
        let answers: InitAnswers;
        if (opts.host === undefined && io.stdinIsTTY && io.ask) {
          answers = await askAnswers(io, io.ask, { ips });
          if (opts.localPorts) answers.standardPorts = false;
        } else {
          if (opts.host === undefined) {
            io.stderr(
              'mailsvc: init needs --host NAME (the public host name of this server) when it cannot ask at a terminal\n',
            );
            throw new CliExit(2);
          }
          answers = { host: checkHost(opts.host), ips, standardPorts: !opts.localPorts };
        }
        if (opts.dataDir) answers.dataDir = resolve(opts.dataDir);
        const config = initConfig(answers);
        // What is written must load: the same loader serve uses reads it back.
        loadConfig({ env: {}, overrides: config });
        writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o640 });
        const records = serverRecords(answers);
        const mailsvc = commandName(io.env);
        const { host } = answers;
        const rows = (list: Row[]) => table(list.map((r) => [`  ${r.type}`, r.name, r.value]));
        output(cmd, io, { file, config, records }, () =>
          [
            `Wrote ${file}: the server is ${host}; DKIM keys go under dkim.${host}; links in mail point at https://${host};`,
            `DMARC and TLS reports come to dmarc@${host} and tls-reports@${host}; bounces to bounces.<each sending domain>.`,
            '',
            `Publish these records of the server itself, once, in the zone that holds ${host}:`,
            rows(records.publish),
            '',
            'Ask your hosting provider to set the reverse DNS (PTR) of each address to the host name:',
            rows(records.ptr),
            '',
            `Each sending domain's DKIM keys are TXT records under dkim.${host}, in the same zone: \`${mailsvc} domains dns DOMAIN\` prints them, with the records the domain's owner publishes.`,
            '',
            'Next:',
            ...(answers.standardPorts && !existsSync(letsEncrypt(host).cert)
              ? [
                  `  - a TLS certificate for ${host} (e.g. \`certbot certonly --standalone -d ${host}\`), then set smtp.submission.tls in ${file}`,
                ]
              : []),
            `  - a reverse proxy with TLS for https://${host} in front of 127.0.0.1:3000 (docs/operations.md)`,
            `  - start it: \`${mailsvc} serve --config ${file}\` (or MAILSVC_CONFIG=${file}); ports 25, 587 and 465 need root or CAP_NET_BIND_SERVICE (config/mailsvc.service)`,
            `  - check it: \`${mailsvc} doctor --config ${file}\`, then add a domain: \`${mailsvc} domains add example.com --config ${file}\``,
            '  - the whole path: docs/getting-started.md',
          ].join('\n'),
        );
      },
    );
}

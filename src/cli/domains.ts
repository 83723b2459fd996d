import type { Command } from 'commander';
import type { DnsRecord, DomainView } from '../services/domains/domains.js';
import { needsAction, type Check } from '../checks/check-status.js';
import { CliExit, output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

const recordRows = (records: DnsRecord[]) =>
  records.map((r) => [`  ${r.type}`, r.name, r.type === 'TXT' ? `"${r.value}"` : r.value]);

export function registerDomainCommands(program: Command, io: CliIo): void {
  const domains = program.command('domains').description('sending domains and their DKIM keys');
  const ws = (c: Command) => c.option('--workspace <id>', 'workspace (default: the default workspace)');

  ws(
    domains.command('add <domain>').description('add a sending domain: three DKIM selectors with their own keys'),
  ).action(async (name: string, opts: { workspace?: string }, cmd: Command) => {
    const domain = await withRuntime(cmd, io, async (rt) =>
      rt.services.domains.add(await workspaceOf(rt, opts.workspace), { domain: name }),
    );
    output(cmd, io, domain, () =>
      [
        `Added ${domain.domain_name} (id ${domain.id}, ${domain.status}). Publish these DKIM records:`,
        table(recordRows(domain.dns_records)),
        '',
        `Every record, SPF and the operator's DKIM keys included: mailsvc domains dns ${domain.domain_name}`,
        `Then: mailsvc domains verify ${domain.domain_name}`,
      ].join('\n'),
    );
  });

  ws(domains.command('list').description('list domains and their status')).action(
    async (opts: { workspace?: string }, cmd: Command) => {
      const items = await withRuntime(cmd, io, async (rt) =>
        rt.services.domains.list(await workspaceOf(rt, opts.workspace)),
      );
      output(cmd, io, items, () =>
        items.length === 0
          ? 'No domains.'
          : table([
              ['ID', 'DOMAIN', 'STATUS', 'CREATED', 'LAST CHECK'],
              ...items.map((d) => [
                d.id,
                d.domain_name,
                d.status,
                d.created_at,
                d.last_check_error ?? d.last_checked_at ?? 'never',
              ]),
            ]),
      );
    },
  );

  ws(
    domains
      .command('dns <domain>')
      .description(
        'every DNS record to publish: the customer CNAMEs, the TXT keys under dkim.host, the bounce domain and the MX for receiving',
      ),
  ).action(async (name: string, opts: { workspace?: string }, cmd: Command) => {
    const records = await withRuntime(cmd, io, async (rt) =>
      rt.services.domains.recordsToPublish(await workspaceOf(rt, opts.workspace), name),
    );
    const json = {
      domain: records.domain.domain_name,
      customer: records.customer,
      dkim_host: records.dkimHost,
      return_path: records.returnPath,
      receiving: records.receiving,
      reports: records.reports,
      reports_host: records.reportsHost,
    };
    output(cmd, io, json, () => dnsText(records));
  });

  ws(
    domains
      .command('verify <domain>')
      .description('check DNS now; verified when every CNAME resolves to a matching published key'),
  ).action(async (name: string, opts: { workspace?: string }, cmd: Command) => {
    const result = await withRuntime(cmd, io, async (rt) =>
      rt.services.domains.verify(await workspaceOf(rt, opts.workspace), name),
    );
    output(cmd, io, result, () =>
      [
        `${result.domain.domain_name}: ${result.domain.status}`,
        ...result.checks.map((c) => `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.record.name}${c.error ? `: ${c.error}` : ''}`),
      ].join('\n'),
    );
    if (result.domain.status !== 'verified') throw new CliExit(1);
  });

  ws(
    domains
      .command('check [domain]')
      .description(
        'deliverability checks now (DKIM, SPF, DMARC, return-path MX, MTA-STS, TLS-RPT): what to fix, in words; exit 1 when a required check fails',
      ),
  ).action(async (name: string | undefined, opts: { workspace?: string }, cmd: Command) => {
    const checked = await withRuntime(cmd, io, async (rt) => {
      const workspaceId = await workspaceOf(rt, opts.workspace);
      const names = name ? [name] : (await rt.services.domains.list(workspaceId)).map((d) => d.id);
      const out: DomainView[] = [];
      for (const n of names) out.push((await rt.services.domains.verify(workspaceId, n)).domain);
      return out;
    });
    output(cmd, io, name ? checked[0] : checked, () =>
      checked.length === 0
        ? 'No domains: add one with `mailsvc domains add DOMAIN`.'
        : checked.map(describeChecks).join('\n\n'),
    );
    if (checked.some((d) => d.checks && checksOf(d).some(([, c]) => needsAction(c)))) throw new CliExit(1);
  });

  ws(domains.command('remove <domain>').description('remove a domain and its keys')).action(
    async (name: string, opts: { workspace?: string }, cmd: Command) => {
      await withRuntime(cmd, io, async (rt) => rt.services.domains.remove(await workspaceOf(rt, opts.workspace), name));
      output(cmd, io, { removed: name }, () => `Removed ${name}.`);
    },
  );
}

const checksOf = (domain: DomainView): Array<[string, Check]> =>
  domain.checks
    ? (['dkim', 'spf', 'dmarc', 'return_path_mx', 'mta_sts', 'tls_rpt'] as const).flatMap((k) =>
        domain.checks![k] ? [[k, domain.checks![k]] as [string, Check]] : [],
      )
    : [];

/** One line per check, then what was found and what to publish under the checks that need it. */
export function describeChecks(domain: DomainView): string {
  const checks = checksOf(domain);
  const todo = checks.filter(([, c]) => needsAction(c)).length;
  const lines = [
    `${domain.domain_name} (${domain.status}): ${todo === 0 ? 'nothing to fix' : `${todo} ${todo === 1 ? 'check needs' : 'checks need'} attention`}`,
  ];
  for (const [name, c] of checks) {
    lines.push(
      `  ${c.status.padEnd(13)} ${name.padEnd(14)} ${c.required || /^optional\b/i.test(c.message) ? '' : '(optional) '}${c.message}`,
    );
    if (c.status === 'ok') continue;
    if (c.found) for (const f of c.found.split('\n')) lines.push(`${' '.repeat(31)}found:   ${f}`);
    for (const r of c.publish)
      lines.push(`${' '.repeat(31)}publish: ${r.type} ${r.name} ${r.type === 'TXT' ? `"${r.value}"` : r.value}`);
  }
  return lines.join('\n');
}

type Records = Awaited<ReturnType<import('../services/domains/domains.js').DomainService['recordsToPublish']>>;

/**
 * Every record once, grouped by who publishes it and whether mail needs it. SPF is required
 * here as in `domains check` and `doctor`: Gmail and Yahoo refuse mail that fails it, even
 * though `domains verify` (DKIM) does not look at it.
 */
function dnsText(records: Records): string {
  const domain = records.domain.domain_name;
  const spf = records.returnPath.filter((r) => r.type === 'TXT');
  const bounceMx = records.returnPath.filter((r) => r.type === 'MX');
  const group = (title: string, list: DnsRecord[]) =>
    list.length === 0 ? [] : ['', `  ${title}`, table(recordRows(list).map((r) => ['  ' + r[0]!, ...r.slice(1)]))];
  return [
    `In the zone of ${domain} (the domain owner publishes):`,
    ...group('Required, to verify the domain (DKIM signing; `domains verify` checks these):', records.customer),
    ...group(
      'Required, for delivery (SPF of the Return-Path domain; `domains check` checks it; merge with an existing SPF record):',
      spf,
    ),
    ...group('Optional, so that bounces come back to this server (the inbound listener, smtp.inbound):', bounceMx),
    ...group('Optional, to receive mail at the domain (receiving routes; replaces its current MX):', records.receiving),
    ...group(
      'Optional, DMARC and TLS reports to this server (merge the rua into an existing DMARC record):',
      records.reports,
    ),
    '',
    `In the zone of the DKIM host ${records.dkimHost[0]?.name.split('.').slice(1).join('.') ?? ''} (the mailsvc operator publishes, once per domain):`,
    table(recordRows(records.dkimHost)),
    ...(records.reportsHost.length > 0
      ? [
          '',
          "In the report domain's zone (the mailsvc operator publishes, once per domain, so receivers send the reports):",
          table(recordRows(records.reportsHost)),
        ]
      : []),
  ].join('\n');
}

import type { Command } from 'commander';
import type { DnsRecord } from '../services/domains.js';
import { CliExit, output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

const recordRows = (records: DnsRecord[]) => records.map((r) => [`  ${r.type}`, r.name, r.type === 'TXT' ? `"${r.value}"` : r.value]);

export function registerDomainCommands(program: Command, io: CliIo): void {
  const domains = program.command('domains').description('sending domains and their DKIM keys');
  const ws = (c: Command) => c.option('--workspace <id>', 'workspace (default: the default workspace)');

  ws(domains.command('add <domain>').description('add a sending domain: three DKIM selectors with their own keys'))
    .action(async (name: string, opts: { workspace?: string }, cmd: Command) => {
      const domain = await withRuntime(cmd, io, async (rt) => rt.services.domains.add(await workspaceOf(rt, opts.workspace), { domain: name }));
      output(cmd, io, domain, () =>
        [`Added ${domain.domain_name} (id ${domain.id}, ${domain.status}). Publish:`, table(recordRows(domain.dns_records)), '', `Then: mailsvc domains verify ${domain.domain_name}`].join('\n'),
      );
    });

  ws(domains.command('list').description('list domains and their status')).action(async (opts: { workspace?: string }, cmd: Command) => {
    const items = await withRuntime(cmd, io, async (rt) => rt.services.domains.list(await workspaceOf(rt, opts.workspace)));
    output(cmd, io, items, () =>
      items.length === 0
        ? 'No domains.'
        : table([['ID', 'DOMAIN', 'STATUS', 'CREATED', 'LAST CHECK'], ...items.map((d) => [d.id, d.domain_name, d.status, d.created_at, d.last_check_error ?? d.last_checked_at ?? 'never'])]),
    );
  });

  ws(domains.command('dns <domain>').description('every DNS record to publish: the customer CNAMEs, the TXT keys under dkim.host, the bounce domain and the MX for receiving'))
    .action(async (name: string, opts: { workspace?: string }, cmd: Command) => {
      const records = await withRuntime(cmd, io, async (rt) => rt.services.domains.recordsToPublish(await workspaceOf(rt, opts.workspace), name));
      output(cmd, io, { domain: records.domain.domain_name, customer: records.customer, dkim_host: records.dkimHost, return_path: records.returnPath, receiving: records.receiving }, () =>
        [
          `In the zone of ${records.domain.domain_name} (the domain owner publishes):`,
          table(recordRows(records.customer)),
          '',
          'In the DKIM host zone (the mailsvc operator publishes, once per domain):',
          table(recordRows(records.dkimHost)),
          '',
          'Recommended for the bounce (Return-Path) domain, in the zone of the domain (not checked by verify):',
          table(recordRows(records.returnPath)),
          '',
          'To receive mail at the domain (receiving routes; the inbound listener on port 25 of this host):',
          table(recordRows(records.receiving)),
        ].join('\n'),
      );
    });

  ws(domains.command('verify <domain>').description('check DNS now; verified when every CNAME resolves to a matching published key'))
    .action(async (name: string, opts: { workspace?: string }, cmd: Command) => {
      const result = await withRuntime(cmd, io, async (rt) => rt.services.domains.verify(await workspaceOf(rt, opts.workspace), name));
      output(cmd, io, result, () =>
        [
          `${result.domain.domain_name}: ${result.domain.status}`,
          ...result.checks.map((c) => `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.record.name}${c.error ? `: ${c.error}` : ''}`),
        ].join('\n'),
      );
      if (result.domain.status !== 'verified') throw new CliExit(1);
    });

  ws(domains.command('remove <domain>').description('remove a domain and its keys')).action(async (name: string, opts: { workspace?: string }, cmd: Command) => {
    await withRuntime(cmd, io, async (rt) => rt.services.domains.remove(await workspaceOf(rt, opts.workspace), name));
    output(cmd, io, { removed: name }, () => `Removed ${name}.`);
  });
}

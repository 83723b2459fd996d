import type { Command } from 'commander';
import type { ProviderSum } from '../store/delivery-destinations.js';
import { output, table, withRuntime, type CliIo } from './io.js';

const stateText = (p: ProviderSum): string =>
  p.state === 'paused'
    ? `paused until ${p.paused_until}`
    : p.state === 'backoff'
      ? 'backoff: limits lowered, recovering'
      : 'normal';

/** `mailsvc delivery status`: what the running nodes' delivery gates report per provider and source address. */
export function registerDeliveryCommands(program: Command, io: CliIo): void {
  const delivery = program
    .command('delivery')
    .description('delivery across the running nodes: providers, source addresses, back-off');
  delivery
    .command('status')
    .description(
      'each destination (mailbox provider, or MX host of none, per source address): state (normal, backoff, paused), limits now and configured, the last slow-down reply',
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const providers = await withRuntime(cmd, io, (rt) => rt.services.queue.providers());
      output(cmd, io, { providers }, () =>
        providers.length === 0
          ? 'No destination reported in the last 30 s (no delivery running, or nothing sent lately).'
          : [
              table([
                ['PROVIDER', 'SOURCE', 'STATE', 'RUNNING', 'WAITING', 'ALLOWED', 'PER MINUTE', 'DOMAINS'],
                ...providers.map((p) => [
                  p.provider,
                  p.source ?? 'default',
                  stateText(p),
                  String(p.active),
                  String(p.waiting),
                  `${p.allowed} of ${p.limit.concurrency ?? '?'}`,
                  `${p.per_minute ?? '?'} of ${p.limit.per_minute ?? '?'}`,
                  p.domains.slice(0, 3).join(' ') + (p.domains.length > 3 ? ` +${p.domains.length - 3}` : ''),
                ]),
              ]),
              ...providers
                .filter((p) => p.last_reply)
                .map(
                  (p) =>
                    `${p.provider} from ${p.source ?? 'default'}: last slow-down reply at ${p.last_reply_at}: ${p.last_reply}`,
                ),
            ].join('\n'),
      );
    });
}

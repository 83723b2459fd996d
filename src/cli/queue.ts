import type { Command } from 'commander';
import { gateText, type DestinationView, type QueueItemView } from '../services/queue.js';
import { validationError } from '../shared/errors.js';
import { CliExit, output, table, withRuntime, type CliIo } from './io.js';

const count = (name: string) => (value: string) => {
  if (!/^\d+$/.test(value)) throw validationError(name, 'must be a whole number');
  return Number(value);
};

const rows = (items: QueueItemView[]) =>
  table([
    ['ID', 'EMAIL', 'RECIPIENT', 'STATUS', 'PRIORITY', 'ATTEMPTS', 'NEXT ATTEMPT', 'WHY IT WAITS'],
    ...items.map((q) => [
      q.id,
      q.email_id,
      q.recipient,
      q.status,
      q.priority,
      String(q.attempts),
      q.next_attempt_at,
      q.waiting ?? (q.last_response ?? '').slice(0, 60),
    ]),
  ]);

const gates = (destinations: DestinationView[]) =>
  destinations.length === 0
    ? ''
    : `${table([
        ['DESTINATION', 'RUNNING', 'ALLOWED', 'WAITING', 'STATE'],
        ...destinations.map((d) => [
          d.domain,
          String(d.active),
          String(d.allowed),
          String(d.waiting),
          `${gateText(d).replace(/^.*waiting, /, '')}${via(d)}`,
        ]),
      ])}\n\n`;

/** The provider and source address a destination's limits are kept for, when not the domain itself from the system address. */
const via = (d: DestinationView): string =>
  d.provider === d.domain && !d.source
    ? ''
    : ` (${d.provider === d.domain ? '' : `provider ${d.provider}`}${d.provider !== d.domain && d.source ? ', ' : ''}${d.source ? `from ${d.source}` : ''})`;

export function registerQueueCommands(program: Command, io: CliIo): void {
  const queue = program.command('queue').description('the delivery queue: one row per recipient');

  queue
    .command('list')
    .description('list queue rows, soonest due first (default: waiting and in flight)')
    .option(
      '--status <list>',
      'comma-separated: queued, sending, deferred, delivered, bounced, failed, cancelled, suppressed, or all',
      'queued,sending,deferred',
    )
    .option('--workspace <id>', 'only this workspace')
    .option('--limit <n>', 'at most this many', count('limit'), 100)
    .option('--offset <n>', 'skip this many', count('offset'), 0)
    .action(async (opts: { status: string; workspace?: string; limit: number; offset: number }, cmd: Command) => {
      const statuses =
        opts.status === 'all'
          ? undefined
          : opts.status
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean);
      const { items, total, destinations } = await withRuntime(cmd, io, (rt) =>
        rt.services.queue.list({ workspaceId: opts.workspace, statuses, limit: opts.limit, offset: opts.offset }),
      );
      output(cmd, io, { items, total, destinations }, () =>
        items.length === 0
          ? 'The queue is empty.'
          : `${gates(destinations)}${rows(items)}${items.length < total ? `\n(${items.length} of ${total}; --offset for more)` : ''}`,
      );
    });

  queue
    .command('retry [ids...]')
    .description('make waiting rows due now (queue item or email ids); --all for every deferred row')
    .option('--all', 'every deferred row')
    .option('--workspace <id>', 'with --all: only this workspace')
    .action(async (ids: string[], opts: { all?: boolean; workspace?: string }, cmd: Command) => {
      if (!opts.all && ids.length === 0) throw validationError('ids', 'name queue item or email ids, or use --all');
      const retried = await withRuntime(cmd, io, (rt) =>
        rt.services.queue.retry(opts.all ? 'all-deferred' : ids, opts.workspace),
      );
      output(
        cmd,
        io,
        { retried: retried.length, items: retried },
        () => `${retried.length} row(s) due now; a running server picks them up at its next poll.`,
      );
      // Named rows that are all finished or in flight: the operator asked for something that did not happen.
      if (!opts.all && retried.length === 0) {
        io.stderr(
          'mailsvc: nothing was retried: the rows named are delivered, bounced, cancelled or being delivered right now (see `mailsvc queue list --status all`)\n',
        );
        throw new CliExit(1);
      }
    });

  queue
    .command('cancel <ids...>')
    .description('cancel waiting rows (queue item or email ids); rows in flight or finished are left alone')
    .action(async (ids: string[], _opts: unknown, cmd: Command) => {
      const cancelled = await withRuntime(cmd, io, (rt) => rt.services.queue.cancel(ids));
      output(cmd, io, { cancelled: cancelled.length, items: cancelled }, () => `Cancelled ${cancelled.length} row(s).`);
      if (cancelled.length === 0) {
        io.stderr('mailsvc: nothing was cancelled: the rows named are finished or being delivered right now\n');
        throw new CliExit(1);
      }
    });
}

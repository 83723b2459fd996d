import type { Config, DomainLimit } from '../config/schema.js';
import type { Clock } from '../shared/clock.js';
import type { DnsResolver } from '../shared/dns.js';
import type { CommitBatcher } from '../store/infra/commit-batcher.js';
import type { Db } from '../store/infra/db.js';
import { findWarmupCount, giveBackWarmup, reserveWarmup, type IpWarmup } from '../store/warmups.js';
import type { DestinationBook } from './destination-book.js';
import { keyOf } from './destination-key.js';
import type { Destination, WarmupShare } from './job-steps.js';
import { groupOf, providerTable } from './providers.js';
import { resolveMxRoute } from './resolve-route.js';
import { sourcePicker, type Source } from './source-address.js';
import type { Job } from './transmit-job.js';
import { warmupDay, warmupDirectory } from './warmup.js';

interface ChooseDestinationDeps {
  db: Db;
  clock: Clock;
  config: Config['delivery'];
  /** The cached resolver delivery routes with (the MX look-up made here is the one it makes next). */
  resolver: DnsResolver;
  batcher: CommitBatcher;
  book: DestinationBook;
  limitOf(key: string): DomainLimit;
}

type DestinationChoice = Destination | { wait: number; reason: string };

/**
 * Where a job's limits come from: its source address and its group (the recipient domain
 * when delivery.domainLimits names it, else the mailbox provider of its MX hosts, else its
 * MX host). An address in warm-up takes the job only if its recipients fit under today's cap
 * for the group (counted in the database, shared by the nodes; only looked at here: the job
 * counts against the cap once it has its slot, job-steps.ts); when no address of the pool can
 * take it, it waits.
 */
export function destinationChooser(
  deps: ChooseDestinationDeps,
): (job: Job, recipients: number) => Promise<DestinationChoice> {
  const { config, clock } = deps;
  const providers = providerTable(config.providers);
  const sources = sourcePicker(deps.db, () => clock.now(), config.hostname);
  const warmups = warmupDirectory(deps.db, () => clock.now());
  /** Each pool's next address: its mail is spread over all of them in turn. */
  const turns = new Map<string, number>();

  /**
   * The pool's addresses for a job, in the order to try them: each pool's mail spread over its
   * addresses in turn; addresses in warm-up (under today's cap) first for marketing, last for
   * transactional mail, which takes the warm addresses first.
   */
  const candidatesFor = async (job: Job): Promise<Array<{ source: Source; warmup: IpWarmup | undefined }>> => {
    const list = await sources.sourcesOf(job.email.ip_pool_id);
    const key = job.email.ip_pool_id ?? '';
    const turn = (turns.get(key) ?? 0) % list.length;
    turns.set(key, (turn + 1) % list.length);
    const rotated = [...list.slice(turn), ...list.slice(0, turn)];
    const now = clock.now();
    const all = await Promise.all(
      rotated.map(async (source) => ({
        source,
        warmup: source.address ? await warmups.get(source.address) : undefined,
      })),
    );
    const warming = all.filter((c) => c.warmup && warmupDay(c.warmup, config.warmup, now).cap !== null);
    const warm = all.filter((c) => !warming.includes(c));
    return job.email.type === 'transactional' ? [...warm, ...warming] : [...warming, ...warm];
  };

  /** The first candidate that may take `recipients` more today (with its share of the warm-up cap to take), or why none may. */
  const sourceFor = async (
    job: Job,
    group: string,
    recipients: number,
  ): Promise<{ source: Source; warmup: WarmupShare | undefined } | { wait: number; reason: string }> => {
    const now = clock.now();
    let until = Infinity;
    const full: string[] = [];
    for (const c of await candidatesFor(job)) {
      const day = c.warmup ? warmupDay(c.warmup, config.warmup, now) : null;
      if (day && day.cap !== null) {
        const cap = day.cap;
        const share = { address: c.source.address!, provider: group, periodStart: day.periodStart };
        // Only a look here: the job counts against the cap when it has its slot (job-steps.ts).
        if (recipients > cap || (await findWarmupCount(deps.db, share)) + recipients > cap) {
          until = Math.min(until, day.nextPeriod);
          full.push(`${c.source.address} has sent its ${cap} of warm-up day ${day.day + 1} to ${group}`);
          continue;
        }
        return {
          source: c.source,
          warmup: {
            reserve: () => deps.batcher.run((trx) => reserveWarmup(trx, share, recipients, cap), 'background'),
            giveBack: (n) => deps.batcher.run((trx) => giveBackWarmup(trx, share, n), 'background'),
          },
        };
      }
      return { source: c.source, warmup: undefined };
    }
    const pool = (await sources.sourcesOf(job.email.ip_pool_id))[0]?.pool ?? 'default';
    return {
      wait: until,
      reason: `IP warm-up: ${full.join('; ')}, and pool ${pool} has no warm address: waits until ${new Date(until).toISOString()}`,
    };
  };

  return async (job, recipients) => {
    const own = Object.hasOwn(config.domainLimits, job.domain);
    let hosts: Array<{ name: string; priority: number }> = [];
    if (!own && !config.relay) {
      const mx = await resolveMxRoute(job.domain, deps.resolver);
      if (mx.kind === 'hosts') hosts = mx.hosts;
    }
    const { group, provider } = groupOf(providers, job.domain, hosts, own);
    const chosen = await sourceFor(job, group, recipients);
    if ('wait' in chosen) return chosen;
    const { source, warmup } = chosen;
    const key = keyOf(group, source.address);
    deps.book.use(key, job.domain, { group, provider, source: source.address });
    return { key, source, group, messagesPerConnection: deps.limitOf(key).messagesPerConnection, warmup };
  };
}

import type { Config } from '../config/schema.js';
import type { PolicyFetcher } from '../delivery/mta-sts.js';
import type { Clock } from '../shared/clock.js';
import type { DnsResolver } from '../shared/dns.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Composer } from '../messages/compose.js';
import type { MessageLinks } from '../messages/links.js';
import type { Db, Dialect } from '../store/infra/db.js';
import type { RowCache } from '../store/infra/row-cache.js';
import type { FreeSpace } from '../store/infra/free-space.js';

/** What every service receives from the composition root; nothing reads globals. */
export interface ServiceDeps {
  db: Db;
  dialect: Dialect;
  config: Config;
  clock: Clock;
  logger: Logger;
  resolver: DnsResolver;
  /** 32 bytes that encrypt secrets at rest. */
  secretKey: Buffer;
  /** Keys, workspaces and domains in memory where a read is a round trip (Store.rows). */
  rows: RowCache;
  /** Resolves once every committed write is on disk (Store.durable): before answering a client. */
  durable: () => Promise<void>;
  /** The disk's reserve (`storage.minFreeBytes`): new mail, imports and uploads call `ensure()` first. */
  space: FreeSpace;
  /** Builds a message's MIME on the worker threads shared with DKIM signing: for delivery's work (a campaign's messages are composed when first delivered), not for requests waiting for an answer (composeInline). */
  compose: Composer;
  /** The signed links messages carry (tracking, unsubscribe): made and read with the secret key. */
  links: MessageLinks;
  /** Counters for GET /metrics; absent outside the server (CLI). */
  metrics?: Metrics;
  /** How MTA-STS policies are fetched (HTTPS by default); tests replace it. */
  mtaStsFetcher?: PolicyFetcher;
}

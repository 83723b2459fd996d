import type { Config } from '../config/schema.js';
import { reportAddresses } from '../config/report-addresses.js';
import type { Clock } from '../shared/clock.js';
import type { DnsResolver } from '../shared/dns.js';
import type { Logger } from '../shared/logger.js';
import type { CommitBatcher } from '../store/infra/commit-batcher.js';
import type { Db } from '../store/infra/db.js';
import { aggregateReportKind } from './aggregate-reports/aggregate-reports-kind.js';
import { feedbackKind } from './feedback/feedback-kind.js';
import type { InboundKind } from './inbound-kind.js';
import { routeKind } from './routes/route-kind.js';

interface InboundKindsDeps {
  db: Db;
  clock: Clock;
  config: Config;
  secretKey: Buffer;
  resolver: DnsResolver;
  logger: Logger;
  batcher: CommitBatcher;
}

/**
 * The kinds of recipient the inbound listener takes mail for, in the order it asks them:
 * feedback first (bounces and complaints at our VERP return paths), then aggregate reports,
 * then routes, so a return path is never taken by a catch-all route.
 */
export const inboundKinds = (deps: InboundKindsDeps): InboundKind[] =>
  [
    feedbackKind(deps),
    aggregateReportKind({ ...deps, addresses: reportAddresses(deps.config) }),
    routeKind(deps),
  ] as InboundKind[];

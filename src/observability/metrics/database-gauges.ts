import { Counter, Gauge, type Registry } from 'prom-client';
import { oncePerScrape, type MetricSources, type ReputationSample } from './sources.js';

export function defineQueueGauges(registry: Registry, sources: MetricSources): void {
  new Gauge({
    name: 'mailsvc_queue_depth',
    help: 'Recipients waiting in the delivery queue, by status (read from the database at scrape time)',
    labelNames: ['status'] as const,
    registers: [registry],
    async collect() {
      if (!sources.queue) return;
      this.reset();
      // The database down is when the other metrics matter most: this one goes missing, the
      // scrape does not fail (mailsvc_database_up says why).
      let depth: Record<string, number>;
      try {
        depth = await sources.queue();
        sources.databaseUp = 1;
      } catch {
        sources.databaseUp = 0;
        return;
      }
      for (const [status, n] of Object.entries(depth)) this.set({ status }, n);
    },
  });
  new Gauge({
    name: 'mailsvc_database_up',
    help: "1 when the database answered the scrape's queue-depth query, 0 when it failed (unreachable, dropped, busy past its timeout)",
    registers: [registry],
    collect() {
      this.set(sources.databaseUp);
    },
  });
}

export function defineStatementCounter(registry: Registry, sources: MetricSources): void {
  let statementsSeen = 0;
  new Counter({
    name: 'mailsvc_db_statements_total',
    help: 'Statements sent to the database, BEGIN and COMMIT included (on PostgreSQL, one network round trip each)',
    registers: [registry],
    collect() {
      const n = sources.statements.reduce((sum, read) => sum + read(), 0);
      this.inc(Math.max(0, n - statementsSeen));
      statementsSeen = n;
    },
  });
}

/** Sending domains are the operator's own (a handful), so they make a bounded label set. */
export function defineReputationGauges(registry: Registry, sources: MetricSources): void {
  // A database fault leaves these out of the scrape rather than failing it (mailsvc_database_up).
  const samples = oncePerScrape(() =>
    sources.reputation ? sources.reputation().catch(() => []) : Promise.resolve<ReputationSample[]>([]),
  );
  const reputationGauge = (name: string, help: string, value: (s: ReputationSample) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['workspace', 'domain'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const s of await samples()) this.set({ workspace: s.workspace_id, domain: s.domain }, value(s));
      },
    });
  reputationGauge(
    'mailsvc_reputation_bounce_rate',
    'Hard-bounce rate of a sending domain over the guard window, in percent',
    (s) => s.bounce_rate,
  );
  reputationGauge(
    'mailsvc_reputation_complaint_rate',
    'Complaint rate of a sending domain over the guard window, in percent',
    (s) => s.complaint_rate,
  );
  reputationGauge(
    'mailsvc_reputation_paused',
    '1 while the reputation guard holds the marketing mail of a sending domain',
    (s) => (s.state === 'paused' ? 1 : 0),
  );
  reputationGauge(
    'mailsvc_reputation_held',
    'Recipients of marketing mail held for a paused sending domain',
    (s) => s.held,
  );
}

import { Gauge, type Registry } from 'prom-client';
import { domainClass, type DomainClass } from '../domain-class.js';
import type { DestinationSample, MetricSources } from './sources.js';

/** The destination class of a gate's destination: its provider's, else its first recipient domain's. */
const PROVIDER_CLASS: Record<string, DomainClass> = {
  google: 'gmail',
  microsoft: 'microsoft',
  microsoft365: 'microsoft',
  yahoo: 'yahoo',
  apple: 'apple',
};
const classOf = (d: DestinationSample): DomainClass =>
  (d.provider && PROVIDER_CLASS[d.provider]) || domainClass(`@${d.domains?.[0] ?? d.domain}`, null);

/**
 * The gate's state, summed by destination class: mail that waits while nothing runs and
 * nothing is paused is a stall, and shows here instead of only in the queue's growth.
 */
export function defineDestinationGauges(registry: Registry, sources: MetricSources): void {
  const destinationGauge = (name: string, help: string, value: (d: DestinationSample) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['domain_class'] as const,
      registers: [registry],
      collect() {
        this.reset();
        const sums = new Map<DomainClass, number>();
        for (const d of sources.destinations?.() ?? []) {
          const c = classOf(d);
          sums.set(c, (sums.get(c) ?? 0) + value(d));
        }
        for (const [domain_class, n] of sums) this.set({ domain_class }, n);
      },
    });
  destinationGauge(
    'mailsvc_delivery_destination_active',
    'SMTP transactions running now, by destination class',
    (d) => d.active,
  );
  destinationGauge(
    'mailsvc_delivery_destination_allowed',
    'SMTP transactions allowed at once now (the limit, lowered while a destination throttles us), by destination class',
    (d) => d.allowed,
  );
  destinationGauge(
    'mailsvc_delivery_destination_waiting',
    'Claimed deliveries waiting for a slot of their destination, by destination class',
    (d) => d.waiting,
  );
  destinationGauge(
    'mailsvc_delivery_destination_paused',
    'Destinations paused after a slow-down reply, by destination class',
    (d) => (d.pausedUntil > Date.now() ? 1 : 0),
  );
  defineProviderStateGauge(registry, sources);
}

/** Adaptive shaping by provider and source address: known providers by name, every other MX host as "other". */
function defineProviderStateGauge(registry: Registry, sources: MetricSources): void {
  new Gauge({
    name: 'mailsvc_delivery_provider_state',
    help: 'Destinations (a mailbox provider seen from one source address) in each state: normal, backoff (limits lowered after slow-down replies), paused',
    labelNames: ['provider', 'source', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const counts = new Map<string, { provider: string; source: string; state: string; n: number }>();
      for (const d of sources.destinations?.() ?? []) {
        const provider = d.provider && d.named ? d.provider : 'other';
        const source = d.source ?? 'default';
        const state = d.pausedUntil > Date.now() ? 'paused' : (d.state ?? 'normal');
        const id = `${provider} ${source} ${state}`;
        const c = counts.get(id) ?? { provider, source, state, n: 0 };
        c.n++;
        counts.set(id, c);
      }
      for (const c of counts.values()) this.set({ provider: c.provider, source: c.source, state: c.state }, c.n);
    },
  });
}

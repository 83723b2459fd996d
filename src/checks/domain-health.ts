import type { Config } from '../config/schema.js';
import { reportAddresses } from '../config/report-addresses.js';
import { fetchWithMailauth, type PolicyFetcher } from '../delivery/mta-sts.js';
import type { Clock } from '../shared/clock.js';
import type { DnsResolver } from '../shared/dns.js';
import { checkStatuses, runDomainChecks, type DkimTokenResult, type DomainChecks } from './domain-checks.js';
import { sendingAddresses } from './sending-addresses.js';

/** What changed between two runs of a domain's checks: `[{check, from, to}]`. */
export function checkChanges(
  before: DomainChecks | null,
  after: DomainChecks,
): Array<{ check: string; from: string | null; to: string }> {
  const old = before ? checkStatuses(before) : {};
  return Object.entries(checkStatuses(after))
    .filter(([name, status]) => old[name] !== status)
    .map(([name, status]) => ({ check: name, from: old[name] ?? null, to: status }));
}

/** Runs a domain's deliverability checks with the configured resolver, addresses and report mailboxes. */
export function createDomainHealth(deps: {
  config: Config;
  resolver: DnsResolver;
  clock: Clock;
  mtaStsFetcher?: PolicyFetcher | undefined;
}) {
  const { config, resolver, clock } = deps;
  const fetchMtaStsPolicy = deps.mtaStsFetcher ?? fetchWithMailauth(resolver);
  return {
    /** `returnPathSubdomain`: the domain's own (domains.update), else delivery.returnPathSubdomain. */
    async run(
      domain: string,
      dkim: DkimTokenResult[],
      returnPathSubdomain: string = config.delivery.returnPathSubdomain,
    ): Promise<DomainChecks> {
      let sendingIps: string[] = [];
      try {
        sendingIps = await sendingAddresses(config, resolver);
      } catch {
        // A DNS failure: the SPF check says it cannot tell, and is run again later.
      }
      return runDomainChecks(
        domain,
        dkim,
        {
          resolver,
          hostname: config.delivery.hostname,
          returnPathSubdomain,
          inboundEnabled: config.smtp.inbound.enabled,
          sendingIps,
          reportAddresses: reportAddresses(config),
          fetchMtaStsPolicy,
        },
        clock.now(),
      );
    },
  };
}

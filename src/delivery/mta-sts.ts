import { getPolicy, validateMx } from 'mailauth/lib/mta-sts.js';
import type { MTASTSPolicy } from 'mailauth';
import type { DnsResolver } from '../shared/dns.js';
import { mailauthResolver } from '../shared/mailauth-resolver.js';
import type { Logger } from '../shared/logger.js';
import type { MxHost } from './resolve-route.js';

/**
 * MTA-STS (RFC 8461) with mailauth's helpers. A recipient domain that publishes a policy in
 * `enforce` mode gets mail only over TLS with a verified certificate, and only to MX hosts
 * the policy names; in `testing` mode mismatches are logged and mail goes as usual. Policies
 * are cached for their max_age; a domain without one is asked again after an hour.
 */

type MtaStsMode = 'enforce' | 'testing' | 'none';

interface MtaStsPolicy {
  mode: MtaStsMode;
  mx: string[];
  /** Epoch ms until which this answer is reused. */
  expiresAt: number;
}

/** Fetches a domain's policy; `known` is the cached one (mailauth renews it when the id is unchanged). */
export type PolicyFetcher = (domain: string, known: MTASTSPolicy | undefined) => Promise<MTASTSPolicy>;

const NO_POLICY_TTL_MS = 3600_000;

/** The default fetcher: DNS TXT `_mta-sts.<domain>`, then HTTPS `mta-sts.<domain>/.well-known/mta-sts.txt`. */
export const fetchWithMailauth =
  (resolver: DnsResolver): PolicyFetcher =>
  async (domain, known) =>
    (await getPolicy(domain, known, { resolver: mailauthResolver(resolver) })).policy;

export class MtaStsPolicies {
  private readonly cache = new Map<string, { policy: MtaStsPolicy; raw: MTASTSPolicy | undefined }>();
  private readonly inFlight = new Map<string, Promise<MtaStsPolicy>>();

  constructor(
    private readonly fetchPolicy: PolicyFetcher,
    private readonly now: () => number,
    private readonly logger: Logger,
  ) {}

  policyFor(domain: string): Promise<MtaStsPolicy> {
    const cached = this.cache.get(domain);
    if (cached && cached.policy.expiresAt > this.now()) return Promise.resolve(cached.policy);
    let pending = this.inFlight.get(domain);
    if (!pending) {
      pending = this.load(domain, cached?.raw).finally(() => this.inFlight.delete(domain));
      this.inFlight.set(domain, pending);
    }
    return pending;
  }

  private async load(domain: string, known: MTASTSPolicy | undefined): Promise<MtaStsPolicy> {
    let raw: MTASTSPolicy | undefined;
    try {
      raw = await this.fetchPolicy(domain, known);
    } catch (err) {
      this.logger.warn({ component: 'delivery', domain, err: (err as Error).message }, 'MTA-STS policy fetch failed');
      raw = known;
    }
    const mode = raw?.mode ?? 'none';
    const maxAgeMs = typeof raw?.maxAge === 'number' && raw.maxAge > 0 ? raw.maxAge * 1000 : NO_POLICY_TTL_MS;
    const policy: MtaStsPolicy = {
      mode: mode === 'enforce' || mode === 'testing' ? mode : 'none',
      mx: raw?.mx ?? [],
      expiresAt: this.now() + (mode === 'none' ? NO_POLICY_TTL_MS : maxAgeMs),
    };
    if ((raw as { error?: Error } | undefined)?.error) {
      this.logger.warn(
        { component: 'delivery', domain, err: (raw as { error: Error }).error.message },
        'MTA-STS policy could not be loaded',
      );
    }
    this.cache.set(domain, { policy, raw });
    return policy;
  }
}

/** MX hosts a policy allows (all of them unless it enforces). */
export function hostsAllowedBy(policy: MtaStsPolicy, hosts: MxHost[]): { allowed: MxHost[]; refused: MxHost[] } {
  if (policy.mode === 'none') return { allowed: hosts, refused: [] };
  const asMailauth = { mode: policy.mode, mx: policy.mx } as MTASTSPolicy;
  const allowed: MxHost[] = [];
  const refused: MxHost[] = [];
  for (const host of hosts) (validateMx(host.name, asMailauth).valid ? allowed : refused).push(host);
  return { allowed, refused };
}

import { isIP } from 'node:net';
import type { Config } from '../config/schema.js';
import type { DnsResolver } from '../shared/dns.js';
import type { Logger } from '../shared/logger.js';
import type { Email, QueueItem } from '../store/emails.js';
import { classifyError, classifyResponse } from './classify-response.js';
import { hostsAllowedBy, type MtaStsPolicies } from './mta-sts.js';
import type { Outcome } from './outcome.js';
import { resolveAddresses, resolveMxRoute, type MxHost } from './resolve-route.js';
import type { SmtpClient, SmtpResult, TlsMode } from './smtp-client.js';
import type { Source } from './source-address.js';
import type { ResponseRule } from './response-rules.js';

/**
 * The delivery of one job, a message to the recipients it has at one domain, as a list of
 * named steps (Postal's outgoing message processor): route, prepare, transmit. A step either
 * hands on or ends the job with an outcome for every recipient.
 */

export interface Job {
  email: Email;
  /** The recipients' domain (lower-case ASCII). */
  domain: string;
  items: QueueItem[];
  /** The address the connection comes from (its IP pool's); absent: the system's. */
  source?: Source | undefined;
  /** Messages a connection carries at most (the destination's limit); absent: the client's default. */
  messagesPerConnection?: number | undefined;
}

/** The message as it goes on the wire: DKIM-signed, with its envelope sender. */
export type Prepared =
  /** requireTls: the sending domain's TLS policy is `enforced` (domains.update). */
  | { kind: 'message'; message: Buffer; returnPath: string; requireTls?: boolean }
  | { kind: 'failed'; category: 'config' | 'message'; reason: string };

export interface JobContext {
  config: Config['delivery'];
  resolver: DnsResolver;
  smtp: SmtpClient;
  mtaSts: MtaStsPolicies | null;
  logger: Logger;
  prepare(email: Email): Promise<Prepared>;
  /** How replies are read (the built-in rules, with delivery.slowDownReplies first). */
  rules?: readonly ResponseRule[] | undefined;
}

interface Route {
  hosts: MxHost[];
  /** The domain's own A/AAAA stands in for a missing MX: no address at all means no such domain. */
  implicit: boolean;
  tls: TlsMode;
  relay: Config['delivery']['relay'];
}

/** Addresses tried per attempt across all hosts, as Postfix's smtp_mx_address_limit. */
const MAX_ADDRESSES = 5;

const everyone = (job: Job, outcome: Outcome): Outcome[] => job.items.map(() => outcome);

/** Step 1: where to connect, or why not at all. */
async function route(job: Job, ctx: JobContext): Promise<Route | Outcome> {
  const { relay, requireTls } = ctx.config;
  const baseTls: TlsMode = requireTls ? 'required' : 'opportunistic';
  if (relay) {
    return {
      hosts: [{ name: relay.host, priority: 0 }],
      implicit: false,
      tls: relay.auth ? 'required' : baseTls,
      relay,
    };
  }
  const mx = await resolveMxRoute(job.domain, ctx.resolver);
  switch (mx.kind) {
    case 'null_mx':
      return {
        kind: 'bounced',
        code: 556,
        response: `556 5.1.10 ${job.domain} does not accept mail (null MX, RFC 7505)`,
        category: 'null_mx',
        bounceType: 'hard',
        mxHost: null,
        tls: false,
      };
    case 'no_domain':
      return {
        kind: 'bounced',
        code: 550,
        response: `550 5.1.2 ${job.domain} does not exist (NXDOMAIN)`,
        category: 'bad_domain',
        bounceType: 'hard',
        mxHost: null,
        tls: false,
      };
    case 'dns_error':
      return { kind: 'deferred', code: null, response: mx.message, category: 'dns', mxHost: null, tls: false };
  }
  if (!ctx.mtaSts) return { hosts: mx.hosts, implicit: mx.implicit, tls: baseTls, relay: null };

  const policy = await ctx.mtaSts.policyFor(job.domain);
  if (policy.mode === 'none') return { hosts: mx.hosts, implicit: mx.implicit, tls: baseTls, relay: null };
  const { allowed, refused } = hostsAllowedBy(policy, mx.hosts);
  if (policy.mode === 'testing') {
    if (refused.length > 0) {
      ctx.logger.warn(
        { component: 'delivery', domain: job.domain, refused: refused.map((h) => h.name) },
        'MTA-STS (testing): MX hosts outside the policy',
      );
    }
    return { hosts: mx.hosts, implicit: mx.implicit, tls: baseTls, relay: null };
  }
  if (allowed.length === 0) {
    return {
      kind: 'deferred',
      code: null,
      response: `MTA-STS policy of ${job.domain} (enforce) names none of its MX hosts (${mx.hosts.map((h) => h.name).join(', ')})`,
      category: 'mta_sts',
      mxHost: null,
      tls: false,
    };
  }
  return { hosts: allowed, implicit: mx.implicit, tls: 'verified', relay: null };
}

/** A negative or positive reply for each recipient. */
function fromReplies(
  job: Job,
  result: Extract<SmtpResult, { kind: 'replied' }>,
  mxHost: string,
  relayed: boolean,
  rules?: readonly ResponseRule[],
): Outcome[] {
  const byRecipient = new Map(result.replies.map((r) => [r.recipient, r]));
  return job.items.map((item): Outcome => {
    const reply = byRecipient.get(item.recipient);
    if (!reply)
      return {
        kind: 'deferred',
        code: null,
        response: 'no reply for this recipient',
        category: 'protocol',
        mxHost,
        tls: result.tls,
      };
    if (reply.accepted)
      return { kind: 'delivered', code: reply.code, response: reply.response, mxHost, tls: result.tls, relayed };
    const c = classifyResponse(reply.response, rules);
    return c.action === 'bounce'
      ? {
          kind: 'bounced',
          code: reply.code,
          response: reply.response,
          category: c.category,
          bounceType: c.bounceType ?? 'soft',
          mxHost,
          tls: result.tls,
        }
      : {
          kind: 'deferred',
          code: reply.code,
          response: reply.response,
          category: c.category,
          mxHost,
          tls: result.tls,
          slowDown: c.slowDown,
        };
  });
}

/** A failure before any reply to the transaction: always temporary. */
function fromFailure(
  result: Exclude<SmtpResult, { kind: 'replied' }>,
  mxHost: string,
  rules?: readonly ResponseRule[],
): Outcome {
  const response = 'response' in result && result.response ? result.response : null;
  const c = response ? classifyResponse(response, rules) : classifyError(result.errorCode);
  return {
    kind: 'deferred',
    code: 'code' in result ? result.code : null,
    response: response ?? `${mxHost}: ${result.message}`,
    category: c.category,
    mxHost,
    tls: result.tls,
    // A 421 "too many connections" greeting is the destination asking us to back off.
    slowDown: c.slowDown,
  };
}

/** Step 3: MX hosts in order, each address in turn, until one answers the transaction. */
async function transmit(
  job: Job,
  r: Route,
  prepared: Extract<Prepared, { kind: 'message' }>,
  ctx: JobContext,
): Promise<Outcome[]> {
  const envelope = { from: prepared.returnPath, to: job.items.map((i) => i.recipient), size: prepared.message.length };
  const port = r.relay ? r.relay.port : ctx.config.port;
  let last: Outcome | null = null;
  let tried = 0;
  let anyAddress = false;
  let lookupFailed = false;
  for (const host of r.hosts) {
    if (tried >= MAX_ADDRESSES) break;
    const lookup = await resolveAddresses(host.name, ctx.resolver);
    if (lookup.kind === 'dns_error') {
      lookupFailed = true;
      last = { kind: 'deferred', code: null, response: lookup.message, category: 'dns', mxHost: host.name, tls: false };
      continue;
    }
    if (lookup.kind === 'none') {
      last ??= {
        kind: 'deferred',
        code: null,
        response: `${host.name} has no A or AAAA record`,
        category: 'dns',
        mxHost: host.name,
        tls: false,
      };
      continue;
    }
    anyAddress = true;
    for (const address of lookup.addresses) {
      // A socket bound to an address of one family cannot reach the other.
      if (job.source?.address && isIP(address) !== isIP(job.source.address)) continue;
      if (tried++ >= MAX_ADDRESSES) break;
      const result = await ctx.smtp.send(
        {
          host: host.name,
          address,
          port,
          tls: r.tls,
          secure: r.relay?.secure === true,
          auth: r.relay?.auth ?? null,
          verifyCertificate: r.relay ? r.relay.rejectUnauthorized : false,
          localAddress: job.source?.address ?? null,
          maxMessages: job.messagesPerConnection,
          ...(job.source ? { ehlo: job.source.ehlo } : {}),
        },
        envelope,
        prepared.message,
      );
      if (result.kind === 'replied') return fromReplies(job, result, host.name, r.relay !== null, ctx.rules);
      if (result.kind === 'unreachable' && result.errorCode === 'EADDRNOTAVAIL' && job.source?.address) {
        // Our own address cannot be bound: no other MX would do better; the operator must act.
        ctx.logger.error(
          { component: 'delivery', source: job.source.address, pool: job.source.pool },
          'IP pool address cannot be bound on this host (mailsvc doctor)',
        );
        return everyone(job, {
          kind: 'deferred',
          code: null,
          response: `cannot send from ${job.source.address} (IP pool ${job.source.pool}): it is not an address of this host (EADDRNOTAVAIL); see mailsvc doctor`,
          category: 'config',
          mxHost: host.name,
          tls: false,
        });
      }
      last = fromFailure(result, host.name, ctx.rules);
      ctx.logger.debug(
        { component: 'delivery', emailId: job.email.id, mxHost: host.name, address, err: result.message },
        'MX host failed, trying the next',
      );
    }
  }
  if (r.implicit && !anyAddress && !lookupFailed) {
    // No MX and no address: the domain cannot receive mail (RFC 5321 §5.1).
    return everyone(job, {
      kind: 'bounced',
      code: 550,
      response: `550 5.1.2 ${job.domain} has no MX, A or AAAA record`,
      category: 'bad_domain',
      bounceType: 'hard',
      mxHost: null,
      tls: false,
    });
  }
  return everyone(
    job,
    last ?? { kind: 'deferred', code: null, response: 'no MX host to try', category: 'dns', mxHost: null, tls: false },
  );
}

/** Runs the steps; returns one outcome per item of the job, in order. */
export async function transmitJob(job: Job, ctx: JobContext): Promise<Outcome[]> {
  const r = await route(job, ctx);
  if ('kind' in r) return everyone(job, r);
  const prepared = await ctx.prepare(job.email);
  if (prepared.kind === 'failed')
    return everyone(job, { kind: 'failed', response: prepared.reason, category: prepared.category });
  // A domain that enforces TLS never goes out in the clear; a stricter mode (MTA-STS's verified) stays.
  const tls: TlsMode = prepared.requireTls && r.tls === 'opportunistic' ? 'required' : r.tls;
  return transmit(job, { ...r, tls }, prepared, ctx);
}

import ipaddr from 'ipaddr.js';
import type { AuthenticateResult } from 'mailauth';
import type { DnsResolver } from '../../shared/dns.js';
import { mailauthResolver } from '../../shared/mailauth-resolver.js';

/**
 * SPF, DKIM, DMARC and ARC of a received message, checked by mailauth with every DNS look-up
 * through `delivery.dnsServers`, and summarised into what a receiving application needs to
 * tell forged mail from real.
 */

interface DkimSignature {
  result: string;
  /** The signing domain (d=). */
  domain: string;
  selector: string | null;
  /** Whether d= aligns with the From domain (what DMARC counts). */
  aligned: boolean;
}

export interface AuthenticationResults {
  spf: { result: string; domain: string | null };
  /** `pass` when any signature verifies; else the first signature's result; `none` when unsigned. */
  dkim: { result: string; signatures: DkimSignature[] };
  dmarc: { result: string; domain: string | null; policy: string | null };
  /** Present when the message carries an ARC chain. */
  arc: { result: string } | null;
  /** The Authentication-Results header mailauth wrote (RFC 8601), for logs and forwarding. */
  header: string;
}

/** A received message's results as the store keeps them; they were written by summarizeAuthentication (or unknownAuth). */
export const authenticationOf = (email: { authentication: unknown }): AuthenticationResults =>
  email.authentication as AuthenticationResults;

/** Summarises mailauth's result. Pure. */
function summarizeAuthentication(result: AuthenticateResult): AuthenticationResults {
  const signatures = (result.dkim.results ?? [])
    .filter((r) => r.signingDomain)
    .map((r) => ({
      result: r.status.result,
      domain: r.signingDomain,
      selector: r.selector ?? null,
      aligned: Boolean(r.status.aligned),
    }));
  const dkim = signatures.some((s) => s.result === 'pass') ? 'pass' : (signatures[0]?.result ?? 'none');
  const arcResult = result.arc ? result.arc.status.result : 'none';
  return {
    spf: result.spf
      ? { result: result.spf.status.result, domain: result.spf.domain ?? null }
      : { result: 'none', domain: null },
    dkim: { result: dkim, signatures },
    dmarc: result.dmarc
      ? { result: result.dmarc.status.result, domain: result.dmarc.domain ?? null, policy: result.dmarc.policy || null }
      : { result: 'none', domain: null, policy: null },
    arc: arcResult === 'none' ? null : { result: arcResult },
    header: result.headers.replace(/\r\n$/, ''),
  };
}

/** Whether a sender's DMARC policy asks receivers to reject this message (p=reject and DMARC failed). */
export const dmarcSaysReject = (auth: AuthenticationResults): boolean =>
  auth.dmarc.result === 'fail' && auth.dmarc.policy === 'reject';

interface SmtpContext {
  /** The client's IP address as the socket reports it. */
  ip: string;
  helo: string | null;
  /** MAIL FROM; empty for a null sender. */
  sender: string;
  /** Our host name, in the Authentication-Results header. */
  mta: string;
}

type Mailauth = typeof import('mailauth');
let loading: Promise<Mailauth> | undefined;

export async function authenticateMessage(
  raw: Buffer,
  smtp: SmtpContext,
  resolver: DnsResolver,
): Promise<AuthenticationResults> {
  loading ??= import('mailauth');
  const { authenticate } = await loading;
  const ip = ipaddr.isValid(smtp.ip) ? ipaddr.process(smtp.ip).toString() : smtp.ip;
  const result = await authenticate(raw, {
    ip,
    ...(smtp.helo ? { helo: smtp.helo } : {}),
    sender: smtp.sender,
    mta: smtp.mta,
    resolver: mailauthResolver(resolver),
    disableBimi: true,
  });
  return summarizeAuthentication(result);
}

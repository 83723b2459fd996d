/**
 * How mailsvc reads a remote server's reply: rules kept as data, first match wins, tested as
 * a table (test/fixtures/smtp-responses.txt). A rule matches the whole reply as received,
 * e.g. `550 5.1.1 <a@example.com>: Recipient address rejected: User unknown`, with
 * multi-line replies joined by spaces.
 *
 * - `defer`: temporary; retried on the schedule. `slowDown` also makes the destination
 *   domain take fewer connections for a while (its rate or connection limit was hit).
 * - `bounce`: permanent for this message. `hard` bounces (the address or domain does not
 *   exist) add the address to the workspace's suppression list; `soft` bounces (policy, spam,
 *   mailbox full, message too large, …) do not, because the address itself is good.
 *
 * Order: the large mailbox providers' own replies (Gmail, Microsoft, Yahoo/AOL, Apple), other
 * text-specific rules, then RFC 3463 enhanced status codes, then the basic reply class.
 * Inspired by ZoneMTA's config/bounces.txt.
 */

export const CATEGORIES = [
  'unknown_user',
  'inactive_mailbox',
  'bad_domain',
  'invalid_address',
  'null_mx',
  'mailbox_full',
  'message_size',
  'spam',
  'blocklist',
  'reputation',
  'reverse_dns',
  'authentication',
  'policy',
  'rate_limit',
  'greylist',
  'capacity',
  'network',
  'timeout',
  'dns',
  'tls',
  'mta_sts',
  'protocol',
  'sender',
  'message',
  'config',
  'expired',
  'other',
] as const;
export type Category = (typeof CATEGORIES)[number];

export type ResponseAction = 'defer' | 'bounce';
export type BounceType = 'hard' | 'soft';

export interface ResponseRule {
  match: RegExp;
  action: ResponseAction;
  category: Category;
  /** For bounces: hard ones suppress the address. */
  bounceType?: BounceType;
  /** For deferrals: the destination is throttling us; take fewer connections for a while. */
  slowDown?: boolean;
}

const defer = (match: RegExp, category: Category, slowDown = false): ResponseRule => ({
  match,
  action: 'defer',
  category,
  slowDown,
});
const hard = (match: RegExp, category: Category): ResponseRule => ({
  match,
  action: 'bounce',
  category,
  bounceType: 'hard',
});
const soft = (match: RegExp, category: Category): ResponseRule => ({
  match,
  action: 'bounce',
  category,
  bounceType: 'soft',
});

export const RESPONSE_RULES: readonly ResponseRule[] = [
  // Mailbox providers' replies that the generic rules below would misread.
  hard(/^5\d\d[ -].*(RecipientNotFound|Recipient not found by SMTP address lookup)/i, 'unknown_user'), // Microsoft 365: 5.1.10, RFC 7505's null MX code
  hard(/^5\d\d[ -].*(this mailbox is disabled|account has been disabled or discontinued)/i, 'inactive_mailbox'), // Yahoo, AOL
  // The destination requires TLS we did not offer or could not complete: fixable on our side, so retried.
  defer(
    /^(4\d\d|5\d\d)[ -].*(must issue a STARTTLS|STARTTLS (is )?required|\bTLS (is )?required|encryption (is )?(needed|required)|TLS not available)/i,
    'tls',
  ),
  // Reverse DNS (PTR) of our address missing or not matching (Gmail 4.7.25/5.7.25).
  defer(/^4\d\d[ -](.*\b(PTR record|reverse (DNS|hostname))|\s*4\.7\.25\b)/i, 'reverse_dns'),
  soft(/^5\d\d[ -](.*\b(PTR record|reverse (DNS|hostname))|\s*5\.7\.25\b)/i, 'reverse_dns'),
  // Our IP or domain reputation, not a listing on a public blocklist: slow down, and look at what we send.
  defer(/^4\d\d[ -].*(reputation|\[TSS?09\]|permanently deferred)/i, 'reputation', true), // Gmail 4.7.0, Microsoft 4.7.650, Yahoo TSS09
  soft(
    /^5\d\d[ -].*(low reputation|poor reputation|bad reputation|reputation of the sending|traffic not accepted from this IP)/i,
    'reputation',
  ), // Gmail 5.7.1, Microsoft 5.7.708
  // Sender authentication, temporary (Gmail 4.7.23-4.7.32 but 4.7.28, the rate limit).
  defer(/^4\d\d[ -]+4\.7\.(2[3-7]|29|3[0-2])\b/, 'authentication'),
  defer(/^4\d\d[ -].*unresolvable .*from domain/i, 'sender'), // Yahoo: the MAIL FROM domain does not resolve

  // Throttling: the destination wants fewer connections or messages from us.
  defer(/^4\d\d[ -].*(server busy|\b4\.7\.500\b)/i, 'rate_limit', true), // Microsoft
  defer(
    /^4\d\d[ -].*\b(too many (concurrent |simultaneous )?(smtp )?(connections|sessions|messages|mails|emails)|connection (rate )?limit|rate[ -]?limit|ratelimit|throttl|too fast|too quickly|sending rate|unusual rate|exceeded .*(rate|limit))/i,
    'rate_limit',
    true,
  ),
  defer(/^4\d\d[ -]+4\.7\.28\b/, 'rate_limit', true), // Gmail: unusual rate of unsolicited mail
  // Gmail's plain throttle (at EHLO or MAIL, no reason given): read as the basic 421 it would
  // be a capacity deferral, retried as hard as before; it is Gmail asking for fewer connections.
  defer(/^421[ -]+4\.7\.0[ -]+Try again later\b/i, 'rate_limit', true),
  defer(/^421[ -]+.*\bRP-00\d/, 'rate_limit', true), // Outlook.com
  defer(/^421[ -]+.*\[?TSS?0[1-4]\]?/, 'rate_limit', true), // Yahoo: deferred due to volume or complaints
  defer(/^4\d\d[ -].*\b(grey|gray)[ -]?list/i, 'greylist'),

  // Sender reputation: the address is good, our IP or domain is not (soft).
  soft(
    /^5\d\d[ -].*(spamhaus|spamcop|barracuda|proofpoint|dnsbl|\brbl\b|black ?list|block ?list|listed (at|on|in|by)\b|banned send)/i,
    'blocklist',
  ),
  // Message rejected for its content.
  soft(/^5\d\d[ -].*(\bspam\b|unsolicited|phish|virus|malware|suspicious)/i, 'spam'),
  // Authentication of the sender (SPF, DKIM, DMARC).
  soft(/^5\d\d[ -].*(\b(dmarc|spf|dkim|unauthenticated)\b|required authentication level)/i, 'authentication'),
  soft(/^5\d\d[ -]+5\.7\.(2[0-7]|5)\b/, 'authentication'),

  // Mailbox full and message size.
  defer(/^4\d\d[ -].*(over ?quota|quota exceeded|mailbox (is )?full|insufficient (system )?storage)/i, 'mailbox_full'),
  soft(/^5\d\d[ -].*(over ?quota|quota exceeded|mailbox (is )?full|insufficient (system )?storage)/i, 'mailbox_full'),
  soft(/^5\d\d[ -].*(message|mail) (size|too (big|large))|exceeds? (the )?(maximum|size)/i, 'message_size'),

  // Our own envelope sender was refused: nothing wrong with the recipient.
  soft(/^5\d\d[ -]+5\.1\.[78]\b/, 'sender'),
  soft(/^5\d\d[ -].*\bsender (address )?(rejected|refused|denied|unknown|verify failed)/i, 'sender'),

  // The address or its domain does not exist: hard.
  hard(/^5\d\d[ -]+5\.1\.10\b/, 'null_mx'),
  hard(/^5\d\d[ -]+5\.1\.[16]\b/, 'unknown_user'),
  hard(/^5\d\d[ -]+5\.1\.2\b/, 'bad_domain'),
  hard(/^5\d\d[ -]+5\.1\.3\b/, 'invalid_address'),
  hard(/^5\d\d[ -]+5\.2\.1\b.*\b(disabled|inactive|deactivated|suspended|expired|closed)\b/i, 'inactive_mailbox'),
  hard(
    /^5\d\d[ -].*\b(unrouteable|unroutable) address|domain (does not exist|not found)|host (not found|unknown)/i,
    'bad_domain',
  ),
  hard(
    /^5\d\d[ -].*(user unknown|unknown user|no such (user|mailbox|recipient)|does ?n[o']t exist|mailbox (unavailable|not found)|invalid (recipient|mailbox)|unknown recipient|recipient (address )?(unknown|not found)|account (is )?(disabled|inactive)|user doesn't have|no such account|address rejected)/i,
    'unknown_user',
  ),
  hard(/^5\d\d[ -]+5\.1\.0\b/, 'unknown_user'),

  // Enhanced status codes (RFC 3463) by class, for everything not matched above.
  soft(/^5\d\d[ -]+5\.2\.2\b/, 'mailbox_full'),
  soft(/^5\d\d[ -]+5\.(2\.3|3\.4)\b/, 'message_size'),
  soft(/^5\d\d[ -]+5\.2\.\d+\b/, 'inactive_mailbox'),
  soft(/^5\d\d[ -]+5\.3\.\d+\b/, 'capacity'),
  soft(/^5\d\d[ -]+5\.4\.\d+\b/, 'network'),
  soft(/^5\d\d[ -]+5\.5\.\d+\b/, 'protocol'),
  soft(/^5\d\d[ -]+5\.6\.\d+\b/, 'message'),
  soft(/^5\d\d[ -]+5\.7\.\d+\b/, 'policy'),
  defer(/^4\d\d[ -]+4\.2\.2\b/, 'mailbox_full'),
  defer(/^4\d\d[ -]+4\.[12]\.\d+\b/, 'other'),
  defer(/^4\d\d[ -]+4\.3\.\d+\b/, 'capacity'),
  defer(/^4\d\d[ -]+4\.4\.\d+\b/, 'network'),
  defer(/^4\d\d[ -]+4\.5\.\d+\b/, 'protocol'),
  defer(/^4\d\d[ -]+4\.6\.\d+\b/, 'message'),
  defer(/^4\d\d[ -]+4\.7\.\d+\b/, 'policy'),

  // Basic reply classes (RFC 5321 §4.2.1).
  soft(/^55[34][ -]/, 'policy'),
  defer(/^421[ -]/, 'capacity'),
  defer(/^45[12][ -]/, 'capacity'),
  defer(/^4\d\d/, 'other'),
  soft(/^5\d\d/, 'other'),
];

/**
 * The rules with the operator's extra slow-down replies (`delivery.slowDownReplies`) first:
 * each a deferral that backs the destination off. Patterns were checked when the config loaded.
 */
export function rulesWith(slowDownReplies: readonly string[]): readonly ResponseRule[] {
  if (slowDownReplies.length === 0) return RESPONSE_RULES;
  return [...slowDownReplies.map((p) => defer(new RegExp(p, 'i'), 'rate_limit', true)), ...RESPONSE_RULES];
}

/**
 * Failures that carry no SMTP reply (the connection, DNS or TLS failed), by nodemailer's
 * error code. All are temporary: another MX, or a later attempt, may succeed.
 */
export const ERROR_CATEGORIES: Readonly<Record<string, Category>> = {
  ECONNECTION: 'network',
  ESOCKET: 'network',
  ECONNREFUSED: 'network',
  ECONNRESET: 'network',
  EHOSTUNREACH: 'network',
  ENETUNREACH: 'network',
  EADDRNOTAVAIL: 'network',
  ETIMEDOUT: 'timeout',
  EDNS: 'dns',
  ETLS: 'tls',
  EPROTOCOL: 'protocol',
};

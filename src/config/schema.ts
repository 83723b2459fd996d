import { hostname } from 'node:os';
import ipaddr from 'ipaddr.js';
import {
  bool,
  int,
  intList,
  isPlainObject,
  json,
  oneOf,
  optionalStr,
  percent,
  port,
  settingFail,
  str,
  stringList,
  type Setting,
} from './settings.js';

/**
 * Every configuration key of mailsvc, with its default and what it does. The loader, the
 * environment variable names (MAILSVC_ + path in SNAKE_CASE) and the configuration table (docs/configuration.md)
 * table all come from this one declaration.
 */

const isCidr = (value: string): boolean => {
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
};

const url = (defaultValue: string, description: string): Setting<string> => ({
  ...str(defaultValue, description),
  kind: 'URL',
  parse: (v) => {
    if (typeof v !== 'string' || !URL.canParse(v)) return settingFail(`must be a URL, got ${JSON.stringify(v)}`);
    const { protocol } = new URL(v);
    if (protocol !== 'http:' && protocol !== 'https:') return settingFail(`must be an http(s) URL, got "${v}"`);
    return v.replace(/\/+$/, '');
  },
});

const databaseUrl: Setting<string> = {
  ...str(
    'sqlite:./data/mailsvc.db',
    'Where data lives: `sqlite:PATH` (embedded, default) or `postgres://user@host/db` (several nodes).',
  ),
  kind: 'string',
  parse: (v) =>
    typeof v === 'string' && /^(sqlite:.+|postgres(ql)?:\/\/.+)$/.test(v)
      ? v
      : settingFail(`must be "sqlite:PATH" or "postgres://...", got ${JSON.stringify(v)}`),
};

const secretKey: Setting<string | null> = {
  ...optionalStr(
    'Base64 of 32 random bytes that encrypts secrets at rest (DKIM private keys, webhook secrets). When null, a key is generated once into `<dataDir>/secret.key` (mode 0600). Every node of a cluster needs the same key.',
  ),
  parse: (v) => {
    if (v === null || v === '') return null;
    if (typeof v === 'string' && Buffer.from(v, 'base64').length === 32) return v;
    return settingFail('must be base64 of exactly 32 bytes (e.g. `openssl rand -base64 32`)');
  },
};

interface TlsFiles {
  key: string;
  cert: string;
}
const tlsFiles = json<TlsFiles | null>(
  '{ key, cert } | null',
  null,
  'PEM files for the submission listeners. When null, a self-signed pair is generated once into `<dataDir>/tls/`.',
  (v) =>
    v === null
      ? null
      : isPlainObject(v) && typeof v.key === 'string' && typeof v.cert === 'string'
        ? { key: v.key, cert: v.cert }
        : settingFail('must be null or { "key": "/path/key.pem", "cert": "/path/cert.pem" }'),
);

interface RelayConfig {
  host: string;
  port: number;
  secure: boolean;
  auth: { user: string; pass: string } | null;
  /** Verify the relay's TLS certificate (default true). */
  rejectUnauthorized: boolean;
}
const relay = json<RelayConfig | null>(
  '{ host, port, secure, auth, rejectUnauthorized } | null',
  null,
  'Smarthost that replaces MX routing, e.g. { "host": "smtp.example.net", "port": 587, "secure": false, "auth": { "user": "u", "pass": "p" } }. With auth, STARTTLS is required; the certificate is verified unless "rejectUnauthorized": false.',
  (v) => {
    if (v === null) return null;
    if (!isPlainObject(v) || typeof v.host !== 'string' || v.host === '')
      return settingFail('must be null or an object with a "host"');
    const p = v.port ?? 25;
    if (typeof p !== 'number' || !Number.isInteger(p) || p < 1 || p > 65535)
      return settingFail('port must be an integer from 1 to 65535');
    const auth = v.auth ?? null;
    if (auth !== null && !(isPlainObject(auth) && typeof auth.user === 'string' && typeof auth.pass === 'string')) {
      return settingFail('auth must be null or { "user", "pass" }');
    }
    if (v.rejectUnauthorized !== undefined && typeof v.rejectUnauthorized !== 'boolean')
      return settingFail('rejectUnauthorized must be true or false');
    return {
      host: v.host,
      port: p,
      secure: v.secure === true,
      auth: auth as RelayConfig['auth'],
      rejectUnauthorized: v.rejectUnauthorized !== false,
    };
  },
);

export interface DomainLimit {
  concurrency: number;
  perMinute: number;
  /** Messages one connection carries before it is closed (default 100). */
  messagesPerConnection?: number;
}
const isDomainLimit = (v: unknown): v is DomainLimit =>
  isPlainObject(v) &&
  Number.isInteger(v.concurrency) &&
  (v.concurrency as number) >= 1 &&
  Number.isInteger(v.perMinute) &&
  (v.perMinute as number) >= 1 &&
  (v.messagesPerConnection === undefined ||
    (Number.isInteger(v.messagesPerConnection) && (v.messagesPerConnection as number) >= 1));
const LIMIT_SHAPE =
  '{ "concurrency": integer >= 1, "perMinute": integer >= 1, "messagesPerConnection"?: integer >= 1 }';
const limitMap = (what: string, defaults: Record<string, DomainLimit>, description: string) =>
  json<Record<string, DomainLimit>>(
    `{ [${what}]: { concurrency, perMinute, messagesPerConnection? } }`,
    defaults,
    description,
    (v) => {
      if (!isPlainObject(v)) return settingFail(`must be an object keyed by ${what}`);
      for (const [key, limit] of Object.entries(v)) {
        if (!isDomainLimit(limit)) return settingFail(`${key} must be ${LIMIT_SHAPE}`);
      }
      return v as Record<string, DomainLimit>;
    },
  );
const domainLimits = limitMap(
  'domain',
  {},
  "Limits of one recipient domain of its own, apart from its mailbox provider (a special case: your own relay, a partner's gateway): simultaneous connections, messages per minute and per connection, per source address.",
);
const providerLimits = limitMap(
  'provider',
  {
    google: { concurrency: 5, perMinute: 600 },
    microsoft: { concurrency: 3, perMinute: 300 },
    microsoft365: { concurrency: 5, perMinute: 600 },
    yahoo: { concurrency: 3, perMinute: 300 },
  },
  'Limits per mailbox provider (docs/deliverability.md, Providers) and source address: simultaneous connections, messages per minute and per connection. Providers not listed, and MX hosts of no known provider, use delivery.defaultDomainLimit.',
);
const providers = json<Record<string, string[]>>(
  '{ [provider]: [MX host pattern] }',
  {},
  'Mailbox providers by MX host, over the built-in table (docs/deliverability.md): a pattern matches the host or any name under it; a provider given here replaces its built-in patterns, [] removes it.',
  (v) => {
    if (!isPlainObject(v)) return settingFail('must be an object keyed by provider name');
    for (const [name, patterns] of Object.entries(v)) {
      if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name))
        return settingFail(`${name}: a provider name is lower-case letters, digits, "-" and "_"`);
      if (!Array.isArray(patterns) || !patterns.every((p) => typeof p === 'string' && /^(\*\.)?[a-z0-9.-]+$/i.test(p)))
        return settingFail(`${name} must be a list of host names, e.g. ["mx.example.net"]`);
    }
    return v as Record<string, string[]>;
  },
);

/**
 * The reverse proxies in front of the HTTP server: a hop count or their addresses (see
 * intake/http/client-address.ts). `true` is kept from the boolean this setting once was and
 * means one hop; `false` none.
 */
const proxyList = stringList([], '');
const trustProxy: Setting<number | string[]> = {
  kind: 'integer | string[] (addresses, CIDR)',
  default: 0,
  description:
    'The reverse proxies in front of the HTTP API, whose X-Forwarded-For / -Proto / -Host are believed: their addresses or networks (e.g. ["127.0.0.1", "::1"] for a proxy on the same host, what `mailsvc init` writes), or a count of proxy hops (1: one proxy; `true` means 1, `false` 0). The client address (sign-in lockout, failed-key throttle, rate limits, engagement) is the rightmost X-Forwarded-For entry not among them; the leftmost entries are the client\'s own and never used. 0: no proxy, the socket address is the client.',
  parse: (v, fromEnv) => {
    let value: unknown = v;
    if (fromEnv && typeof v === 'string') {
      const text = v.trim();
      if (/^(true|false)$/i.test(text)) value = text.toLowerCase() === 'true';
      else if (/^\d+$/.test(text)) value = Number(text);
      // A JSON array or a comma-separated list, read as every list of strings is.
      else value = proxyList.parse(text, true);
    }
    if (value === false) return 0;
    if (value === true) return 1;
    if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 16) return value;
    if (Array.isArray(value) && value.length > 0) {
      return value.map((entry) => {
        if (typeof entry === 'string') {
          if (isCidr(entry)) {
            const [addr, bits] = ipaddr.parseCIDR(entry);
            return `${addr.toString()}/${bits}`;
          }
          if (ipaddr.isValid(entry)) {
            const addr = ipaddr.process(entry);
            return `${addr.toString()}/${addr.kind() === 'ipv4' ? 32 : 128}`;
          }
        }
        return settingFail(
          `must list proxy addresses or networks such as "127.0.0.1" or "10.0.0.0/8", got ${JSON.stringify(entry)}`,
        );
      });
    }
    return settingFail(
      `must be a hop count (0 to 16), true/false, or a list of proxy addresses or networks, got ${JSON.stringify(v)}`,
    );
  },
};

const threadCount: Setting<number | 'auto'> = {
  kind: 'integer | "auto"',
  default: 'auto',
  description:
    'Worker threads that DKIM-sign outgoing mail and compose messages (MIME): "auto" is one fewer than the CPU cores (at least 1); 0 does both on the main thread.',
  parse: (v, fromEnv) => {
    if (v === 'auto') return 'auto';
    const n = fromEnv && typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
    if (typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 64) return n;
    return settingFail(`must be "auto" or an integer from 0 to 64, got ${JSON.stringify(v)}`);
  },
};

const minFreeBytes: Setting<number | 'auto'> = {
  kind: 'integer | "auto"',
  default: 'auto',
  description:
    'Free space, in bytes, below which new mail, imports and uploads are refused with a temporary error (HTTP 503 `storage_full`, SMTP 452 4.3.1) while queued mail, webhooks and reads go on, as Postfix\'s `queue_minfree`. Checked on the file systems of the SQLite database and of `dataDir`. "auto" is 256 MB or 5% of the file system, whichever is smaller; 0 turns the check off.',
  parse: (v, fromEnv) => {
    if (v === 'auto') return 'auto';
    const n = fromEnv && typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
    if (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0) return n;
    return settingFail(`must be "auto" or a number of bytes (0 or more), got ${JSON.stringify(v)}`);
  },
};

export const schema = {
  database: databaseUrl,
  databasePoolSize: int(10, 'PostgreSQL connection pool size per node.', 1, 1000),
  databaseAcquireTimeoutMs: int(
    5000,
    'Longest a request waits for a database connection (PostgreSQL: a free pool slot or a new connection; SQLite: the write lock) before it is refused with a retryable 503 `storage_unavailable` (SMTP 451 4.3.0).',
    100,
    600_000,
  ),
  databaseStatementTimeoutMs: int(
    30_000,
    'PostgreSQL: longest one statement may run (`statement_timeout`, and the client gives up on a silent server 5 s later); 0 for no limit (e.g. behind a PgBouncer that refuses startup parameters). Migrations run without it.',
    0,
    3_600_000,
  ),
  storage: {
    minFreeBytes,
  },
  dataDir: str('./data', 'Directory for generated files: the secret key, self-signed TLS certificates.'),
  secretKey,
  log: {
    level: oneOf(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      'info',
      'Log level of `mailsvc serve` (its log goes to stdout).',
    ),
    format: oneOf(
      ['auto', 'pretty', 'json'] as const,
      'auto',
      'How `mailsvc serve` writes its log: `pretty` (one coloured line per entry, local time), `json` (one JSON object per line, for journald and log shippers), or `auto`: pretty when stdout is a terminal, JSON otherwise. `serve --log-format` overrides it.',
    ),
  },
  http: {
    host: str('127.0.0.1', 'Address the HTTP API listens on.'),
    port: port(3000, 'HTTP API port.'),
    publicUrl: url(
      'http://localhost:3000',
      'Public base URL, used in tracking and unsubscribe links; also the OAuth issuer (/.well-known/oauth-authorization-server) and the base of the resources /v1 and /mcp its tokens are for: set it to the address clients use.',
    ),
    bodyLimit: int(
      32 * 1024 * 1024,
      'Largest accepted request body in bytes (413 above it); room for a message with 7 MB of base64 attachments.',
      1024,
    ),
    bodyMemory: int(
      16 * 1024 * 1024,
      "Bytes of large messages (1 MB and over) handled at once by the intakes: JSON request bodies (e.g. messages with attachments) and SMTP submissions; more wait for room, in the order they came (one larger than this runs alone). A JSON body costs about 2.5 times its size of the main thread's V8 heap while its request runs (the text, the parsed document, the composed message), an SMTP message about 3 times its size outside it: keep it well under the heap limit the launcher sets (bin/mailsvc.js). The default handles one message with 7 MB of attachments at a time beside smaller large ones; messages under 1 MB never wait.",
      1024 * 1024,
      16 * 1024 * 1024 * 1024,
    ),
    trustProxy,
    importLimit: int(
      100 * 1024 * 1024,
      'Largest CSV file a contact import accepts (POST /v1/contacts/imports), in bytes (413 above it); the file is streamed to `<dataDir>/imports/`, never held in memory, then kept in the database until imported, so that any node can finish it.',
      1,
    ),
  },
  smtp: {
    submission: {
      enabled: bool(true, 'Run the SMTP submission listeners.'),
      host: str('127.0.0.1', 'Address the submission listeners listen on.'),
      port: port(2587, 'Submission port with STARTTLS (587 in production).'),
      tlsPort: port(2465, 'Submission port with implicit TLS (465 in production).'),
      implicitTls: bool(true, 'Run the implicit-TLS submission listener on smtp.submission.tlsPort.'),
      tls: tlsFiles,
      allowInsecureAuth: bool(false, 'Allow AUTH without TLS from non-loopback clients (never in production).'),
      plaintextAuthOnLoopback: bool(
        true,
        'Allow AUTH without TLS from loopback clients (local applications on the same machine).',
      ),
      maxMessageSize: int(
        25 * 1024 * 1024,
        'Largest message accepted over SMTP in bytes (advertised with SIZE).',
        1024,
      ),
      maxRecipients: int(50, 'Most recipients per SMTP transaction.', 1),
      trustedNetworks: json<string[]>(
        'string[] (CIDR)',
        [],
        'Clients in these networks (e.g. ["127.0.0.1/32"]) may submit without AUTH, as smtp.submission.trustedWorkspace, like Postfix mynetworks: for printers and scripts that cannot authenticate.',
        (v) => {
          if (!Array.isArray(v) || !v.every((c) => typeof c === 'string' && isCidr(c)))
            return settingFail('must be an array of CIDR ranges such as "127.0.0.1/32" or "10.0.0.0/8"');
          return v as string[];
        },
      ),
      trustedWorkspace: optionalStr(
        'Workspace id that mail from trustedNetworks is sent as (null: the default workspace). Such mail is live, never test mail.',
      ),
    },
    inbound: {
      enabled: bool(
        false,
        'Run the inbound listener: the MX for receiving routes, bounces (DSN) and complaints (ARF).',
      ),
      host: str('127.0.0.1', 'Address the inbound listener listens on.'),
      port: port(2525, 'Inbound port (25 in production).'),
      feedbackAddresses: stringList(
        [],
        'Addresses (besides the VERP return paths) that take feedback-loop complaint reports (ARF), e.g. ["fbl@bounces.example.com"]: the address registered with each mailbox provider.',
      ),
      maxMessageSize: int(
        25 * 1024 * 1024,
        'Largest message accepted by the inbound listener, in bytes (advertised with SIZE; 552 above it).',
        1024,
      ),
      maxRecipients: int(100, 'Most recipients per inbound SMTP transaction (452 for the next one).', 1),
      maxConnections: int(500, 'Inbound SMTP connections open at once (421 above it).', 1),
      maxConnectionsPerIp: int(10, 'Inbound SMTP connections open at once from one client address (421 above it).', 1),
      commandsPerMinutePerIp: int(
        1200,
        'MAIL FROM and RCPT TO commands per minute from one client address (421 above it).',
        1,
      ),
      rejectDmarcFailures: bool(
        false,
        'Refuse (550 5.7.1) received mail that fails DMARC when the sender domain publishes p=reject. Off: such mail is taken and its DMARC result recorded.',
      ),
    },
  },
  delivery: {
    enabled: bool(true, 'Run delivery workers in this process.'),
    hostname: str(hostname(), 'EHLO name of outgoing connections; should match the server reverse DNS.'),
    dnsServers: stringList(
      [],
      'DNS servers for every look-up (MX, A/AAAA, TXT, domain verification), e.g. ["127.0.0.1:5353"]; empty uses the system resolver.',
    ),
    port: port(25, 'Port used to connect to MX hosts.'),
    relay,
    concurrency: int(20, 'Messages delivered at the same time by this node.', 1, 10000),
    defaultDomainLimit: json<DomainLimit>(
      '{ concurrency, perMinute }',
      { concurrency: 10, perMinute: 1200 },
      'Limits of a destination (a mailbox provider, or an MX host of none) per source address, unless delivery.providerLimits or delivery.domainLimits names it.',
      (v) => (isDomainLimit(v) ? v : settingFail(`must be ${LIMIT_SHAPE}`)),
    ),
    domainLimits,
    providerLimits,
    providers,
    backoff: {
      pauseSeconds: int(
        30,
        'A provider that answers "slow down" pauses on that source address this long at first, doubling while such replies continue.',
        1,
      ),
      maxPauseSeconds: int(600, 'The longest such pause.', 1),
    },
    slowDownReplies: json<string[]>(
      'string[]',
      [],
      'More replies that mean "slow down" (regular expressions, case-insensitive, matched against the whole reply, e.g. "^421 .*try again in a few minutes"), checked before the built-in table (docs/deliverability.md, Adaptive shaping): the provider backs off on that address and the message waits.',
      (v) => {
        if (!Array.isArray(v) || !v.every((s) => typeof s === 'string' && s !== ''))
          return settingFail(`must be an array of regular expressions, got ${JSON.stringify(v)}`);
        for (const pattern of v) {
          try {
            new RegExp(pattern, 'i');
          } catch (err) {
            return settingFail(`${JSON.stringify(pattern)} is not a regular expression: ${(err as Error).message}`);
          }
        }
        return v as string[];
      },
    ),
    warmup: {
      start: int(
        50,
        'IP warm-up: messages per provider an address in warm-up may send on its first day; the cap doubles each day (50, 100, 200, 400, …) until it reaches warmup.target. An address may have a schedule of its own (mailsvc ip-pools warmup --schedule).',
        1,
      ),
      target: int(
        100_000,
        'IP warm-up: the daily cap per provider at which an address is warm and its warm-up ends.',
        1,
      ),
      daySeconds: int(86_400, 'IP warm-up: the length of a warm-up day (shorter only for tests).', 1),
    },
    reportInterval: int(
      5000,
      'Milliseconds between the reports each node writes of its delivery destinations (state, limits, back-off) for `mailsvc delivery status`, `queue list` and GET /v1/delivery/providers.',
      100,
    ),
    retrySchedule: intList(
      [60, 300, 900, 1800, 3600, 7200, 14400],
      'Seconds to wait before each retry after a temporary failure; the last value repeats until maxQueueLifetime.',
      0,
    ),
    maxQueueLifetime: int(3 * 24 * 3600, 'Seconds after which an undeliverable message bounces.', 1),
    leaseSeconds: int(
      30,
      'How long a node owns a claimed message before another may take it; renewed every third of it while the message is in hand, so a node that dies gives its mail up within this long.',
      5,
    ),
    pollInterval: int(1000, 'Milliseconds between queue polls when idle.', 10),
    timeoutSeconds: int(60, 'Timeout for each SMTP step (connect, greeting, each command, data).', 1),
    requireTls: bool(
      false,
      'Refuse to deliver without STARTTLS (certificate not verified). MTA-STS enforce policies require verified TLS regardless.',
    ),
    mtaSts: bool(
      true,
      'Honour MTA-STS (RFC 8461): to a domain with an enforce policy, deliver only over verified TLS to the MX hosts it names.',
    ),
    tlsCaFile: optionalStr(
      'PEM file of CA certificates trusted, besides the public roots bundled with Node, when verifying an MX certificate (MTA-STS enforce) or the relay certificate: for a private CA.',
    ),
    workers: {
      ...threadCount,
      description:
        'Delivery threads: each runs the delivery job with its own database connection, off the main event loop that keeps HTTP and SMTP intake; "auto" is half the CPU cores (1 on 2 cores, 0 on 1); 0 delivers on the main thread.',
    },
    signingThreads: threadCount,
    // Each thread is a V8 isolate of its own, sized for what it does; V8's defaults are sized
    // for a browser tab or a lone server (a 4 GB heap that grows to 4 times what it holds, a
    // young generation of 48 MB on Node 20 and 192 MB on Node 24, per isolate).
    threadMemory: {
      youngGenerationMb: int(
        6,
        "Young generation of each delivery thread's V8 heap, in MB (resourceLimits.maxYoungGenerationSizeMb; a third of it is each semi-space): short-lived objects of a delivery (rows, replies, timers) die there; larger trades memory for fewer scavenges.",
        3,
        1024,
      ),
      heapMb: int(
        128,
        "Old generation limit of each delivery thread's V8 heap, in MB (resourceLimits.maxOldGenerationSizeMb). Message bodies are Buffers outside the heap; under 256 MB V8 also grows the heap less eagerly past what it holds. A thread over it is replaced and its mail given back to the queue.",
        32,
        16384,
      ),
    },
    signingThreadMemory: {
      youngGenerationMb: int(
        6,
        "Young generation of each signing thread's V8 heap, in MB (threads that DKIM-sign and compose, delivery.signingThreads).",
        3,
        1024,
      ),
      heapMb: int(
        128,
        "Old generation limit of each signing thread's V8 heap, in MB. Composing a message at smtp.submission.maxMessageSize holds its parts on the heap for a moment; a thread over it is replaced and the message tried again later.",
        32,
        16384,
      ),
    },
    returnPathSubdomain: str(
      'bounces',
      'VERP envelope sender domain: b-<id>-<tag>@<this>.<sending domain> (empty: the sending domain itself). Publish an MX and SPF for it (docs/api.md, Domains).',
    ),
    shutdownTimeout: int(
      20,
      'Seconds a stopping server lets SMTP transactions in flight finish before it abandons them (they are released to the queue).',
      0,
    ),
  },
  dkim: {
    host: str(
      'dkim.localhost',
      'The zone holding DKIM public keys: customers CNAME <token>._domainkey.<their domain> to <token>.<dkim.host>.',
    ),
  },
  domains: {
    recheckInterval: int(300, 'Seconds between automatic DNS checks of pending domains (0 disables).', 0),
  },
  deliverability: {
    checkInterval: int(
      6 * 3600,
      'Seconds between automatic deliverability checks (SPF, DMARC, MTA-STS, TLS-RPT, DKIM) of every domain; a change of status emits domain.updated (0 disables).',
      0,
    ),
    sendingIps: stringList(
      [],
      'Public addresses this server sends from (SPF, blocklists, reverse DNS); empty: the A and AAAA records of delivery.hostname.',
    ),
    dnsbl: stringList(
      ['zen.spamhaus.org'],
      'DNS blocklists `mailsvc doctor` looks the sending addresses up in, through delivery.dnsServers (Spamhaus refuses queries from public resolvers: use your own).',
    ),
    ntpServers: stringList(
      ['pool.ntp.org'],
      'NTP servers `mailsvc doctor` compares the clock with (empty: skip the check).',
    ),
    reportDomain: optionalStr(
      'Domain whose dmarc@ and tls-reports@ addresses take DMARC aggregate and TLS reports on the inbound listener (the rua to publish); null: delivery.hostname.',
    ),
    guard: {
      enabled: bool(
        true,
        "Run the reputation guard: above the pause thresholds a sending domain's marketing mail is held (transactional mail keeps flowing) until resumed.",
      ),
      interval: int(60, "Seconds between evaluations of every sending domain's bounce and complaint rates.", 1),
      windowHours: int(24, 'Hours of mail the rates are computed over (rolling).', 1, 24 * 30),
      minimumSent: int(200, 'Messages a domain must have sent in the window before its rates are judged.', 1),
      bounceWarning: percent(
        5,
        'Hard-bounce rate (% of messages sent: accepted or bounced) above which a domain is in warning.',
      ),
      bouncePause: percent(10, 'Hard-bounce rate (% of messages sent) above which marketing mail is held.'),
      complaintWarning: percent(
        0.1,
        "Complaint rate (% of messages accepted by the recipients' servers) above which a domain is in warning.",
      ),
      complaintPause: percent(0.3, 'Complaint rate (% of messages accepted) above which marketing mail is held.'),
      engagementWarning: percent(
        1,
        "Percent of a domain's tracked marketing messages (delivered in the window, at least minimumSent) opened by people below which it is in warning; Apple Mail Privacy Protection's prefetch and scanners are not people. It warns, it never holds mail (0: off).",
      ),
    },
  },
  webhooks: {
    enabled: bool(true, 'Run the webhook dispatcher in this process (events are recorded for delivery either way).'),
    allowPrivateNetworks: bool(
      false,
      'Allow http:// and private, loopback and link-local webhook URLs (local testing only).',
    ),
    timeoutSeconds: int(
      30,
      'Seconds a webhook endpoint has to answer one delivery; no answer is a failed attempt.',
      1,
      300,
    ),
    legacySchedule: intList(
      [60, 300, 1800],
      'Legacy (/api/v1) endpoints: seconds before each retry after the immediate first attempt; when they run out the delivery fails.',
    ),
    schedule: intList(
      [60, 300, 1800, 7200, 18000],
      'Versioned (/v1) endpoints: seconds before each retry after the immediate first attempt; the last value repeats until webhooks.disableAfterSeconds.',
    ),
    disableAfterSeconds: int(
      5 * 24 * 3600,
      'A versioned endpoint failing continuously this long is disabled, and a versioned delivery this old stops being retried.',
      1,
    ),
    concurrency: int(50, 'Webhook deliveries in flight at once on this node.', 1, 10000),
    perEndpointConcurrency: int(
      16,
      'Deliveries in flight at once per endpoint, so one slow endpoint cannot hold up the others.',
      1,
      1000,
    ),
    pollInterval: int(
      1000,
      'Milliseconds between looks for deliveries whose retry came due; new events are sent at once, and a busy endpoint is refilled as its attempts finish.',
      10,
    ),
  },
  workflows: {
    enabled: bool(
      true,
      'Run the workflow runner in this process: start runs from events and execute their steps (events are recorded for it either way).',
    ),
    concurrency: int(10, 'Workflow runs executing a step at the same time on this node.', 1, 1000),
    leaseSeconds: int(
      30,
      'How long a node owns a claimed run or trigger before another may take it; renewed every third of it while in hand, so a node that dies gives its runs up within this long.',
      5,
    ),
    pollInterval: int(1000, 'Milliseconds between looks for due runs and new triggers when idle.', 10),
    retrySchedule: intList(
      [10, 60, 300, 1800, 7200],
      'Seconds before each retry of a step that failed temporarily (rate limit, database); when they run out the run fails.',
    ),
  },
  inboxes: {
    agent: {
      url: optionalStr(
        "An OpenAI-compatible chat-completions endpoint (`https://…/v1/chat/completions`) that inbox agents call: each new message of an inbox whose agent allows at least one action is passed to it, and the actions it answers with are carried out within what the inbox's settings allow. Null: no agent runs (the settings are still stored and served, and say so).",
      ),
      model: str('', 'The model named in every request to inboxes.agent.url.'),
      apiKey: optionalStr('Sent as `Authorization: Bearer …` to inboxes.agent.url; null: no Authorization header.'),
      timeoutSeconds: int(
        60,
        'Seconds the endpoint has to answer; no answer fails the run (it is tried again up to inboxes.agent.attempts times).',
        1,
        600,
      ),
      attempts: int(3, 'Tries per message before its run is recorded as failed.', 1, 20),
      allowPrivateNetworks: bool(
        false,
        'Allow http:// and private, loopback and link-local endpoint addresses (a model served on the same network).',
      ),
      pollInterval: int(
        1000,
        'Milliseconds between looks for inbox-agent runs whose retry came due or whose node died (a new message wakes its node at once); each node runs one at a time, under a lease of twice timeoutSeconds.',
        10,
      ),
    },
  },
  attachments: {
    allowPrivateNetworks: bool(
      false,
      'Allow attachment URLs on private, loopback and link-local addresses (local testing only).',
    ),
    fetchTimeoutSeconds: int(10, 'Timeout for fetching an attachment URL.', 1),
  },
  tracking: {
    opens: bool(true, 'Default open tracking for marketing mail (transactional is off unless asked).'),
    clicks: bool(true, 'Default click tracking for marketing mail (transactional is off unless asked).'),
    engagementRules: optionalStr(
      'Directory holding agents.txt, networks.txt and apple-egress.csv, the data that tells people from machines (Apple Mail Privacy Protection, image proxies, scanners) in opens and clicks; null: the files shipped in config/engagement/ (docs/engagement.md). Read at start.',
    ),
    scannerClickSeconds: int(
      10,
      "A click sooner than this many seconds after the message was delivered, with no open by a browser from the same client before it, is classified as a security scanner's (0: off). Timing alone never decides: an earlier open by the same client makes it a person's.",
      0,
      3600,
    ),
    linkBurstMs: int(
      1000,
      "Clicks on two different links of one message closer together than this many milliseconds are a scanner's (0: off).",
      0,
      60_000,
    ),
  },
  retention: {
    days: int(
      30,
      'Days to keep delivery attempts, events, webhook deliveries, received messages, finished workflow runs and API request logs.',
      1,
    ),
    auditDays: int(
      365,
      'Days to keep the audit log (who changed what: GET /v1/audit-log, `mailsvc audit`); nothing else deletes from it.',
      1,
    ),
  },
  metrics: {
    enabled: bool(true, 'Serve Prometheus metrics at GET /metrics on the HTTP port.'),
    token: optionalStr('Bearer token required by GET /metrics; null leaves it open.'),
  },
  templates: {
    clientSupportData: optionalStr(
      "A JSON file of which email clients lack which HTML and CSS features, in the form of config/email-clients/caniemail.json (rebuilt from caniemail.com's data by scripts/client-support-data.ts); null: the file shipped with mailsvc. Read on first check, never fetched.",
    ),
  },
  mcp: {
    enabled: bool(
      true,
      'Serve the Model Context Protocol (assistants: docs/assistants.md) at /mcp on the HTTP port; `mailsvc mcp` (stdio) works either way.',
    ),
    allowedOrigins: stringList(
      [],
      "Origins (`https://app.example`) allowed to call /mcp from a browser besides http.publicUrl's; a request with any other Origin header is refused with 403 (DNS rebinding). Clients that send no Origin (desktop assistants, SDKs) are not affected.",
    ),
  },
  dashboard: {
    password: optionalStr('Dashboard password; null allows only one-time links from `mailsvc dashboard login`.'),
    mailFrom: optionalStr(
      'The sender of invitation emails (`mailsvc users invite`), e.g. "mailsvc <team@example.com>"; its domain must be a verified domain of the inviting workspace. null: the workspace\'s default sender (its default from address, else noreply@ its first verified domain). Without either, invitations are not mailed and the link is printed.',
    ),
  },
} as const;

type ConfigOf<S> = { -readonly [K in keyof S]: S[K] extends Setting<infer T> ? T : ConfigOf<S[K]> };
export type Config = ConfigOf<typeof schema>;

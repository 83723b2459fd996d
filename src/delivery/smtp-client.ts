import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Logger } from '../shared/logger.js';

/**
 * The SMTP client seam of delivery, over nodemailer's SMTPConnection: EHLO with our host
 * name, STARTTLS (opportunistic unless a policy requires it), PIPELINING when the server
 * offers it (nodemailer sends the envelope and DATA in one go), several recipients per
 * transaction, timeouts on every step, and connections kept open for the next message to
 * the same server.
 */

/**
 * - `opportunistic`: STARTTLS when offered, certificate not verified (encryption against
 *   passive listeners, as Postfix's `may` level and every large MTA do); plain text when not
 *   offered or when the TLS handshake fails.
 * - `required`: STARTTLS or no delivery; certificate not verified (`delivery.requireTls`).
 * - `verified`: STARTTLS with a certificate valid for the MX host name (MTA-STS enforce).
 */

/**
 * Which recipients the connection had accepted when a transaction failed: nodemailer keeps it
 * only in its private `_envelope` (pinned major; smtp-client.test.ts holds the behaviour).
 */
const envelopeOf = (conn: SMTPConnection): EnvelopeState | undefined =>
  // eslint-disable-next-line no-restricted-syntax -- nodemailer declares no such field
  (conn as unknown as { _envelope?: EnvelopeState })._envelope;

export type TlsMode = 'opportunistic' | 'required' | 'verified';

export interface SmtpTarget {
  /** Host name: SNI, certificate checks, logs. */
  host: string;
  /** The address to connect to (resolved through our resolver, never by nodemailer). */
  address: string;
  port: number;
  tls: TlsMode;
  /** TLS from the first byte (a relay on port 465). */
  secure?: boolean;
  auth?: { user: string; pass: string } | null;
  /** For relays only: verify the relay's certificate. */
  verifyCertificate?: boolean;
  /** The local address to send from (an IP pool's); absent: the system's choice. */
  localAddress?: string | null;
  /** The EHLO name for this source address; absent: the client's own (delivery.hostname). */
  ehlo?: string;
  /** Messages a connection to this destination carries before it is retired (its provider's limit); absent: the client's. */
  maxMessages?: number | undefined;
}

export interface SmtpEnvelope {
  from: string;
  to: string[];
  size: number;
}

export interface RecipientReply {
  recipient: string;
  accepted: boolean;
  code: number | null;
  response: string;
}

export type SmtpResult =
  /** The transaction ran: every recipient has the server's answer. */
  | { kind: 'replied'; tls: boolean; replies: RecipientReply[] }
  /** No session could be set up (refused, timeout, bad greeting, TLS): the next MX may work. */
  | { kind: 'unreachable'; tls: boolean; errorCode: string; code: number | null; response: string | null; message: string }
  /** The session broke during the transaction: the outcome is unknown. */
  | { kind: 'interrupted'; tls: boolean; errorCode: string; message: string };

export interface SmtpClient {
  send(target: SmtpTarget, envelope: SmtpEnvelope, message: Buffer): Promise<SmtpResult>;
  /** Closes idle connections; with `abort`, also the ones in use. */
  close(abort?: boolean): Promise<void>;
}

export interface SmtpClientOptions {
  /** EHLO name. */
  name: string;
  timeoutMs: number;
  logger: Logger;
  /** Idle connections are closed after this long. */
  idleMs?: number;
  /** A connection is retired after this many messages. */
  maxMessagesPerConnection?: number;
  /** Extra CA certificates (PEM) trusted when a certificate is verified (`delivery.tlsCaFile`). */
  extraCa?: string | null;
}

interface NodemailerError extends Error {
  code?: string;
  /** The system error code nodemailer replaced with its own (e.g. CERT_HAS_EXPIRED under ESOCKET). */
  originalCode?: string;
  response?: string;
  responseCode?: number;
  command?: string;
  recipient?: string;
  rejectedErrors?: NodemailerError[];
}

interface Pooled {
  key: string;
  conn: SMTPConnection;
  uses: number;
  maxUses: number;
  broken: boolean;
  idleTimer: NodeJS.Timeout | null;
}

const codeOf = (response: string | undefined | null): number | null => {
  const m = /^(\d{3})/.exec(response ?? '');
  return m ? Number(m[1]) : null;
};

export function createSmtpClient(options: SmtpClientOptions): SmtpClient {
  const idleMs = options.idleMs ?? 5000;
  const maxUses = options.maxMessagesPerConnection ?? 100;
  const idle = new Map<string, Pooled[]>();
  const inUse = new Set<Pooled>();
  /** Settles every connect and send in progress with an error (nodemailer's close() forgets them). */
  const aborts = new Set<() => void>();
  const aborted = (): NodemailerError => Object.assign(new Error('aborted: mailsvc is stopping'), { code: 'EABORTED' });

  // Node trusts only the given `ca` when there is one, so the bundled public roots go along
  // with the extra CAs; and one context serves every verified connection, because building
  // it from ~150 roots takes some 25 ms, too much for each connection.
  const verifyingContext: SecureContext | null = options.extraCa ? createSecureContext({ ca: [...rootCertificates, options.extraCa] }) : null;

  // A kept-alive connection serves only the same source address and EHLO name.
  const keyOf = (t: SmtpTarget) => [t.address, t.port, t.host, t.tls, t.secure ? 'secure' : '', t.auth?.user ?? '', t.localAddress ?? '', t.ehlo ?? ''].join('|');

  const discard = (p: Pooled, quit: boolean) => {
    p.broken = true;
    if (p.idleTimer) clearTimeout(p.idleTimer);
    const list = idle.get(p.key);
    if (list) {
      const i = list.indexOf(p);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) idle.delete(p.key);
    }
    try {
      if (quit && !p.conn.destroyed) p.conn.quit();
      else p.conn.close();
    } catch {
      // already gone
    }
  };

  const park = (p: Pooled) => {
    inUse.delete(p);
    if (p.broken || p.conn.destroyed || p.uses >= p.maxUses) return discard(p, !p.broken);
    p.idleTimer = setTimeout(() => discard(p, true), idleMs);
    p.idleTimer.unref();
    const list = idle.get(p.key) ?? [];
    list.push(p);
    idle.set(p.key, list);
  };

  const open = (target: SmtpTarget, plainOnly: boolean): Promise<Pooled | NodemailerError> =>
    new Promise<Pooled | NodemailerError>((outer) => {
      const abort = () => {
        if (!settled) {
          settled = true;
          discard(pooled, false);
          outer(aborted());
        }
      };
      const resolve = (v: Pooled | NodemailerError) => {
        aborts.delete(abort);
        outer(v);
      };
      aborts.add(abort);
      const verify = target.tls === 'verified' || target.verifyCertificate === true;
      const conn = new SMTPConnection({
        host: target.address,
        port: target.port,
        secure: target.secure === true,
        servername: target.host,
        name: target.ehlo ?? options.name,
        ...(target.localAddress ? { localAddress: target.localAddress } : {}),
        connectionTimeout: options.timeoutMs,
        greetingTimeout: options.timeoutMs,
        socketTimeout: options.timeoutMs,
        logger: false,
        ...(plainOnly
          ? { ignoreTLS: true }
          : target.tls === 'opportunistic'
            ? { opportunisticTLS: true }
            : { requireTLS: true }),
        // `servername` is also the name Node checks the certificate against: the MX (or relay)
        // host name, never the address connected to.
        tls: {
          servername: target.host,
          rejectUnauthorized: verify,
          ...(verify && verifyingContext ? { secureContext: verifyingContext } : {}),
        },
      });
      const pooled: Pooled = { key: keyOf(target), conn, uses: 0, maxUses: target.maxMessages ?? maxUses, broken: false, idleTimer: null };
      let settled = false;
      conn.on('error', (err: NodemailerError) => {
        pooled.broken = true;
        if (!settled) {
          settled = true;
          resolve(err);
        }
      });
      conn.on('end', () => {
        pooled.broken = true;
        if (pooled.idleTimer) discard(pooled, false);
      });
      conn.connect((err?: NodemailerError) => {
        if (settled) return;
        if (err) {
          settled = true;
          return resolve(err);
        }
        if (!target.auth) {
          settled = true;
          return resolve(pooled);
        }
        conn.login({ user: target.auth.user, pass: target.auth.pass }, (loginErr) => {
          settled = true;
          if (loginErr) {
            discard(pooled, true);
            return resolve(loginErr);
          }
          resolve(pooled);
        });
      });
    });

  const acquire = async (target: SmtpTarget, fresh: boolean): Promise<Pooled | NodemailerError> => {
    const list = fresh ? undefined : idle.get(keyOf(target));
    while (list && list.length > 0) {
      const p = list.pop()!;
      if (p.idleTimer) clearTimeout(p.idleTimer);
      p.idleTimer = null;
      if (!p.broken && !p.conn.destroyed) return p;
      discard(p, false);
    }
    if (list && list.length === 0) idle.delete(keyOf(target));
    let result = await open(target, false);
    // A server that offers STARTTLS but cannot complete it still gets the mail in plain text,
    // unless a policy requires TLS.
    if (!isPooled(result) && result.code === 'ETLS' && target.tls === 'opportunistic' && !target.secure && !target.auth) {
      options.logger.info({ component: 'delivery', mxHost: target.host }, 'STARTTLS failed, retrying without TLS');
      result = await open(target, true);
    }
    return result;
  };

  const transmit = (p: Pooled, envelope: SmtpEnvelope, message: Buffer): Promise<{ err: NodemailerError | null; info: SMTPConnection.SentMessageInfo | null }> =>
    new Promise((resolve) => {
      let done = false;
      const finish = (err: NodemailerError | null, info: SMTPConnection.SentMessageInfo | null) => {
        if (done) return;
        done = true;
        aborts.delete(abort);
        resolve({ err, info });
      };
      const abort = () => finish(aborted(), null);
      aborts.add(abort);
      p.uses++;
      p.conn.send(
        { from: envelope.from, to: envelope.to, size: envelope.size, use8BitMime: hasEightBit(message) },
        message,
        (err, info) => finish((err) ?? null, info ?? null),
      );
    });

  /**
   * RSET after a refused transaction, so the connection can carry the next one. nodemailer
   * never calls back a RSET whose connection fails (closed, timed out): it only emits 'error'
   * or 'end'. Waiting on the callback alone held the destination's slot for good, so any of
   * the three settles it, and so does stopping.
   */
  const reset = (p: Pooled): Promise<void> =>
    new Promise((resolve) => {
      if (p.broken || p.conn.destroyed) return resolve();
      let done = false;
      const finish = (broken: boolean) => {
        if (done) return;
        done = true;
        if (broken) p.broken = true;
        p.conn.off('error', gone);
        p.conn.off('end', gone);
        aborts.delete(abort);
        resolve();
      };
      const gone = () => finish(true);
      const abort = () => finish(true);
      p.conn.once('error', gone);
      p.conn.once('end', gone);
      aborts.add(abort);
      p.conn.reset((err) => finish(Boolean(err)));
    });

  return {
    async send(target, envelope, message) {
      for (let attempt = 0; ; attempt++) {
        const acquired = await acquire(target, attempt > 0);
        if (!isPooled(acquired)) {
          return {
            kind: 'unreachable',
            tls: false,
            errorCode: errorCodeOf(acquired),
            code: acquired.responseCode ?? codeOf(acquired.response),
            response: acquired.response ?? null,
            message: acquired.message,
          };
        }
        const p = acquired;
        const reused = p.uses > 0;
        inUse.add(p);
        const tls = p.conn.secure === true;
        const { err, info } = await transmit(p, envelope, message);
        if (!err && info) {
          park(p);
          return { kind: 'replied', tls, replies: repliesOnSuccess(envelope.to, info) };
        }
        const e = err!;
        const replies = repliesOnError(envelope.to, e, envelopeOf(p.conn)) ?? repliesBeforeClose(envelope.to, e, p.conn.lastServerResponse, envelopeOf(p.conn));
        if (replies) {
          await reset(p);
          park(p);
          return { kind: 'replied', tls, replies };
        }
        p.broken = true;
        park(p);
        // A kept-alive connection the server closed meanwhile: once more on a fresh one.
        if (reused && attempt === 0 && !e.response) continue;
        return { kind: 'interrupted', tls, errorCode: errorCodeOf(e), message: e.message };
      }
    },

    async close(abort = false) {
      for (const list of [...idle.values()]) for (const p of [...list]) discard(p, true);
      if (abort) {
        for (const a of [...aborts]) a();
        for (const p of [...inUse]) discard(p, false);
      }
    },
  };
}

interface EnvelopeState {
  accepted?: string[];
  rejectedErrors?: NodemailerError[];
}

const isPooled = (v: Pooled | NodemailerError): v is Pooled => (v as Pooled).conn !== undefined;

/** Certificate and handshake failures surface as socket errors; report them as TLS. */
const errorCodeOf = (e: NodemailerError): string =>
  // The source address cannot be bound here: the operator's to fix, told apart from network failures.
  e.originalCode === 'EADDRNOTAVAIL'
    ? 'EADDRNOTAVAIL'
    : /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS|ERR_SSL|HOSTNAME_MISMATCH|ALTNAME/i.test(e.originalCode ?? '') || /certificate/i.test(e.message)
    ? 'ETLS'
    : (e.code ?? 'ECONNECTION');

/**
 * A server that answers 421 (or another failure) and closes the connection at once ends the
 * session with that reply: recipients without an answer of their own get it.
 */
function repliesBeforeClose(recipients: string[], err: NodemailerError, last: string | false, envelope: EnvelopeState | undefined): RecipientReply[] | null {
  if (err.code !== 'ECONNECTION') return null;
  const response = err.response ?? (typeof last === 'string' && /^[45]\d\d[ -]/.test(last) ? last : null);
  if (!response) return null;
  const rejected = rejectedReplies(envelope?.rejectedErrors);
  return recipients.map((r) => rejected.get(r) ?? { recipient: r, accepted: false, code: codeOf(response), response });
}

const hasEightBit = (message: Buffer): boolean => {
  for (let i = 0; i < message.length; i++) if (message[i]! > 127) return true;
  return false;
};

function rejectedReplies(errors: NodemailerError[] | undefined): Map<string, RecipientReply> {
  const out = new Map<string, RecipientReply>();
  for (const e of errors ?? []) {
    if (!e.recipient) continue;
    out.set(e.recipient, { recipient: e.recipient, accepted: false, code: e.responseCode ?? codeOf(e.response), response: e.response ?? e.message });
  }
  return out;
}

function repliesOnSuccess(recipients: string[], info: SMTPConnection.SentMessageInfo): RecipientReply[] {
  const rejected = rejectedReplies(info.rejectedErrors);
  const accepted = new Set(info.accepted.map(String));
  return recipients.map(
    (r) =>
      rejected.get(r) ??
      (accepted.has(r)
        ? { recipient: r, accepted: true, code: codeOf(info.response), response: info.response }
        : { recipient: r, accepted: false, code: null, response: 'recipient not confirmed by the server' }),
  );
}

/**
 * Per-recipient answers when the server replied negatively inside the transaction (MAIL FROM,
 * RCPT TO, DATA, or the final reply to the message); null when the session itself failed.
 */
function repliesOnError(recipients: string[], err: NodemailerError, envelope: EnvelopeState | undefined): RecipientReply[] | null {
  const everyone = (code: number | null, response: string) => recipients.map((r) => ({ recipient: r, accepted: false, code, response }));
  if (err.code === 'EENVELOPE' && err.command === 'MAIL FROM' && err.response) return everyone(err.responseCode ?? codeOf(err.response), err.response);
  if (err.code === 'EMESSAGE' && !err.response && /larger than allowed/.test(err.message)) {
    return everyone(552, `552 5.3.4 ${err.message}`);
  }
  const rejected = rejectedReplies(err.rejectedErrors ?? envelope?.rejectedErrors);
  if (err.code === 'EENVELOPE' && err.command === 'RCPT TO') {
    return recipients.map((r) => rejected.get(r) ?? { recipient: r, accepted: false, code: err.responseCode ?? codeOf(err.response), response: err.response ?? err.message });
  }
  if ((err.code === 'EENVELOPE' && err.command === 'DATA') || (err.code === 'EMESSAGE' && err.response)) {
    const code = err.responseCode ?? codeOf(err.response);
    return recipients.map((r) => rejected.get(r) ?? { recipient: r, accepted: false, code, response: err.response ?? err.message });
  }
  return null;
}

import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Logger } from '../shared/logger.js';
import type { NodemailerError, TrackedEnvelope } from './smtp-replies.js';

/**
 * The SMTP client's connections, over nodemailer's SMTPConnection: opened with our EHLO name,
 * STARTTLS (opportunistic unless a policy requires it) and timeouts on every step, kept open
 * for the next message to the same server, retired after their message count, and settled
 * with an error when mailsvc stops (nodemailer's close() forgets callbacks in progress).
 */

/**
 * - `opportunistic`: STARTTLS when offered, certificate not verified (encryption against
 *   passive listeners, as Postfix's `may` level and every large MTA do); plain text when not
 *   offered or when the TLS handshake fails.
 * - `required`: STARTTLS or no delivery; certificate not verified (`delivery.requireTls`).
 * - `verified`: STARTTLS with a certificate valid for the MX host name (MTA-STS enforce).
 */
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

export interface Pooled {
  key: string;
  conn: SMTPConnection;
  uses: number;
  maxUses: number;
  broken: boolean;
  idleTimer: NodeJS.Timeout | null;
}

type Transmitted = { err: NodemailerError; info: null } | { err: null; info: SMTPConnection.SentMessageInfo };

export const isPooled = (v: Pooled | NodemailerError): v is Pooled => 'conn' in v;

// A kept-alive connection serves only the same source address and EHLO name.
const keyOf = (t: SmtpTarget) =>
  [
    t.address,
    t.port,
    t.host,
    t.tls,
    t.secure ? 'secure' : '',
    t.auth?.user ?? '',
    t.localAddress ?? '',
    t.ehlo ?? '',
  ].join('|');

const aborted = (): NodemailerError => Object.assign(new Error('aborted: mailsvc is stopping'), { code: 'EABORTED' });

const hasEightBit = (message: Buffer): boolean => {
  for (let i = 0; i < message.length; i++) if (message[i]! > 127) return true;
  return false;
};

export class SmtpConnections {
  private readonly idleMs: number;
  private readonly maxUses: number;
  private readonly idle = new Map<string, Pooled[]>();
  private readonly inUse = new Set<Pooled>();
  /** Settles every connect and send in progress with an error (nodemailer's close() forgets them). */
  private readonly aborts = new Set<() => void>();
  private readonly verifyingContext: SecureContext | null;

  constructor(private readonly options: SmtpClientOptions) {
    this.idleMs = options.idleMs ?? 5000;
    this.maxUses = options.maxMessagesPerConnection ?? 100;
    // Node trusts only the given `ca` when there is one, so the bundled public roots go along
    // with the extra CAs; and one context serves every verified connection, because building
    // it from ~150 roots takes some 25 ms, too much for each connection.
    this.verifyingContext = options.extraCa
      ? createSecureContext({ ca: [...rootCertificates, options.extraCa] })
      : null;
  }

  /** A kept-alive connection to the target, or a new one (`fresh`: always new); the error when none could be set up. */
  async acquire(target: SmtpTarget, fresh: boolean): Promise<Pooled | NodemailerError> {
    const kept = fresh ? null : this.takeIdle(keyOf(target));
    if (kept) {
      this.inUse.add(kept);
      return kept;
    }
    let result = await this.open(target, false);
    // A server that offers STARTTLS but cannot complete it still gets the mail in plain text,
    // unless a policy requires TLS.
    if (
      !isPooled(result) &&
      result.code === 'ETLS' &&
      target.tls === 'opportunistic' &&
      !target.secure &&
      !target.auth
    ) {
      this.options.logger.info({ component: 'delivery', mxHost: target.host }, 'STARTTLS failed, retrying without TLS');
      result = await this.open(target, true);
    }
    if (isPooled(result)) this.inUse.add(result);
    return result;
  }

  /** Back to the idle list for the next message, or closed when it is broken or used up. */
  park(p: Pooled): void {
    this.inUse.delete(p);
    if (p.broken || p.conn.destroyed || p.uses >= p.maxUses) return this.discard(p, !p.broken);
    p.idleTimer = setTimeout(() => this.discard(p, true), this.idleMs);
    p.idleTimer.unref();
    const list = this.idle.get(p.key) ?? [];
    list.push(p);
    this.idle.set(p.key, list);
  }

  /** One transaction: the envelope and the message (pipelined when the server offers it). */
  transmit(p: Pooled, envelope: TrackedEnvelope, message: Buffer): Promise<Transmitted> {
    return new Promise((resolve) => {
      let done = false;
      const finish = (result: Transmitted) => {
        if (done) return;
        done = true;
        this.aborts.delete(abort);
        resolve(result);
      };
      const abort = () => finish({ err: aborted(), info: null });
      this.aborts.add(abort);
      p.uses++;
      envelope.use8BitMime = hasEightBit(message);
      p.conn.send(envelope, message, (err, info) =>
        finish(
          err || !info
            ? { err: err ?? Object.assign(new Error('no result from nodemailer'), { code: 'EPROTOCOL' }), info: null }
            : { err: null, info },
        ),
      );
    });
  }

  /**
   * RSET after a refused transaction, so the connection can carry the next one. nodemailer
   * never calls back a RSET whose connection fails (closed, timed out): it only emits 'error'
   * or 'end'. Waiting on the callback alone held the destination's slot for good, so any of
   * the three settles it, and so does stopping.
   */
  reset(p: Pooled): Promise<void> {
    return new Promise((resolve) => {
      if (p.broken || p.conn.destroyed) return resolve();
      let done = false;
      const finish = (broken: boolean) => {
        if (done) return;
        done = true;
        if (broken) p.broken = true;
        p.conn.off('error', gone);
        p.conn.off('end', gone);
        this.aborts.delete(abort);
        resolve();
      };
      const gone = () => finish(true);
      const abort = () => finish(true);
      p.conn.once('error', gone);
      p.conn.once('end', gone);
      this.aborts.add(abort);
      p.conn.reset((err) => finish(Boolean(err)));
    });
  }

  /** Closes idle connections; with `abort`, also the ones in use, settling what waits on them. */
  close(abort: boolean): void {
    for (const list of [...this.idle.values()]) for (const p of [...list]) this.discard(p, true);
    if (abort) {
      for (const a of [...this.aborts]) a();
      for (const p of [...this.inUse]) this.discard(p, false);
    }
  }

  private takeIdle(key: string): Pooled | null {
    const list = this.idle.get(key);
    if (!list) return null;
    let found: Pooled | null = null;
    while (!found && list.length > 0) {
      const p = list.pop()!;
      if (p.idleTimer) clearTimeout(p.idleTimer);
      p.idleTimer = null;
      if (!p.broken && !p.conn.destroyed) found = p;
      else this.discard(p, false);
    }
    if (list.length === 0) this.idle.delete(key);
    return found;
  }

  private discard(p: Pooled, quit: boolean): void {
    p.broken = true;
    if (p.idleTimer) clearTimeout(p.idleTimer);
    const list = this.idle.get(p.key);
    if (list) {
      const i = list.indexOf(p);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0) this.idle.delete(p.key);
    }
    try {
      if (quit && !p.conn.destroyed) p.conn.quit();
      else p.conn.close();
    } catch {
      // already gone
    }
  }

  private connectionOptions(target: SmtpTarget, plainOnly: boolean): SMTPConnection.Options {
    const verify = target.tls === 'verified' || target.verifyCertificate === true;
    return {
      host: target.address,
      port: target.port,
      secure: target.secure === true,
      servername: target.host,
      name: target.ehlo ?? this.options.name,
      ...(target.localAddress ? { localAddress: target.localAddress } : {}),
      connectionTimeout: this.options.timeoutMs,
      greetingTimeout: this.options.timeoutMs,
      socketTimeout: this.options.timeoutMs,
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
        ...(verify && this.verifyingContext ? { secureContext: this.verifyingContext } : {}),
      },
    };
  }

  /** Connects (and logs in, for a relay); settles once, with the connection or the error. */
  private open(target: SmtpTarget, plainOnly: boolean): Promise<Pooled | NodemailerError> {
    return new Promise<Pooled | NodemailerError>((resolve) => {
      const conn = new SMTPConnection(this.connectionOptions(target, plainOnly));
      const pooled: Pooled = {
        key: keyOf(target),
        conn,
        uses: 0,
        maxUses: target.maxMessages ?? this.maxUses,
        broken: false,
        idleTimer: null,
      };
      let settled = false;
      const settle = (v: Pooled | NodemailerError) => {
        if (settled) return;
        settled = true;
        this.aborts.delete(abort);
        resolve(v);
      };
      const abort = () => {
        if (settled) return;
        settle(aborted());
        this.discard(pooled, false);
      };
      this.aborts.add(abort);
      conn.on('error', (err: NodemailerError) => {
        pooled.broken = true;
        settle(err);
      });
      conn.on('end', () => {
        pooled.broken = true;
        if (pooled.idleTimer) this.discard(pooled, false);
      });
      conn.connect((err?: NodemailerError) => {
        if (settled) return;
        if (err) return settle(err);
        if (!target.auth) return settle(pooled);
        conn.login({ user: target.auth.user, pass: target.auth.pass }, (loginErr) => {
          settle(loginErr ?? pooled);
          if (loginErr) this.discard(pooled, true);
        });
      });
    });
  }
}

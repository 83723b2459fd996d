import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../../config/schema.js';
import type { Services } from '../../services/index.js';
import { MemoryRateLimiter, retryAfterSeconds } from '../../shared/fixed-window.js';
import type { InboundKind, InboundOutcome } from '../../receiving/inbound-kind.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { TlsPair } from './tls-files.js';
import { asListenError } from '../../shared/listen-error.js';
import { toAppError } from '../../shared/errors.js';
import { errorReply, reply } from './reply.js';

interface InboundDeps {
  services: Services;
  /** The kinds of recipient taken, in the order they are asked (receiving/inbound-kinds.ts). */
  kinds: InboundKind[];
  config: Config;
  logger: Logger;
  clock: Clock;
  tls: TlsPair;
}

interface InboundListener {
  port: number;
  close(): Promise<void>;
}

/** The recipients of one transaction: all of one kind. */
interface Transaction {
  kind: InboundKind;
  claims: Map<string, unknown>;
}

/**
 * The inbound listener (`smtp.inbound.*`, port 25 in production): the MX of the bounce
 * domains, of the report domain and of the domains with receiving routes. At RCPT TO it asks
 * the kinds of recipient of receiving/inbound-kinds.ts in turn; an address none claims is
 * refused, so nothing is accepted that would have to bounce later. At DATA the kind that
 * claimed the recipients takes the message, and the 250 comes once what it stored is durable,
 * whichever kind it is. No authentication: mail comes from other mail servers. STARTTLS is
 * offered with the submission certificate.
 */
export async function startInbound(deps: InboundDeps): Promise<InboundListener> {
  const { services, config, logger, clock, tls } = deps;
  const cfg = config.smtp.inbound;
  const log = logger.child({ component: 'smtp-inbound' });
  const kinds = deps.kinds;

  /** One kind's answer to DATA: its reply after the data is on disk; a refusal; or a temporary failure. */
  async function receive(
    kind: InboundKind,
    session: SMTPServerSession,
    raw: Buffer,
    claims: unknown[],
  ): Promise<string> {
    let outcome: InboundOutcome;
    try {
      outcome = await kind.receive(
        {
          raw,
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          recipients: session.envelope.rcptTo.map((r) => r.address),
          remoteAddress: session.remoteAddress,
          helo: session.hostNameAppearsAs || null,
          tls: session.secure,
          sessionId: session.id,
        },
        claims,
      );
      // What the kind changed is on disk before the 250 (Store.durable): a sender never sends twice.
      await services.durable();
    } catch (err) {
      log.error({ err, sessionId: session.id, kind: kind.name }, 'could not take an inbound message');
      throw errorReply(err);
    }
    const fields = { sessionId: session.id, remoteAddress: session.remoteAddress, kind: kind.name };
    if (outcome.kind === 'refused') {
      log.info({ ...fields, reason: outcome.reason }, 'inbound message refused');
      throw reply(outcome.code, outcome.reason);
    }
    log.info({ ...fields, ...outcome.log }, 'inbound message taken');
    return outcome.reply;
  }

  const transactions = new WeakMap<object, Transaction>();

  // Per client address: connections open now, and MAIL/RCPT commands per minute.
  const open = new Map<string, number>();
  const counted = new Set<string>();
  const commands = new MemoryRateLimiter();
  const commandLimit = { limit: cfg.commandsPerMinutePerIp, windowMs: 60_000, soft: false };

  function onConnect(session: SMTPServerSession): void {
    const n = open.get(session.remoteAddress) ?? 0;
    if (n >= cfg.maxConnectionsPerIp)
      throw reply(421, `4.7.0 Too many connections from ${session.remoteAddress}; try again later`);
    open.set(session.remoteAddress, n + 1);
    counted.add(session.id);
    services.metrics.smtpSession('inbound');
  }

  function onClose(session: SMTPServerSession): void {
    if (!counted.delete(session.id)) return;
    const n = (open.get(session.remoteAddress) ?? 1) - 1;
    if (n > 0) open.set(session.remoteAddress, n);
    else open.delete(session.remoteAddress);
  }

  async function countCommand(session: SMTPServerSession): Promise<void> {
    const now = clock.now();
    const decision = await commands.hit(`ip:${session.remoteAddress}`, commandLimit, now);
    if (!decision.allowed)
      throw reply(
        421,
        `4.7.0 Too many commands from ${session.remoteAddress}; try again in ${retryAfterSeconds(decision, now)} s`,
      );
  }

  async function onRcptTo(address: string, session: SMTPServerSession): Promise<void> {
    await countCommand(session);
    const key = address.toLowerCase();
    for (const kind of kinds) {
      const claim = await kind.claim(address);
      if (claim === null) continue;
      const current = transactions.get(session.envelope);
      if (current && current.kind !== kind) {
        // One kind per transaction keeps the reply to DATA one answer for every recipient;
        // 452 makes the client send this recipient again in a transaction of its own.
        throw reply(452, `4.5.3 <${address}>: send this recipient in a separate transaction`);
      }
      const transaction = current ?? { kind, claims: new Map() };
      transaction.claims.set(key, claim);
      transactions.set(session.envelope, transaction);
      return;
    }
    throw reply(550, `5.1.1 <${address}>: no such mailbox here`);
  }

  async function onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    if (stream.sizeExceeded) throw reply(552, `5.3.4 Message too big: at most ${cfg.maxMessageSize} bytes`);
    const transaction = transactions.get(session.envelope);
    const claims = transaction
      ? session.envelope.rcptTo
          .map((r) => transaction.claims.get(r.address.toLowerCase()))
          .filter((c) => c !== undefined)
      : [];
    if (!transaction || claims.length === 0) throw reply(503, '5.5.1 No valid recipients');
    return receive(transaction.kind, session, Buffer.concat(chunks), claims);
  }

  /** Runs a handler for smtp-server; a failure that is not an SMTP reply (the database is down) is a temporary one. */
  const callbackOf =
    <T>(session: SMTPServerSession, run: () => Promise<T>) =>
    (callback: (err?: Error | null, value?: T) => void) =>
      void run().then(
        (value) => callback(null, value),
        (err: Error & { responseCode?: number }) => {
          if (!err.responseCode && toAppError(err).code === 'internal_error')
            log.error({ err, sessionId: session.id }, 'inbound command failed');
          callback(errorReply(err));
        },
      );

  const server = new SMTPServer({
    key: tls.key,
    cert: tls.cert,
    name: config.delivery.hostname,
    banner: 'mailsvc',
    disabledCommands: ['AUTH'],
    authOptional: true,
    size: cfg.maxMessageSize,
    maxClients: cfg.maxConnections,
    maxRecipients: cfg.maxRecipients,
    disableReverseLookup: true,
    logger: false,
    onConnect: (session, callback) => {
      try {
        onConnect(session);
        callback();
      } catch (err) {
        callback(err as Error);
      }
    },
    onClose: (session) => onClose(session),
    onMailFrom: (_address, session, callback) =>
      callbackOf(session, async () => {
        await countCommand(session);
        // Below the disk's reserve: refused before the message is sent (Postfix: 452 4.3.1).
        services.space.ensure();
      })(callback),
    onRcptTo: (address, session, callback) => callbackOf(session, () => onRcptTo(address.address, session))(callback),
    onData: (stream, session, callback) => callbackOf(session, () => onData(stream, session))(callback),
  });

  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', (err: Error) =>
      reject(asListenError(err, 'smtp.inbound.port', 'smtp.inbound.host', cfg.host, cfg.port)),
    );
    server.listen(cfg.port, cfg.host, () => {
      server.off('error', reject);
      server.on('error', (err: Error) => log.warn({ err }, 'smtp connection error'));
      resolve((server.server.address() as AddressInfo).port);
    });
  });
  log.info({ port }, 'SMTP inbound listening');
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

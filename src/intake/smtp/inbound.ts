import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../../config/schema.js';
import type { Services } from '../../services/index.js';
import type { Logger } from '../../shared/logger.js';
import type { TlsPair } from './tls-files.js';

export interface InboundDeps {
  services: Services;
  config: Config;
  logger: Logger;
  tls: TlsPair;
}

export interface InboundListener {
  port: number;
  close(): Promise<void>;
}

const reply = (code: number, text: string): Error & { responseCode: number } => Object.assign(new Error(text), { responseCode: code });

/**
 * The inbound listener (`smtp.inbound.*`, port 25 in production, as the MX of the bounce
 * domains): takes asynchronous bounces at the VERP return paths and complaint reports at
 * those or at `smtp.inbound.feedbackAddresses`. Every other recipient is refused at RCPT, and
 * any message that is not a delivery status notification or a feedback report at DATA,
 * with 550. No authentication: reports come from other mail servers.
 */
export async function startInbound(deps: InboundDeps): Promise<InboundListener> {
  const { services, config, logger, tls } = deps;
  const cfg = config.smtp.inbound;
  const log = logger.child({ component: 'smtp-inbound' });

  async function onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    if (stream.sizeExceeded) throw reply(552, `5.3.4 Message too big: at most ${cfg.maxMessageSize} bytes`);
    let outcome;
    try {
      outcome = await services.reports.receive({ recipients: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks) });
      // What the report changed is on disk before the 250 (Store.durable).
      await services.durable();
    } catch (err) {
      log.error({ err, sessionId: session.id }, 'could not process a report');
      throw reply(451, '4.3.0 Temporary failure, try again later');
    }
    log.info({ sessionId: session.id, remoteAddress: session.remoteAddress, outcome: outcome.kind }, 'report received');
    switch (outcome.kind) {
      case 'refused':
        throw reply(550, `5.6.0 ${outcome.reason}`);
      case 'ignored':
        return `2.0.0 Ok: nothing to do (${outcome.reason})`;
      case 'bounce':
        return `2.0.0 Ok: bounce recorded for ${outcome.recipients.length} recipient(s)`;
      case 'complaint':
        return '2.0.0 Ok: complaint recorded';
    }
  }

  const server = new SMTPServer({
    key: tls.key,
    cert: tls.cert,
    name: config.delivery.hostname,
    banner: 'mailsvc inbound (bounces and feedback reports only)',
    disabledCommands: ['AUTH'],
    authOptional: true,
    size: cfg.maxMessageSize,
    disableReverseLookup: true,
    logger: false,
    onConnect: (_session, callback) => {
      services.metrics.smtpSession('inbound');
      callback();
    },
    onRcptTo: (address, _session, callback) => {
      if (services.reports.acceptsRecipient(address.address)) return callback();
      callback(reply(550, `5.1.1 <${address.address}>: no such mailbox here (this server takes bounces and feedback reports only)`));
    },
    onData: (stream, session, callback) =>
      void onData(stream, session).then(
        (message) => callback(null, message),
        (err: Error) => callback(err),
      ),
  });

  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(cfg.port, cfg.host, () => {
      server.off('error', reject);
      server.on('error', (err: Error) => log.warn({ err }, 'smtp connection error'));
      resolve((server.server.address() as AddressInfo).port);
    });
  });
  log.info({ port }, 'SMTP inbound listening');
  return { port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

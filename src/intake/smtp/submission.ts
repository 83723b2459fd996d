import type { AddressInfo } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { SMTPServer, SMTPServerAuthentication, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import type { Config } from '../../config/schema.js';
import type { Principal } from '../../services/credentials.js';
import type { Services } from '../../services/index.js';
import { normalizeAddress } from '../../messages/addresses.js';
import { retryAfterSeconds } from '../../shared/fixed-window.js';
import type { Clock } from '../../shared/clock.js';
import { isAppError, isFault, toAppError } from '../../shared/errors.js';
import { errorReply, reply, type SmtpReply } from './reply.js';
import type { Logger } from '../../shared/logger.js';
import type { Workspace } from '../../store/workspaces.js';
import { PromptGreetingServer } from './prompt-greeting-server.js';
import type { TlsPair } from './tls-files.js';
import { asListenError } from '../../shared/listen-error.js';

interface SubmissionDeps {
  services: Services;
  config: Config;
  logger: Logger;
  clock: Clock;
  tls: TlsPair;
}

interface SessionUser {
  principal: Principal;
  workspace: Workspace;
}

const isLoopback = (address: string): boolean => /^(127\.|::1$|::ffff:127\.)/.test(address);

/**
 * How a service error is answered at DATA: bad content is permanent (554 5.6.0, where the
 * catalog's 501 would name a command's syntax); everything else as the catalog says (a refused
 * sender 550, a rate limit 451, a full disk 452), so a client retries only what can succeed.
 */
function dataReply(err: unknown): SmtpReply {
  const e = toAppError(err);
  return e.code === 'validation_error' ? reply(554, `5.6.0 ${e.message}`) : errorReply(e);
}

export interface SubmissionListeners {
  /** Ports actually bound (useful when configured as 0). */
  ports: { starttls: number; implicitTls: number | null };
  close(): Promise<void>;
}

/**
 * The submission listeners for applications that speak only SMTP: STARTTLS on
 * `smtp.submission.port` and implicit TLS on `smtp.submission.tlsPort`. The password is an
 * API key; each message goes to the same send service as the HTTP API, and 250 is answered
 * only once the message is on disk.
 */
export async function startSubmission(deps: SubmissionDeps): Promise<SubmissionListeners> {
  const { services, config, logger, clock, tls } = deps;
  const cfg = config.smtp.submission;
  const log = logger.child({ component: 'smtp-submission' });

  const failureKey = (session: SMTPServerSession) => `ip:${session.remoteAddress}:auth.failure`;

  async function onAuth(auth: SMTPServerAuthentication, session: SMTPServerSession): Promise<SessionUser> {
    if (
      !session.secure &&
      !cfg.allowInsecureAuth &&
      !(cfg.plaintextAuthOnLoopback && isLoopback(session.remoteAddress))
    ) {
      throw reply(538, '5.7.11 Encryption required: use STARTTLS (or the implicit-TLS port) before AUTH');
    }
    const limit = services.limitFor('auth.failure', null);
    const now = clock.now();
    const blocked = await services.rateLimiter.peek(failureKey(session), limit, now);
    if (blocked.remaining === 0) {
      services.metrics.rateLimited('smtp', 'auth.failure');
      throw reply(
        454,
        `4.7.0 Too many failed logins from ${session.remoteAddress}; try again in ${retryAfterSeconds(blocked, now)} s`,
      );
    }
    try {
      const principal = await services.credentials.authenticate(auth.password ?? undefined, 'legacy');
      if (principal.master || !principal.workspaceId)
        throw reply(535, '5.7.8 A master key cannot send over SMTP; use a workspace key');
      const workspace = await services.workspaces.find(principal.workspaceId);
      if (!workspace) throw reply(535, '5.7.8 Authentication credentials invalid');
      return { principal, workspace };
    } catch (err) {
      // The database or the disk failed, not the client: a temporary reply (451/452), and the
      // attempt does not count towards its lockout.
      if (isFault(err)) throw errorReply(err);
      await services.rateLimiter.hit(failureKey(session), limit, clock.now());
      if ((err as { responseCode?: number }).responseCode) throw err;
      throw reply(
        535,
        '5.7.8 Authentication credentials invalid: the password must be an API key (sk_live_ or sk_test_)',
      );
    }
  }

  const trusted = cfg.trustedNetworks.map((cidr) => ipaddr.parseCIDR(cidr));
  const isTrusted = (address: string): boolean => {
    if (trusted.length === 0 || !ipaddr.isValid(address)) return false;
    const ip = ipaddr.process(address);
    return trusted.some(([range, bits]) => ip.kind() === range.kind() && ip.match(range, bits));
  };

  /** A client in smtp.submission.trustedNetworks sends, without AUTH, as the trusted workspace. */
  async function trustedUser(session: SMTPServerSession): Promise<SessionUser> {
    if (!isTrusted(session.remoteAddress))
      throw reply(530, '5.7.0 Authentication required: AUTH PLAIN or LOGIN with an API key as the password');
    const workspace = cfg.trustedWorkspace
      ? await services.workspaces.find(cfg.trustedWorkspace)
      : await services.workspaces.ensureDefault();
    if (!workspace) throw reply(451, '4.3.5 smtp.submission.trustedWorkspace names no workspace');
    return {
      workspace,
      principal: {
        credentialId: 'trusted-network',
        kind: 'live',
        master: false,
        workspaceId: workspace.id,
        scopes: 'all',
        domainId: null,
      },
    };
  }

  async function onMailFrom(address: string, session: SMTPServerSession): Promise<void> {
    // Below the disk's reserve: refused before the client sends the message (Postfix: 452 4.3.1).
    services.space.ensure();
    session.user ??= await trustedUser(session);
    const { workspace, principal } = session.user as SessionUser;
    const normalized = normalizeAddress(address);
    if (!normalized) throw reply(553, `5.1.7 <${address}> is not a valid sender address`);
    try {
      await services.send.checkSender(workspace, normalized, principal.kind === 'test', principal.domainId);
    } catch (err) {
      if (isAppError(err) && err.code === 'forbidden')
        throw reply(
          553,
          `5.7.1 Sender <${normalized}> is not on a verified domain of this workspace${principal.domainId ? ' that this key may send from' : ''}`,
        );
      throw err;
    }
  }

  function onRcptTo(address: string, session: SMTPServerSession): void {
    if (!normalizeAddress(address)) throw reply(553, `5.1.3 <${address}> is not a valid recipient address`);
    if (session.envelope.rcptTo.length >= cfg.maxRecipients)
      throw reply(452, `4.5.3 Too many recipients: at most ${cfg.maxRecipients} per message`);
  }

  async function onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const raw = await readAll(stream);
    if (stream.sizeExceeded) throw reply(552, `5.3.4 Message too big: at most ${cfg.maxMessageSize} bytes`);
    const { workspace, principal } = session.user as SessionUser;
    const mailFrom = session.envelope.mailFrom;
    // Handling a large message (parsing, signing, storing) costs several times its size: it
    // waits for room in the budget the API's large bodies share, once it is read.
    const release = await services.intakeMemory.take(raw.length);
    try {
      const outcome = await services.send.sendRaw(workspace, {
        intake: 'smtp',
        test: principal.kind === 'test',
        envelopeFrom: mailFrom ? mailFrom.address : '',
        recipients: session.envelope.rcptTo.map((r) => r.address),
        raw,
        senderDomainId: principal.domainId,
      });
      const id = outcome.results[0]!.id;
      log.info({ sessionId: session.id, workspaceId: workspace.id, emailId: id }, 'message queued');
      return `2.0.0 Ok: queued as ${id}`;
    } catch (err) {
      const e = toAppError(err);
      if (e.code === 'internal_error') log.error({ err, sessionId: session.id }, 'could not queue a submitted message');
      throw dataReply(err);
    } finally {
      release();
    }
  }

  // Greeted at once: authenticated submission gains nothing from smtp-server's early-talker wait.
  const build = (secure: boolean): SMTPServer =>
    new PromptGreetingServer({
      secure,
      key: tls.key,
      cert: tls.cert,
      name: config.delivery.hostname,
      banner: 'mailsvc submission',
      authMethods: ['PLAIN', 'LOGIN'],
      // Enforced per connection in onAuth: loopback clients may authenticate without TLS.
      allowInsecureAuth: true,
      // Required in onMailFrom, unless the client is in smtp.submission.trustedNetworks.
      authOptional: true,
      size: cfg.maxMessageSize,
      disableReverseLookup: true,
      logger: false,
      onConnect: (_session, callback) => {
        services.metrics.smtpSession(secure ? 'submission_tls' : 'submission');
        callback();
      },
      onAuth: (auth, session, callback) =>
        void onAuth(auth, session).then(
          (user) => callback(null, { user }),
          (err: unknown) => callback(errorReply(err)),
        ),
      onMailFrom: (address, session, callback) =>
        void onMailFrom(address.address, session).then(
          () => callback(),
          (err: unknown) => callback(errorReply(err)),
        ),
      onRcptTo: (address, session, callback) => {
        try {
          onRcptTo(address.address, session);
          callback();
        } catch (err) {
          callback(errorReply(err));
        }
      },
      onData: (stream, session, callback) =>
        void onData(stream, session).then(
          (message) => callback(null, message),
          (err: unknown) => callback(errorReply(err)),
        ),
    });

  const listen = (server: SMTPServer, port: number, setting: string) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', (err: Error) => reject(asListenError(err, setting, 'smtp.submission.host', cfg.host, port)));
      server.listen(port, cfg.host, () => {
        server.off('error', reject);
        server.on('error', (err: Error) => log.warn({ err }, 'smtp connection error'));
        resolve((server.server.address() as AddressInfo).port);
      });
    });

  const starttls = build(false);
  const servers = [starttls];
  const ports = {
    starttls: await listen(starttls, cfg.port, 'smtp.submission.port'),
    implicitTls: null as number | null,
  };
  if (cfg.implicitTls) {
    const implicit = build(true);
    servers.push(implicit);
    try {
      ports.implicitTls = await listen(implicit, cfg.tlsPort, 'smtp.submission.tlsPort');
    } catch (err) {
      // The caller never gets a handle to close the first listener with.
      await new Promise<void>((resolve) => starttls.close(() => resolve()));
      throw err;
    }
  }
  log.info({ ports, tls: tls.source }, 'SMTP submission listening');
  return {
    ports,
    close: () =>
      Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))).then(() => undefined),
  };
}

/** The message, whole (its chunks are garbage as soon as they are joined). */
async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

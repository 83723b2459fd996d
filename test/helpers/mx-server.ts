import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';

/** A reply the test MX gives instead of accepting, e.g. `{ code: 451, text: '4.3.0 Try again later' }`. */
export interface Reply {
  code: number;
  text: string;
}

export interface ReceivedMessage {
  from: string;
  to: string[];
  raw: Buffer;
  /** Whether the session had been upgraded with STARTTLS. */
  secure: boolean;
  /** The server name the client asked for in the TLS handshake (SNI), if any. */
  servername: string | null;
  /** The EHLO name the client gave. */
  ehlo: string;
  /** The user the client authenticated as (smarthost mode). */
  user: string | null;
  /** The address the client connected to (tells MX hosts apart on one port). */
  localAddress: string;
  /** The address the client connected from (an IP pool's source address). */
  remoteAddress: string;
  sessionId: string;
  messageId: string | null;
}

export interface MxHooks {
  /** Refuse the session at the greeting. */
  onConnect?(session: SMTPServerSession): Reply | undefined;
  onRcpt?(address: string, session: SMTPServerSession): Reply | undefined;
  /** Decide the reply to the message once it is received. */
  onData?(message: ReceivedMessage): Reply | undefined | Promise<Reply | undefined>;
}

export interface TestMx {
  port: number;
  host: string;
  /** Messages accepted (250 after DATA). */
  messages: ReceivedMessage[];
  /** Sessions opened, and how many transactions (MAIL FROM) each carried. */
  sessions: Map<string, number>;
  hooks: MxHooks;
  /** Resolves once `count` messages were accepted; rejects when none arrived for `timeoutMs` (default a minute: a failure deadline, not a speed) before that. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  close(): Promise<void>;
}

const replyError = (reply: Reply) => Object.assign(new Error(reply.text), { responseCode: reply.code });
const headerValue = (raw: Buffer, name: string): string | null => {
  const head = raw.subarray(0, Math.max(0, raw.indexOf('\r\n\r\n'))).toString('latin1');
  const m = new RegExp(`^${name}:\\s*(.+(?:\\r\\n[ \\t].+)*)`, 'im').exec(head);
  return m ? m[1]!.replace(/\r\n[ \t]+/g, ' ').trim() : null;
};

/**
 * A real SMTP server (smtp-server) on loopback playing a recipient's MX: STARTTLS with
 * smtp-server's built-in self-signed certificate (or `tls`, PEM key and certificate, for
 * one a test makes verifiable), PIPELINING, and hooks to answer 4xx/5xx.
 */
export async function startMxServer(
  options: {
    host?: string;
    port?: number;
    hooks?: MxHooks;
    auth?: { user: string; pass: string };
    tls?: { key: string; cert: string };
  } = {},
): Promise<TestMx> {
  const messages: ReceivedMessage[] = [];
  const sessions = new Map<string, number>();
  // Hooks are read from the returned object on every call, so a test may swap them.
  const state = { hooks: options.hooks ?? {} };
  const waiters: Array<() => void> = [];
  const server = new SMTPServer({
    // With `auth` it plays a smarthost that wants AUTH (after STARTTLS); otherwise an MX.
    ...(options.auth
      ? {
          authMethods: ['PLAIN', 'LOGIN'],
          onAuth(auth, _session, cb) {
            const ok = auth.username === options.auth!.user && auth.password === options.auth!.pass;
            cb(
              ok ? null : Object.assign(new Error('5.7.8 Authentication failed'), { responseCode: 535 }),
              ok ? { user: auth.username } : undefined,
            );
          },
        }
      : { authOptional: true, disabledCommands: ['AUTH'] }),
    logger: false,
    ...(options.tls ? { key: options.tls.key, cert: options.tls.cert } : {}),
    size: 50 * 1024 * 1024,
    onConnect(session, cb) {
      sessions.set(session.id, 0);
      const reply = state.hooks.onConnect?.(session);
      cb(reply ? replyError(reply) : null);
    },
    onMailFrom(_address, session, cb) {
      sessions.set(session.id, (sessions.get(session.id) ?? 0) + 1);
      cb();
    },
    onRcptTo(address, session, cb) {
      const reply = state.hooks.onRcpt?.(address.address, session);
      cb(reply ? replyError(reply) : null);
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const raw = Buffer.concat(chunks);
        const message: ReceivedMessage = {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          secure: session.secure,
          servername: session.servername || null,
          ehlo: session.hostNameAppearsAs,
          user: (session.user as string | undefined) ?? null,
          localAddress: session.localAddress,
          remoteAddress: session.remoteAddress.replace(/^::ffff:/, ''),
          sessionId: session.id,
          messageId: headerValue(raw, 'Message-ID'),
        };
        const reply = await state.hooks.onData?.(message);
        if (reply) return cb(replyError(reply));
        messages.push(message);
        for (const w of waiters.splice(0)) w();
        cb(null);
      });
    },
  });
  server.on('error', () => {});
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    host,
    messages,
    sessions,
    get hooks() {
      return state.hooks;
    },
    set hooks(value: MxHooks) {
      state.hooks = value;
    },
    waitFor(count, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        // The deadline counts from the last message that arrived: a loaded machine delivers
        // slowly but keeps delivering; a delivery that stopped still fails after timeoutMs.
        let seen = messages.length;
        let failed = false;
        const stalled = () => {
          failed = true;
          reject(new Error(`MX got ${messages.length} of ${count} messages, none in the last ${timeoutMs} ms`));
        };
        let deadline = setTimeout(stalled, timeoutMs);
        const check = () => {
          if (failed) return;
          if (messages.length >= count) {
            clearTimeout(deadline);
            resolve(messages.slice());
            return;
          }
          if (messages.length > seen) {
            seen = messages.length;
            clearTimeout(deadline);
            deadline = setTimeout(stalled, timeoutMs);
          }
          waiters.push(check);
        };
        check();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

import { SmtpConnections, isPooled, type Pooled, type SmtpClientOptions, type SmtpTarget } from './smtp-connections.js';
import {
  codeOf,
  errorCodeOf,
  repliesBeforeClose,
  repliesOnError,
  repliesOnSuccess,
  type NodemailerError,
  type RecipientReply,
  type TrackedEnvelope,
} from './smtp-replies.js';

export type { SmtpTarget, TlsMode } from './smtp-connections.js';

/**
 * The SMTP client seam of delivery: EHLO with our host name, STARTTLS (opportunistic unless a
 * policy requires it), PIPELINING when the server offers it (nodemailer sends the envelope
 * and DATA in one go), several recipients per transaction, timeouts on every step, and
 * connections kept open for the next message to the same server (smtp-connections.ts).
 */

interface SmtpEnvelope {
  from: string;
  to: string[];
  size: number;
}

export type SmtpResult =
  /** The transaction ran: every recipient has the server's answer. */
  | { kind: 'replied'; tls: boolean; replies: RecipientReply[] }
  /** No session could be set up (refused, timeout, bad greeting, TLS): the next MX may work. */
  | {
      kind: 'unreachable';
      tls: boolean;
      errorCode: string;
      code: number | null;
      response: string | null;
      message: string;
    }
  /** The session broke during the transaction: the outcome is unknown. */
  | { kind: 'interrupted'; tls: boolean; errorCode: string; message: string };

export interface SmtpClient {
  send(target: SmtpTarget, envelope: SmtpEnvelope, message: Buffer): Promise<SmtpResult>;
  /** Closes idle connections; with `abort`, also the ones in use. */
  close(abort?: boolean): Promise<void>;
}

export function createSmtpClient(options: SmtpClientOptions): SmtpClient {
  const connections = new SmtpConnections(options);
  return {
    async send(target, envelope, message) {
      const first = await sendOnce(connections, target, envelope, message, false);
      // A kept-alive connection the server closed meanwhile: once more on a fresh one.
      if (first.retryFresh) return (await sendOnce(connections, target, envelope, message, true)).result;
      return first.result;
    },
    close(abort = false) {
      connections.close(abort);
      return Promise.resolve();
    },
  };
}

/**
 * One attempt, as a list: take a connection (or say why there is none), run the transaction,
 * and read each recipient's reply from its result, from its refusal, or from the reply the
 * server sent before closing; with answers, RSET and keep the connection; without, the
 * session broke and the outcome is unknown.
 */
async function sendOnce(
  connections: SmtpConnections,
  target: SmtpTarget,
  envelope: SmtpEnvelope,
  message: Buffer,
  fresh: boolean,
): Promise<{ result: SmtpResult; retryFresh: boolean }> {
  const acquired = await connections.acquire(target, fresh);
  if (!isPooled(acquired)) return { result: unreachable(acquired), retryFresh: false };
  const p = acquired;
  const reused = p.uses > 0;
  const tls = p.conn.secure === true;
  const tracked: TrackedEnvelope = { from: envelope.from, to: envelope.to, size: envelope.size };
  const { err, info } = await connections.transmit(p, tracked, message);
  if (!err) {
    connections.park(p);
    return { result: { kind: 'replied', tls, replies: repliesOnSuccess(envelope.to, info) }, retryFresh: false };
  }
  const replies = refusals(p, envelope.to, err, tracked);
  if (replies) {
    await connections.reset(p);
    connections.park(p);
    return { result: { kind: 'replied', tls, replies }, retryFresh: false };
  }
  p.broken = true;
  connections.park(p);
  return {
    result: { kind: 'interrupted', tls, errorCode: errorCodeOf(err), message: err.message },
    retryFresh: reused && !fresh && !err.response,
  };
}

const refusals = (
  p: Pooled,
  recipients: string[],
  err: NodemailerError,
  tracked: TrackedEnvelope,
): RecipientReply[] | null =>
  repliesOnError(recipients, err, tracked) ?? repliesBeforeClose(recipients, err, p.conn.lastServerResponse, tracked);

const unreachable = (e: NodemailerError): SmtpResult => ({
  kind: 'unreachable',
  tls: false,
  errorCode: errorCodeOf(e),
  code: e.responseCode ?? codeOf(e.response),
  response: e.response ?? null,
  message: e.message,
});

import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { SMTPConnectionEnvelope } from 'nodemailer/lib/smtp-connection';

/**
 * What the server answered each recipient, read from nodemailer's result or error: the
 * transaction's outcome per recipient, or null when the session itself failed.
 */

export interface RecipientReply {
  recipient: string;
  accepted: boolean;
  code: number | null;
  response: string;
}

export interface NodemailerError extends Error {
  code?: string;
  /** The system error code nodemailer replaced with its own (e.g. CERT_HAS_EXPIRED under ESOCKET). */
  originalCode?: string;
  response?: string;
  responseCode?: number;
  command?: string;
  recipient?: string;
  rejectedErrors?: NodemailerError[];
}

/**
 * The envelope handed to `SMTPConnection.send()`: nodemailer keeps that very object as the
 * transaction's envelope and adds its recipient bookkeeping to it (`SMTPConnectionEnvelope`),
 * so after a failed transaction it still says which recipients the server refused at RCPT TO,
 * which the error of a later step (DATA, the message, a closed connection) does not carry.
 * smtp-client.test.ts holds this behaviour.
 */
export type TrackedEnvelope = SMTPConnection.Envelope & Partial<Pick<SMTPConnectionEnvelope, 'rejectedErrors'>>;

export const codeOf = (response: string | undefined | null): number | null => {
  const m = /^(\d{3})/.exec(response ?? '');
  return m ? Number(m[1]) : null;
};

/** Certificate and handshake failures surface as socket errors; report them as TLS. */
export const errorCodeOf = (e: NodemailerError): string =>
  // The source address cannot be bound here: the operator's to fix, told apart from network failures.
  e.originalCode === 'EADDRNOTAVAIL'
    ? 'EADDRNOTAVAIL'
    : /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)|ERR_TLS|ERR_SSL|HOSTNAME_MISMATCH|ALTNAME/i.test(e.originalCode ?? '') ||
        /certificate/i.test(e.message)
      ? 'ETLS'
      : (e.code ?? 'ECONNECTION');

function rejectedReplies(errors: NodemailerError[] | undefined): Map<string, RecipientReply> {
  const out = new Map<string, RecipientReply>();
  for (const e of errors ?? []) {
    if (!e.recipient) continue;
    out.set(e.recipient, {
      recipient: e.recipient,
      accepted: false,
      code: e.responseCode ?? codeOf(e.response),
      response: e.response ?? e.message,
    });
  }
  return out;
}

export function repliesOnSuccess(recipients: string[], info: SMTPConnection.SentMessageInfo): RecipientReply[] {
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
export function repliesOnError(
  recipients: string[],
  err: NodemailerError,
  envelope: TrackedEnvelope,
): RecipientReply[] | null {
  const everyone = (code: number | null, response: string) =>
    recipients.map((r) => ({ recipient: r, accepted: false, code, response }));
  if (err.code === 'EENVELOPE' && err.command === 'MAIL FROM' && err.response)
    return everyone(err.responseCode ?? codeOf(err.response), err.response);
  if (err.code === 'EMESSAGE' && !err.response && /larger than allowed/.test(err.message)) {
    return everyone(552, `552 5.3.4 ${err.message}`);
  }
  const rejected = rejectedReplies(err.rejectedErrors ?? envelope.rejectedErrors);
  if (err.code === 'EENVELOPE' && err.command === 'RCPT TO') {
    return recipients.map(
      (r) =>
        rejected.get(r) ?? {
          recipient: r,
          accepted: false,
          code: err.responseCode ?? codeOf(err.response),
          response: err.response ?? err.message,
        },
    );
  }
  if ((err.code === 'EENVELOPE' && err.command === 'DATA') || (err.code === 'EMESSAGE' && err.response)) {
    const code = err.responseCode ?? codeOf(err.response);
    return recipients.map(
      (r) => rejected.get(r) ?? { recipient: r, accepted: false, code, response: err.response ?? err.message },
    );
  }
  return null;
}

/**
 * A server that answers 421 (or another failure) and closes the connection at once ends the
 * session with that reply: recipients without an answer of their own get it.
 */
export function repliesBeforeClose(
  recipients: string[],
  err: NodemailerError,
  last: string | false,
  envelope: TrackedEnvelope,
): RecipientReply[] | null {
  if (err.code !== 'ECONNECTION') return null;
  const response = err.response ?? (typeof last === 'string' && /^[45]\d\d[ -]/.test(last) ? last : null);
  if (!response) return null;
  const rejected = rejectedReplies(envelope.rejectedErrors);
  return recipients.map((r) => rejected.get(r) ?? { recipient: r, accepted: false, code: codeOf(response), response });
}

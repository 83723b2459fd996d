import { toAppError } from '../../shared/errors.js';

/** An SMTP reply as an error smtp-server understands: `responseCode` and the text after it. */
export type SmtpReply = Error & { responseCode: number };

export const reply = (code: number, text: string): SmtpReply => Object.assign(new Error(text), { responseCode: code });

const isReply = (err: unknown): err is SmtpReply =>
  typeof (err as { responseCode?: unknown } | null)?.responseCode === 'number';

/**
 * Any failure of a session's hook as the reply the client gets: a reply already made as is;
 * an error of the catalog as its SMTP code, enhanced status and message (a fault of the disk
 * or the database is 452 4.3.1 or 451 4.3.0, so the client keeps the message and retries);
 * anything else a temporary failure with no detail. Never smtp-server's default for a hook
 * (535 at AUTH, 550 at MAIL FROM): a fault of ours must not read as the client's mistake.
 */
export function errorReply(err: unknown): SmtpReply {
  if (isReply(err)) return err;
  const e = toAppError(err);
  if (e.code === 'internal_error') return reply(451, '4.3.0 Temporary failure, try again later');
  return reply(e.smtpCode, e.smtpText);
}

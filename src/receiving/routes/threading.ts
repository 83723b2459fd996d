import type { Db } from '../../store/infra/db.js';
import { listEmailsByMessageIds, type Email } from '../../store/emails.js';

/**
 * Threading a received message with what we sent: its In-Reply-To names the message it
 * answers, its References the thread, oldest first (RFC 5322 §3.6.4). The first of them that
 * is a Message-ID of an email this workspace sent wins.
 */

/** References kept, from the end: a long thread's last ones are the messages nearest the reply. */
const MAX_REFERENCES = 20;

/** The Message-IDs to look for, nearest first, without repeats. Pure. */
export function threadCandidates(inReplyTo: string | null, references: readonly string[]): string[] {
  const ordered = [...(inReplyTo ? [inReplyTo] : []), ...references.slice(-MAX_REFERENCES).reverse()];
  return [...new Set(ordered)];
}

/** The email of this workspace that the message replies to, if it names one. */
export async function findRepliedEmail(
  db: Db,
  workspaceId: string,
  inReplyTo: string | null,
  references: readonly string[],
): Promise<Email | undefined> {
  const candidates = threadCandidates(inReplyTo, references);
  const found = await listEmailsByMessageIds(db, workspaceId, candidates);
  if (found.length === 0) return undefined;
  // A Message-ID reused by a client (raw SMTP submission) may name several emails: the newest.
  const newestFirst = [...found].sort((a, b) => b.created_at - a.created_at);
  for (const id of candidates) {
    const match = newestFirst.find((e) => e.message_id === id);
    if (match) return match;
  }
  return undefined;
}

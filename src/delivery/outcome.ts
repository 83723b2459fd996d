import type { Email, QueueItem } from '../store/emails.js';
import type { Suppression } from '../store/suppressions.js';
import type { BounceType, Category } from './response-rules.js';

/**
 * What became of one recipient in one attempt: exactly one of these (Haraka's three outcomes
 * of an attempt, plus the two ways a recipient leaves the queue without one). Results, not
 * exceptions: an SMTP 550 is a value recorded like any other.
 */
export type Outcome =
  | {
      kind: 'delivered';
      code: number | null;
      response: string;
      mxHost: string | null;
      tls: boolean;
      /** Handed to the configured smarthost: `email.sent` only, not `email.delivered`. */
      relayed: boolean;
      /** Simulator only: the recipient also "complains". */
      complained?: boolean;
    }
  | {
      kind: 'deferred';
      code: number | null;
      response: string;
      category: Category;
      mxHost: string | null;
      tls: boolean;
      slowDown?: boolean;
    }
  /** `simulated`: the simulator's, which never adds the address to the suppression list. */
  | {
      kind: 'bounced';
      code: number | null;
      response: string;
      category: Category;
      bounceType: BounceType;
      mxHost: string | null;
      tls: boolean;
      simulated?: boolean;
    }
  /** Our side could not attempt it (no DKIM key, content missing): nothing was sent. */
  | { kind: 'failed'; response: string; category: Category }
  /** On the suppression list: never sent. */
  | { kind: 'suppressed'; entry: Suppression };

export interface RecipientResult {
  email: Email;
  item: QueueItem;
  outcome: Outcome;
  startedAt: number;
  durationMs: number;
}

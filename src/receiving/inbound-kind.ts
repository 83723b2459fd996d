/**
 * The port-25 pipeline: a kind of recipient the inbound listener takes mail for. At RCPT TO
 * the kinds are asked in order (inbound-kinds.ts) and the first that claims the address takes
 * it; at DATA that kind receives the message. The listener answers 250 only once what the kind
 * stored is durable, whichever kind it is.
 */
export interface InboundKind<C = unknown> {
  name: string;
  /** What the kind needs at DATA for this address, or null when the address is not of this kind. Throws an InboundRefusal to refuse it. */
  claim(address: string): Promise<C | null>;
  /** Takes the message: the text of the 250 reply, or a refusal for good. Throws for a temporary failure (451). */
  receive(message: InboundMessage, claims: C[]): Promise<InboundOutcome>;
}

export interface InboundMessage {
  raw: Buffer;
  /** MAIL FROM; empty for a null sender. */
  mailFrom: string;
  /** Every RCPT TO of the transaction. */
  recipients: string[];
  remoteAddress: string;
  helo: string | null;
  tls: boolean;
  sessionId: string;
}

export type InboundOutcome =
  | { kind: 'accepted'; reply: string; log?: Record<string, unknown> }
  /** Refused for good: the listener answers `code` (5xx). */
  | { kind: 'refused'; code: number; reason: string };

/** A refusal at RCPT TO, with the SMTP reply it becomes. */
export class InboundRefusal extends Error {
  constructor(
    readonly responseCode: number,
    text: string,
  ) {
    super(text);
  }
}

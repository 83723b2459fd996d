/**
 * Reading `multipart/report` messages: delivery status notifications (RFC 3464) and abuse
 * feedback reports (ARF, RFC 5965). mailparser splits the MIME parts; this reads the
 * machine-readable fields. Pure: no I/O.
 */

/** A MIME part of the report as mailparser hands it over. */
interface ReportPart {
  contentType: string;
  content: Buffer;
}

interface DsnRecipient {
  /** The address the report is about (Final-Recipient, else Original-Recipient). */
  recipient: string;
  /** failed, delayed, delivered, relayed, expanded. */
  action: string;
  /** The enhanced status code, e.g. `5.1.1`. */
  status: string | null;
  /** The remote server's reply, e.g. `550 5.1.1 <x@example.org>: User unknown`. */
  diagnostic: string | null;
  remoteMta: string | null;
}

export interface Dsn {
  kind: 'dsn';
  reportingMta: string | null;
  recipients: DsnRecipient[];
  /** Headers of the original message, when the report includes them. */
  original: Map<string, string>;
}

export interface FeedbackReport {
  kind: 'arf';
  /** abuse, fraud, virus, other, not-spam (RFC 5965 §7.3). */
  feedbackType: string;
  userAgent: string | null;
  originalMailFrom: string | null;
  originalRcptTo: string | null;
  original: Map<string, string>;
}

type Report = Dsn | FeedbackReport;

/**
 * Header-style field blocks separated by blank lines, folded lines unfolded; names
 * lower-cased, the first occurrence of a name in a block kept.
 */
export function parseFieldBlocks(text: string): Array<Map<string, string>> {
  const blocks: Array<Map<string, string>> = [];
  let block = new Map<string, string>();
  let last: string | null = null;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      if (block.size > 0) blocks.push(block);
      block = new Map();
      last = null;
      continue;
    }
    if (/^[ \t]/.test(line) && last !== null) {
      block.set(last, `${block.get(last)} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    last = name;
    if (!block.has(name)) block.set(name, line.slice(colon + 1).trim());
    else last = null; // a repeated field: keep the first, skip its continuation lines
  }
  if (block.size > 0) blocks.push(block);
  return blocks;
}

/** `rfc822; a@b.example` or `<a@b.example>` -> `a@b.example`. */
export function addressOf(value: string | undefined | null): string | null {
  if (!value) return null;
  const typed = value.includes(';') ? value.slice(value.indexOf(';') + 1) : value;
  const bare = typed.trim().replace(/^<|>$/g, '').trim();
  return /^[^\s@<>]+@[^\s@<>]+$/.test(bare) ? bare : null;
}

/** `smtp; 550 5.1.1 …` -> `550 5.1.1 …`. */
const diagnosticText = (value: string | undefined): string | null => {
  if (!value) return null;
  const text = /^[a-z-]+;/i.test(value) ? value.slice(value.indexOf(';') + 1) : value;
  return text.trim() || null;
};

/** The headers of the original message part (message/rfc822 or text/rfc822-headers), if any. */
function originalHeaders(parts: ReportPart[]): Map<string, string> {
  const part = parts.find(
    (p) =>
      p.contentType === 'message/rfc822' ||
      p.contentType === 'text/rfc822-headers' ||
      p.contentType === 'message/rfc822-headers',
  );
  if (!part) return new Map();
  const text = part.content.toString('utf8');
  const end = text.search(/\r?\n\r?\n/);
  return parseFieldBlocks(end >= 0 ? text.slice(0, end) : text)[0] ?? new Map();
}

/** The report in a parsed message, or null when it is neither a DSN nor a feedback report. */
export function readReport(reportType: string | undefined, parts: ReportPart[]): Report | null {
  const type = reportType?.toLowerCase();
  if (type === 'delivery-status') {
    const status = parts.find(
      (p) => p.contentType === 'message/delivery-status' || p.contentType === 'message/global-delivery-status',
    );
    if (!status) return null;
    const [perMessage, ...perRecipient] = parseFieldBlocks(status.content.toString('utf8'));
    const recipients = perRecipient.flatMap((f): DsnRecipient[] => {
      const recipient = addressOf(f.get('final-recipient')) ?? addressOf(f.get('original-recipient'));
      const action = f.get('action')?.toLowerCase();
      if (!recipient || !action) return [];
      return [
        {
          recipient,
          action,
          status: /\d\.\d{1,3}\.\d{1,3}/.exec(f.get('status') ?? '')?.[0] ?? null,
          diagnostic: diagnosticText(f.get('diagnostic-code')),
          remoteMta: diagnosticText(f.get('remote-mta')),
        },
      ];
    });
    if (recipients.length === 0) return null;
    return {
      kind: 'dsn',
      reportingMta: diagnosticText(perMessage?.get('reporting-mta')),
      recipients,
      original: originalHeaders(parts),
    };
  }
  if (type === 'feedback-report') {
    const feedback = parts.find((p) => p.contentType === 'message/feedback-report');
    if (!feedback) return null;
    const fields = parseFieldBlocks(feedback.content.toString('utf8'))[0];
    const feedbackType = fields?.get('feedback-type')?.toLowerCase();
    if (!fields || !feedbackType) return null;
    return {
      kind: 'arf',
      feedbackType,
      userAgent: fields.get('user-agent') ?? null,
      originalMailFrom: addressOf(fields.get('original-mail-from')),
      originalRcptTo: addressOf(fields.get('original-rcpt-to')),
      original: originalHeaders(parts),
    };
  }
  return null;
}

import type { ParsedMail, SimpleParserOptions } from 'mailparser';

type MailParser = typeof import('mailparser');
let loading: Promise<MailParser> | undefined;

/**
 * mailparser with its charset and HTML tables (~20 MB resident) loads with the first message
 * to parse: a node that only takes API mail never needs it.
 */
export async function parseMail(source: Buffer | string, options: SimpleParserOptions): Promise<ParsedMail> {
  loading ??= import('mailparser');
  return (await loading).simpleParser(source, options);
}

import type { Attachment } from './compose.js';
import { detectMimeType } from 'nodemailer/lib/mime-funcs';
import { validationError } from '../shared/errors.js';
import { singleLine } from './addresses.js';

/** SPEC Limits: at most 5 files, 5 MB each, 7 MB together (decoded sizes). */
const ATTACHMENT_LIMITS = { count: 5, fileBytes: 5 * 1024 * 1024, totalBytes: 7 * 1024 * 1024 } as const;

export interface AttachmentInput {
  filename: string;
  content?: string | undefined;
  url?: string | undefined;
  /** Absent: inferred from the file name's extension (as Resend does). */
  contentType?: string | undefined;
  cid?: string | undefined;
}

/** Fetches an attachment URL within a byte cap; supplied by the composition root. */
export type AttachmentFetcher = (url: string, maxBytes: number) => Promise<Buffer>;

// A plain character class and a length check: a repeated group (`(?:[A-Za-z0-9+/]{4})*`)
// makes V8's regex engine recurse once per group and overflows the stack from about 3.5 MB.
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;.*)?$/;
const CID = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.@-]{1,200}$/;

/** The MIME type of a file name's extension; application/octet-stream when there is none or it is unknown. */
export const contentTypeOf = (filename: string): string => {
  const dot = filename.lastIndexOf('.');
  return dot > 0 && dot < filename.length - 1 ? detectMimeType(filename.slice(dot + 1)) : 'application/octet-stream';
};

/** Strict base64 (line breaks allowed, as MIME tools produce them); anything else is refused. */
function decodeBase64(field: string, value: string): Buffer {
  const compact = value.replace(/[\r\n\t ]/g, '');
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) throw validationError(field, 'must be base64');
  return Buffer.from(compact, 'base64');
}

/** Decoded size without decoding: cheap check before allocating. */
const decodedSize = (base64: string): number => {
  const compact = base64.replace(/[\r\n\t ]/g, '');
  return Math.floor((compact.length * 3) / 4) - (compact.endsWith('==') ? 2 : compact.endsWith('=') ? 1 : 0);
};

/**
 * Validates attachments and turns each into bytes: base64 `content` decoded, or `url`
 * fetched now (at send time) through the fetcher, which enforces the network policy.
 */
export async function resolveAttachments(
  inputs: AttachmentInput[] | undefined,
  fetcher: AttachmentFetcher | null,
  field = 'attachments',
): Promise<Attachment[]> {
  if (!inputs || inputs.length === 0) return [];
  if (inputs.length > ATTACHMENT_LIMITS.count)
    throw validationError(field, `at most ${ATTACHMENT_LIMITS.count} attachments`);
  let total = 0;
  const out: Attachment[] = [];
  for (const [i, input] of inputs.entries()) {
    const at = `${field}[${i}]`;
    const filename = singleLine(`${at}.filename`, input.filename).trim();
    if (filename === '' || filename.length > 255)
      throw validationError(`${at}.filename`, 'must be 1 to 255 characters');
    const contentType = input.contentType ?? contentTypeOf(filename);
    if (!MIME_TYPE.test(contentType) || contentType.length > 255)
      throw validationError(`${at}.contentType`, 'must be a MIME type such as application/pdf');
    if (input.cid !== undefined && !CID.test(input.cid))
      throw validationError(`${at}.cid`, 'must be a Content-ID without spaces or angle brackets');
    if ((input.content === undefined) === (input.url === undefined))
      throw validationError(at, 'needs exactly one of content or url');

    let content: Buffer;
    if (input.content !== undefined) {
      if (decodedSize(input.content) > ATTACHMENT_LIMITS.fileBytes) throw tooLarge(`${at}.content`, 'file');
      content = decodeBase64(`${at}.content`, input.content);
    } else {
      if (!fetcher) throw validationError(`${at}.url`, 'attachment URLs are not available here');
      if (!URL.canParse(input.url!) || !/^https?:$/.test(new URL(input.url!).protocol))
        throw validationError(`${at}.url`, 'must be an http(s) URL');
      content = await fetcher(input.url!, ATTACHMENT_LIMITS.fileBytes).catch((err: unknown) => {
        throw validationError(`${at}.url`, (err as Error).message);
      });
    }
    if (content.length > ATTACHMENT_LIMITS.fileBytes) throw tooLarge(at, 'file');
    total += content.length;
    if (total > ATTACHMENT_LIMITS.totalBytes) throw tooLarge(field, 'total');
    out.push({ filename, content, contentType, ...(input.cid ? { cid: input.cid } : {}) });
  }
  return out;
}

const tooLarge = (field: string, which: 'file' | 'total') =>
  validationError(field, which === 'file' ? 'is larger than 5 MB' : 'attachments are larger than 7 MB together');

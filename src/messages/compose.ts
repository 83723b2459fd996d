import { createRequire } from 'node:module';
import { createWorkerPool, type WorkerPool } from '../shared/worker-pool.js';
import type { Address } from './addresses.js';

/** A file attached to a message (inline when it has a content id). */
export interface Attachment {
  filename: string;
  content: Buffer;
  contentType: string;
  cid?: string;
}

export interface ComposeInput {
  from: Address;
  to: Address[];
  cc: Address[];
  replyTo: Address[];
  subject: string;
  html?: string | undefined;
  text?: string | undefined;
  headers: Record<string, string>;
  attachments: Attachment[];
  /** With angle brackets. */
  messageId: string;
  date: Date;
}

/** Builds the RFC 5322 message of an email (see COMPOSE_TASK). */
export type Composer = (input: ComposeInput) => Promise<Buffer>;

const requireHere = createRequire(import.meta.url);
const MODULES = {
  composer: requireHere.resolve('nodemailer/lib/mail-composer'),
  htmlToText: requireHere.resolve('html-to-text'),
};

/**
 * Composes the RFC 5322 message with nodemailer: RFC 2047 encoding of non-ASCII names and
 * subjects, MIME structure, transfer encodings, and the plain-text part derived from the HTML
 * (html-to-text) when none is given. Bcc recipients are never written into it.
 *
 * A worker-pool task (CommonJS source, see src/shared/worker-pool.ts): composing is the largest
 * share of a message's CPU time on the event loop after the database, so delivery's composing
 * (a campaign's messages) runs beside DKIM signing on the same threads; requests use
 * composeInline. Buffers cross the thread boundary as Uint8Arrays.
 */
export const COMPOSE_TASK = `(require) => {
  const modules = ${JSON.stringify(MODULES)};
  const composerModule = require(modules.composer);
  const MailComposer = composerModule.default || composerModule;
  // Compiled once: compiling the converter's selectors costs more than converting a message.
  const htmlToText = require(modules.htmlToText).compile({ wordwrap: 78, selectors: [{ selector: 'img', format: 'skip' }] });
  const buffer = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return async (input) => {
    const text = input.text !== undefined ? input.text : input.html !== undefined ? htmlToText(input.html) : undefined;
    const composer = new MailComposer({
      from: input.from,
      to: input.to,
      cc: input.cc.length > 0 ? input.cc : undefined,
      replyTo: input.replyTo.length > 0 ? input.replyTo : undefined,
      subject: input.subject,
      html: input.html,
      text,
      headers: input.headers,
      messageId: input.messageId,
      date: new Date(input.date),
      attachments: input.attachments.map((a) => Object.assign(
        { filename: a.filename, content: buffer(a.content), contentType: a.contentType },
        // Without a cid it is a file to open: nodemailer would otherwise show a message/rfc822
        // part (a forwarded .eml) inline, and mail programs would merge it into the body.
        a.cid ? { cid: a.cid, contentDisposition: 'inline' } : { contentDisposition: 'attachment' },
      )),
      // Our own Message-ID and Date; no X-Mailer advertising the library.
      xMailer: false,
    });
    const raw = await composer.compile().build();
    return { value: raw, transfer: raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength ? [raw.buffer] : [] };
  };
}`;

/**
 * Composes on the calling thread. For requests that wait for their answer: the worker threads
 * serve delivery's signing first-come first-served, so a request composed there waits behind
 * every signature queued before it (the open-loop API bench with delivery running measured a
 * p50 of 90 ms that way at 300 req/s, against about 10 ms inline, on a noisy machine).
 */
export const composeInline: Composer = poolComposer(createWorkerPool({ threads: 0, tasks: { compose: COMPOSE_TASK } }));

/** A Composer running COMPOSE_TASK on `pool`. */
export function poolComposer(pool: WorkerPool): Composer {
  return async (input) => {
    const raw = await pool.run<Uint8Array>('compose', input);
    return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  };
}

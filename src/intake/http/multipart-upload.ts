import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import { AppError, classifyFault, validationError } from '../../shared/errors.js';
import type { Ctx } from './context.js';

interface SpooledUpload {
  fileName: string | null;
  bytes: number;
  sha256: string;
  /** The other parts of the form, as text. */
  fields: Record<string, string>;
}

/** Room for the multipart framing and the small fields around a file of `limit` bytes. */
const FORM_OVERHEAD = 1024 * 1024;
const MAX_FIELD_BYTES = 64 * 1024;

/**
 * Reads a multipart/form-data request as a stream: its one file part `fileField` goes to `path`
 * (hashed on the way, never held in memory), at most `limit` bytes (413 above); the other
 * parts are small text fields. The file may come before the fields that say how to read it
 * (the Resend SDK sends it first), hence the spool.
 */
export async function spoolUpload(
  ctx: Ctx,
  options: { path: string; limit: number; fileField: string },
): Promise<SpooledUpload> {
  const { path, limit, fileField } = options;
  if (!ctx.is('multipart/form-data'))
    throw new AppError('unsupported_media_type', 'Send the file as multipart/form-data with a part named file');
  // A declared size far over the limit is refused before a byte is read.
  if (ctx.request.length !== undefined && ctx.request.length > limit + FORM_OVERHEAD) {
    ctx.set('Connection', 'close');
    throw new AppError('payload_too_large', `The file is larger than ${limit} bytes`);
  }
  let parser: busboy.Busboy;
  try {
    // Busboy flags a file that reaches fileSize as truncated, even at exactly that size: one
    // byte more tells a file of `limit` bytes (taken) from a larger one.
    parser = busboy({
      headers: ctx.req.headers,
      limits: { fileSize: limit + 1, files: 1, fields: 20, fieldSize: MAX_FIELD_BYTES, parts: 21 },
    });
  } catch (err) {
    throw validationError('body', `not a readable multipart body: ${(err as Error).message}`);
  }
  const fields: Record<string, string> = {};
  let problem: AppError | undefined;
  let file: Promise<{ fileName: string | null; bytes: number; sha256: string; truncated: boolean }> | undefined;
  parser.on('field', (name, value, info) => {
    if (info.valueTruncated) problem ??= validationError(name, `must be at most ${MAX_FIELD_BYTES} bytes`);
    fields[name] = value;
  });
  parser.on('file', (name, stream, info) => {
    if (name !== fileField || file) {
      problem ??= validationError(
        name,
        name === fileField
          ? 'only one file per upload'
          : `unexpected file part; the CSV goes in the part named ${fileField}`,
      );
      stream.resume();
      return;
    }
    const hash = createHash('sha256');
    let bytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    file = pipeline(stream, counter, createWriteStream(path)).then(() => ({
      fileName: info.filename ?? null,
      bytes,
      sha256: hash.digest('hex'),
      truncated: (stream as { truncated?: boolean }).truncated === true,
    }));
    // Ends with a rejection the caller awaits; a handler here keeps it from counting as unhandled meanwhile.
    file.catch(() => undefined);
  });
  parser.on('filesLimit', () => (problem ??= validationError(fileField, 'only one file per upload')));
  parser.on('fieldsLimit', () => (problem ??= validationError('body', 'too many form fields')));
  parser.on('partsLimit', () => (problem ??= validationError('body', 'too many form parts')));
  try {
    await pipeline(ctx.req, parser);
    const spooled = file ? await file : undefined;
    if (problem) throw problem;
    if (!spooled) throw validationError(fileField, 'is required: the CSV file as a part named file');
    if (spooled.truncated) throw new AppError('payload_too_large', `The file is larger than ${limit} bytes`);
    return { fileName: spooled.fileName, bytes: spooled.bytes, sha256: spooled.sha256, fields };
  } catch (err) {
    await file?.catch(() => undefined);
    await rm(path, { force: true });
    if (err instanceof AppError) throw err;
    // The spool's disk full or failing is ours, not the body's.
    throw classifyFault(err) ?? validationError('body', `not a readable multipart body: ${(err as Error).message}`);
  }
}

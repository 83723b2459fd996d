import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Joiner, Splitter, type Headers } from '@zone-eu/mailsplit';

/**
 * Edits the top-level headers of a message and leaves every byte of its body as it was
 * (mailsplit splits and re-joins the stream). Used for mail submitted whole, over SMTP.
 */
export async function editRootHeaders(raw: Buffer, edit: (headers: Headers) => void): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let edited = false;
  await pipeline(
    Readable.from([raw]),
    new Splitter(),
    new Transform({
      objectMode: true,
      transform(
        data: { type: string; root?: boolean; headers?: Headers },
        _enc: BufferEncoding,
        done: TransformCallback,
      ) {
        if (data.type === 'node' && data.root && !edited && data.headers) {
          edit(data.headers);
          edited = true;
        }
        done(null, data);
      },
    }),
    new Joiner(),
    new Transform({
      transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
        chunks.push(chunk);
        done();
      },
    }),
  );
  return Buffer.concat(chunks);
}

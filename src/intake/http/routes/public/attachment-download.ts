import type { Next } from 'koa';
import { DOWNLOAD_PATH } from '../../../../services/emails.js';
import { RECEIVED_DOWNLOAD_PATH } from '../../../../services/receiving/received-emails.js';
import { isAppError } from '../../../../shared/errors.js';
import type { Ctx, HttpDeps } from '../../context.js';

const TOKEN_RE = /^[A-Za-z0-9_-]{1,2048}\.[A-Za-z0-9_-]{1,64}$/;
// The type a received message gave its attachment is the sender's word: only a well-formed one is served.
const MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/**
 * The download links of a sent email's attachments (`/a/<token>`) and of a received message's
 * raw source and attachments (`/r/<token>`), under `http.publicUrl`, outside authentication:
 * the signed, expiring token is the credential, as with Resend's signed URLs (the SDK's
 * `emails.receiving.forward` fetches `raw.download_url` with no key). Anything not genuine is
 * a plain 404.
 */
export function attachmentDownloadRoutes(deps: HttpDeps) {
  return async function attachmentDownload(ctx: Ctx, next: Next): Promise<void> {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const received = ctx.path.startsWith(RECEIVED_DOWNLOAD_PATH);
    if (!received && !ctx.path.startsWith(DOWNLOAD_PATH)) return next();
    const token = ctx.path.slice((received ? RECEIVED_DOWNLOAD_PATH : DOWNLOAD_PATH).length);
    ctx.set('Cache-Control', 'private, no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Content-Type-Options', 'nosniff');
    const notFound = () => {
      ctx.status = 404;
      ctx.type = 'text/plain';
      ctx.body = 'This download link is not valid or has expired.';
    };
    if (!TOKEN_RE.test(token)) return notFound();
    try {
      const file = received
        ? await deps.services.receivedEmails.download(token)
        : await deps.services.emails.download(token);
      // Served as a download, never rendered by the browser on our origin.
      ctx.attachment(file.filename ?? 'attachment');
      ctx.type = MIME_TYPE.test(file.contentType) ? file.contentType : 'application/octet-stream';
      ctx.set('Content-Security-Policy', "sandbox; default-src 'none'");
      ctx.body = file.content;
    } catch (err) {
      if (!isAppError(err) || err.code !== 'not_found') throw err;
      notFound();
    }
  };
}

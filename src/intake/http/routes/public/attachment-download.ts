import type { Next } from 'koa';
import { DOWNLOAD_PATH } from '../../../../services/emails.js';
import { isAppError } from '../../../../shared/errors.js';
import type { Ctx, HttpDeps } from '../../context.js';

const TOKEN_RE = /^[A-Za-z0-9_-]{1,2048}\.[A-Za-z0-9_-]{1,64}$/;

/**
 * The download links of a sent email's attachments (`download_url` in the API), at
 * `<http.publicUrl>/a/<token>`, outside authentication: the signed, expiring token is the
 * credential, as with Resend's signed URLs. Anything not genuine is a plain 404.
 */
export function attachmentDownloadRoutes(deps: HttpDeps) {
  return async function attachmentDownload(ctx: Ctx, next: Next): Promise<void> {
    if (!ctx.path.startsWith(DOWNLOAD_PATH) || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    const token = ctx.path.slice(DOWNLOAD_PATH.length);
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
      const file = await deps.services.emails.download(token);
      // Served as a download, never rendered by the browser on our origin.
      ctx.attachment(file.filename);
      ctx.type = file.contentType;
      ctx.body = file.content;
    } catch (err) {
      if (!isAppError(err) || err.code !== 'not_found') throw err;
      notFound();
    }
  };
}

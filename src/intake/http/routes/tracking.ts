import type { Next } from 'koa';
import { TRACKING_PATHS } from '../../../messages/links.js';
import type { Ctx, HttpDeps } from '../context.js';

/** A transparent 1×1 GIF. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const TOKEN_RE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * The links in tracked mail, on `http.publicUrl`, outside authentication: the open pixel
 * (`GET /t/o/<token>`: always the GIF, so a broken token shows nothing to the reader) and
 * link redirects (`GET /t/c/<token>`: 302 to the URL signed into the token, 404 for a token
 * that is not genuine, so the redirect can never be aimed elsewhere). HEAD is answered the
 * same and recorded as a scanner's (link checkers probe with it). The client's address is the
 * socket's, or the one behind the trusted proxies (`http.trustProxy`, client-address.ts).
 */
export function trackingRoutes(deps: HttpDeps) {
  const { tracking } = deps.services;
  return async function trackingRoute(ctx: Ctx, next: Next): Promise<void> {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const open = ctx.path.startsWith(TRACKING_PATHS.open);
    if (!open && !ctx.path.startsWith(TRACKING_PATHS.click)) return next();
    const token = ctx.path.slice((open ? TRACKING_PATHS.open : TRACKING_PATHS.click).length);
    const genuine = TOKEN_RE.test(token);
    const requester = {
      method: ctx.method,
      ip: ctx.state.clientAddress || null,
      userAgent: ctx.get('User-Agent') || null,
    };
    ctx.set('Cache-Control', 'no-store, no-cache, must-revalidate, private');
    ctx.set('Referrer-Policy', 'no-referrer');

    if (open) {
      if (genuine)
        await tracking
          .open(token, requester)
          .catch((err: unknown) => deps.logger.error({ err }, 'could not record an open'));
      ctx.type = 'image/gif';
      ctx.body = PIXEL;
      return;
    }
    const target = genuine ? await tracking.click(token, requester) : null;
    if (target === null) {
      ctx.status = 404;
      ctx.type = 'text/plain';
      ctx.body = 'This link is not valid.';
      return;
    }
    ctx.redirect(target);
  };
}

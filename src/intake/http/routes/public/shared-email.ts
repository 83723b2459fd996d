import type { Next } from 'koa';
import { escapeHtml } from '../../../../messages/render-template.js';
import { SHARE_PATH, type SharedEmail } from '../../../../services/emails.js';
import { isAppError } from '../../../../shared/errors.js';
import type { Ctx, HttpDeps } from '../../context.js';

const TOKEN_RE = /^[A-Za-z0-9_-]{1,2048}\.[A-Za-z0-9_-]{1,64}$/;

const STYLE =
  'body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2939}' +
  'header{padding:1rem 1.25rem;border-bottom:1px solid #d0d5dd;line-height:1.5}header h1{font-size:1.2rem;margin:0 0 .25rem}header p{margin:0;color:#667085;font-size:.9rem}' +
  'iframe{border:0;width:100%;height:calc(100vh - 7rem)}pre{white-space:pre-wrap;padding:1rem 1.25rem;margin:0;font:inherit}';

/** The page of a shared message: its headers, and its HTML in a sandboxed frame (no script, no forms) or its text. */
function sharedEmailPage(e: SharedEmail): string {
  const body =
    e.html !== null
      ? `<iframe sandbox="allow-popups allow-popups-to-escape-sandbox" referrerpolicy="no-referrer" title="Message" srcdoc="${escapeHtml(e.html)}"></iframe>`
      : `<pre>${escapeHtml(e.text ?? '')}</pre>`;
  return (
    `<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">` +
    `<title>${escapeHtml(e.subject)}</title><style>${STYLE}</style></head><body>` +
    `<header><h1>${escapeHtml(e.subject)}</h1><p>From ${escapeHtml(e.from)} to ${escapeHtml(e.to.join(', '))}</p><p>${escapeHtml(e.created_at)}</p></header>${body}</body></html>`
  );
}

/**
 * `<http.publicUrl>/s/<token>`: the rendered message a share link names (Resend's
 * `emails.share`), outside authentication: the signed, expiring token is the credential.
 * Anything not genuine or expired is a plain 404.
 */
export function sharedEmailRoutes(deps: HttpDeps) {
  return async function sharedEmail(ctx: Ctx, next: Next): Promise<void> {
    if (!ctx.path.startsWith(SHARE_PATH) || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    const token = ctx.path.slice(SHARE_PATH.length);
    ctx.set('Cache-Control', 'private, no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('X-Robots-Tag', 'noindex');
    const notFound = () => {
      ctx.status = 404;
      ctx.type = 'text/plain';
      ctx.body = 'This link is not valid or has expired.';
    };
    if (!TOKEN_RE.test(token)) return notFound();
    try {
      const email = await deps.services.emails.shared(token);
      // The message's own styles and remote images show; nothing of it runs.
      ctx.set(
        'Content-Security-Policy',
        "default-src 'none'; style-src 'unsafe-inline'; img-src https: http: data:; frame-ancestors 'none'; form-action 'none'",
      );
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = sharedEmailPage(email);
    } catch (err) {
      if (!isAppError(err) || err.code !== 'not_found') throw err;
      notFound();
    }
  };
}

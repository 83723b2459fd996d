import type { Next } from 'koa';
import { escapeHtml } from '../../../../services/send/render-template.js';
import { isAppError } from '../../../../shared/errors.js';
import type { Ctx, HttpDeps } from '../../context.js';

const PATH = /^\/u\/([A-Za-z0-9_.-]{1,2048})$/;

const page = (title: string, body: string): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}button{font-size:1rem;padding:.6rem 1.2rem;cursor:pointer}</style>
</head><body>${body}</body></html>`;

/**
 * One-click unsubscribe (RFC 8058) at `<http.publicUrl>/u/<token>`: POST unsubscribes at once
 * (what mailbox providers send from their button); GET shows a confirmation page whose button
 * posts the same. The signed token is the only credential; a tampered one changes nothing.
 */
export function unsubscribeRoutes(deps: HttpDeps) {
  return async function unsubscribe(ctx: Ctx, next: Next): Promise<void> {
    const match = PATH.exec(ctx.path);
    if (!match || (ctx.method !== 'GET' && ctx.method !== 'POST' && ctx.method !== 'HEAD')) return next();
    const token = match[1]!;
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.type = 'html';
    try {
      if (ctx.method === 'POST') {
        const { address } = await deps.services.unsubscribe.unsubscribe(token);
        ctx.body = page('Unsubscribed', `<h1>You are unsubscribed</h1><p>${escapeHtml(address)} will receive no more marketing mail from this sender.</p>`);
        return;
      }
      const { address } = deps.services.unsubscribe.peek(token);
      ctx.body = page(
        'Unsubscribe',
        `<h1>Unsubscribe</h1><p>Stop marketing mail to ${escapeHtml(address)}?</p><form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`,
      );
    } catch (err) {
      if (!isAppError(err) || err.code !== 'validation_error') throw err;
      ctx.status = 400;
      ctx.body = page('Invalid link', '<h1>This unsubscribe link is not valid</h1><p>It may have been cut or changed. Use the link from the message itself.</p>');
    }
  };
}

import parse from 'co-body';
import type { Next } from 'koa';
import { isAppError } from '../../../../shared/errors.js';
import type { PreferenceState } from '../../../../services/marketing/preferences.js';
import type { Ctx, HttpDeps } from '../../context.js';
import { chooseLanguage, FALLBACK_LANGUAGE, loadPreferenceMessages } from './preference-messages.js';
import { invalidLinkPage, preferencePage, type Notice } from './preference-page.js';

const PATH = /^\/u\/([A-Za-z0-9_.-]{1,2048})(\/preferences)?$/;
const NOTICES = new Set(['saved', 'resubscribed']);
/** The preference form holds a token and topic ids: a few kilobytes at most. */
const FORM_LIMIT = '64kb';

/**
 * The link every marketing message carries (`List-Unsubscribe`, `{{unsubscribe_url}}`), at
 * `<http.publicUrl>/u/<token>`:
 *
 * - `POST /u/<token>` unsubscribes at once, whatever the body (RFC 8058: what mailbox
 *   providers' buttons send, and the page's own "unsubscribe from everything");
 * - `GET /u/<token>` is the preference centre: the contact's topics, a way out of everything,
 *   in the contact's language; it changes nothing (link scanners fetch it);
 * - `POST /u/<token>/preferences` saves the topics ticked (or subscribes again), then sends
 *   the browser back to the page (303).
 *
 * The signed token is the only credential. Against cross-site requests, the preference form
 * must carry the form token its page was served with, and a browser's Origin or
 * Sec-Fetch-Site must say it comes from this site; the page may not be framed.
 */
export function unsubscribeRoutes(deps: HttpDeps) {
  const messages = loadPreferenceMessages();
  const languages = new Set(messages.keys());

  return async function unsubscribe(ctx: Ctx, next: Next): Promise<void> {
    const match = PATH.exec(ctx.path);
    const preferences = match?.[2] !== undefined;
    if (!match || !(ctx.method === 'POST' || (!preferences && (ctx.method === 'GET' || ctx.method === 'HEAD'))))
      return next();
    const token = match[1]!;
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set(
      'Content-Security-Policy',
      "default-src 'none'; img-src https: data:; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    ctx.set('X-Frame-Options', 'DENY');
    ctx.type = 'html';
    const { preferences: service, unsubscribe: oneClick } = deps.services;

    const render = (state: PreferenceState, notice: Notice) => {
      const lang = chooseLanguage(languages, {
        query: ctx.query.lang as string | undefined,
        contact: state.contact?.language,
        acceptLanguage: ctx.get('Accept-Language'),
      });
      ctx.body = preferencePage(lang, messages.get(lang)!, state, token, notice);
    };

    try {
      if (!preferences && ctx.method === 'POST') {
        await oneClick.unsubscribe(token);
        render(await service.show(token), 'unsubscribed');
        return;
      }
      if (!preferences) {
        const notice =
          typeof ctx.query.notice === 'string' && NOTICES.has(ctx.query.notice) ? (ctx.query.notice as Notice) : null;
        render(await service.show(token), notice);
        return;
      }
      const form = await readForm(ctx);
      if (!sameSite(ctx) || form === null) {
        ctx.status = 403;
        render(await service.show(token), 'stale_form');
        return;
      }
      const action = form.get('action');
      const formToken = form.get('form') ?? '';
      if (action === 'resubscribe') await service.resubscribe(token, formToken);
      else await service.save(token, formToken, form.getAll('topic'));
      ctx.status = 303;
      // Relative to /u/<token>/preferences: back to /u/<token> under any public URL prefix.
      ctx.set('Location', `../${token}?notice=${action === 'resubscribe' ? 'resubscribed' : 'saved'}`);
      ctx.body = '';
    } catch (err) {
      if (!isAppError(err) || err.code !== 'validation_error') throw err;
      ctx.status = 400;
      if (err.field === 'form') {
        render(await service.show(token), 'stale_form');
        return;
      }
      const lang = chooseLanguage(languages, {
        query: ctx.query.lang as string | undefined,
        acceptLanguage: ctx.get('Accept-Language'),
      });
      ctx.body = invalidLinkPage(lang, messages.get(lang) ?? messages.get(FALLBACK_LANGUAGE)!);
    }
  };
}

/** The urlencoded form a browser posts; null for anything else (too large, another type). */
async function readForm(ctx: Ctx): Promise<URLSearchParams | null> {
  if (!ctx.is('application/x-www-form-urlencoded')) return null;
  try {
    return new URLSearchParams(await parse.text(ctx.req, { limit: FORM_LIMIT }));
  } catch {
    return null;
  }
}

/**
 * Whether a browser says the post comes from this site: Sec-Fetch-Site when it sends one, else
 * an Origin equal to the request's own. A client sending neither (not a browser) passes: the
 * form token still binds the post to a page served for this link.
 */
function sameSite(ctx: Ctx): boolean {
  const site = ctx.get('Sec-Fetch-Site');
  if (site) return site === 'same-origin' || site === 'none';
  const origin = ctx.get('Origin');
  return !origin || origin === `${ctx.protocol}://${ctx.host}`;
}

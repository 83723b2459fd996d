import type Router from '@koa/router';
import type { Ctx, HttpDeps, State } from '../../context.js';
import { html } from '../html.js';
import { plainPage } from '../layout.js';
import { checkPreLogin, preLoginToken, readForm, setSessionCookie, SESSION_COOKIE } from '../session.js';

/** Only paths inside the dashboard, so the sign-in page cannot be made to redirect elsewhere. */
const safeNext = (next: unknown): string =>
  typeof next === 'string' && /^\/dashboard(\/|\?|$)/.test(next) && !next.includes('\\') ? next : '/dashboard';

const client = (ctx: Ctx): string => ctx.state.clientAddress || 'unknown';

function loginPage(ctx: Ctx, deps: HttpDeps, options: { error?: string; next?: string } = {}): string {
  const token = preLoginToken(ctx, deps);
  const form = deps.services.dashboardAuth.passwordEnabled
    ? html`<form method="post" action="/dashboard/login"><input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="next" value="${safeNext(options.next)}">
<label>Password<input type="password" name="password" autocomplete="current-password" required autofocus></label><button type="submit">Sign in</button></form>
<p class="muted">Or run <code>mailsvc dashboard login</code> on the server (<code>npx mailsvc dashboard login</code> in a clone of the repository) for a one-time link.</p>`
    : html`<p>Run <code>mailsvc dashboard login</code> on the server (<code>npx mailsvc dashboard login</code> in a clone of the repository) and open the link it prints.</p>
<p class="muted">To sign in with a password instead, set <code>dashboard.password</code> (or <code>MAILSVC_DASHBOARD_PASSWORD</code>).</p>`;
  return plainPage('Sign in', html`<div class="card"><h1>Sign in to mailsvc</h1>${options.error ? html`<div class="error" role="alert">${options.error}</div>` : ''}${form}</div>`);
}

export function registerLoginRoutes(router: Router<State>, deps: HttpDeps): void {
  const auth = deps.services.dashboardAuth;

  router.get('/login', async (ctx) => {
    if (await auth.session(ctx.cookies.get(SESSION_COOKIE))) return ctx.redirect(safeNext(ctx.query.next));
    ctx.body = loginPage(ctx, deps, { next: ctx.query.next as string | undefined });
  });

  router.post('/login', async (ctx) => {
    const form = await readForm(ctx);
    checkPreLogin(ctx, deps, form);
    try {
      setSessionCookie(ctx, await auth.signInWithPassword(form.password ?? '', client(ctx)));
    } catch (err) {
      if ((err as { code?: string }).code !== 'unauthorized') throw err;
      ctx.status = 401;
      ctx.body = loginPage(ctx, deps, { error: 'Wrong password.', next: form.next });
      return;
    }
    ctx.status = 303;
    ctx.redirect(safeNext(form.next));
  });

  // The link only shows a button: mail scanners and link previews that fetch the URL must not use it up.
  router.get('/login/:token', async (ctx) => {
    const token = preLoginToken(ctx, deps);
    ctx.body = plainPage(
      'Sign in',
      html`<div class="card"><h1>Sign in to mailsvc</h1><form method="post" action="/dashboard/login/${ctx.params.token}"><input type="hidden" name="_csrf" value="${token}"><button type="submit">Sign in to the dashboard</button></form><p class="muted">This link works once.</p></div>`,
    );
  });

  router.post('/login/:token', async (ctx) => {
    const form = await readForm(ctx);
    checkPreLogin(ctx, deps, form);
    setSessionCookie(ctx, await auth.signInWithLink(ctx.params.token ?? '', client(ctx)));
    ctx.status = 303;
    ctx.redirect('/dashboard');
  });
}

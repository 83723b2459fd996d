import { actingAs } from '../../../../shared/actor.js';
import { AppError } from '../../../../shared/errors.js';
import type Router from '@koa/router';
import type { Ctx, HttpDeps, State } from '../../context.js';
import { html } from '../html.js';
import { plainPage } from '../layout.js';
import type { ClientInfo } from '../../../../services/dashboard-auth.js';
import {
  checkPreLogin,
  clearSecondFactorTicket,
  preLoginToken,
  readForm,
  secondFactorTicket,
  setSecondFactorTicket,
  setSessionCookie,
  SESSION_COOKIE,
} from '../session.js';

/** Only paths inside the dashboard, so the sign-in page cannot be made to redirect elsewhere. */
const safeNext = (next: unknown): string =>
  typeof next === 'string' && /^\/dashboard(\/|\?|$)/.test(next) && !next.includes('\\') ? next : '/dashboard';

const client = (ctx: Ctx): ClientInfo => ({
  address: ctx.state.clientAddress || 'unknown',
  userAgent: ctx.get('user-agent') || undefined,
});

function codePage(ctx: Ctx, deps: HttpDeps, options: { error?: string; next?: string } = {}): string {
  const token = preLoginToken(ctx, deps);
  return plainPage(
    'Two-factor sign-in',
    html`<div class="card"><h1>Two-factor sign-in</h1>${options.error ? html`<div class="error" role="alert">${options.error}</div>` : ''}
<form method="post" action="/dashboard/login/two-factor"><input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="next" value="${safeNext(options.next)}">
<label>Code from your authenticator app<input name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="64" required autofocus></label><button type="submit">Sign in</button></form>
<p class="muted">Lost your device? Enter one of your recovery codes instead (each works once), or ask the server's operator to run <code>mailsvc users reset-2fa EMAIL</code>.</p></div>`,
  );
}

function loginPage(ctx: Ctx, deps: HttpDeps, options: { error?: string; next?: string; users?: boolean } = {}): string {
  const token = preLoginToken(ctx, deps);
  const form = options.users
    ? html`<form method="post" action="/dashboard/login"><input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="next" value="${safeNext(options.next)}">
<label>Email<input type="email" name="email" autocomplete="username" required autofocus></label><label>Password<input type="password" name="password" autocomplete="current-password" required></label><button type="submit">Sign in</button></form>
<p class="muted">No account yet? Ask an owner or admin of the workspace for an invitation (<code>mailsvc users invite EMAIL --role ROLE</code>).</p>`
    : deps.services.dashboardAuth.passwordEnabled
      ? html`<form method="post" action="/dashboard/login"><input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="next" value="${safeNext(options.next)}">
<label>Password<input type="password" name="password" autocomplete="current-password" required autofocus></label><button type="submit">Sign in</button></form>
<p class="muted">Or run <code>mailsvc dashboard login</code> on the server (<code>npx mailsvc dashboard login</code> in a clone of the repository) for a one-time link.</p>`
      : html`<p>Run <code>mailsvc dashboard login</code> on the server (<code>npx mailsvc dashboard login</code> in a clone of the repository) and open the link it prints.</p>
<p class="muted">To sign in with a password instead, set <code>dashboard.password</code> (or <code>MAILSVC_DASHBOARD_PASSWORD</code>).</p>`;
  return plainPage(
    'Sign in',
    html`<div class="card"><h1>Sign in to mailsvc</h1>${options.error ? html`<div class="error" role="alert">${options.error}</div>` : ''}${form}</div>`,
  );
}

function invitePage(
  ctx: Ctx,
  deps: HttpDeps,
  token: string,
  invite: { email: string; role: string },
  error?: string,
): string {
  const csrf = preLoginToken(ctx, deps);
  return plainPage(
    'Invitation',
    html`<div class="card"><h1>Join mailsvc</h1>${error ? html`<div class="error" role="alert">${error}</div>` : ''}<p>You are invited as <strong>${invite.email}</strong>, role <strong>${invite.role}</strong>. Choose a password (12 characters at least).</p>
<form method="post" action="/dashboard/invite/${token}"><input type="hidden" name="_csrf" value="${csrf}">
<label>Password<input type="password" name="password" autocomplete="new-password" minlength="12" required autofocus></label><label>Again<input type="password" name="confirm" autocomplete="new-password" minlength="12" required></label><button type="submit">Join</button></form></div>`,
  );
}

export function registerLoginRoutes(router: Router<State>, deps: HttpDeps): void {
  const auth = deps.services.dashboardAuth;

  router.get('/login', async (ctx) => {
    if (await auth.session(ctx.cookies.get(SESSION_COOKIE))) return ctx.redirect(safeNext(ctx.query.next));
    ctx.body = loginPage(ctx, deps, { next: ctx.query.next as string | undefined, users: await auth.usersExist() });
  });

  router.post('/login', async (ctx) => {
    const form = await readForm(ctx);
    checkPreLogin(ctx, deps, form);
    try {
      const result = await auth.signInWithPassword(form.password ?? '', client(ctx), form.email);
      if ('ticket' in result) {
        setSecondFactorTicket(ctx, result);
        ctx.status = 303;
        ctx.redirect(`/dashboard/login/two-factor?next=${encodeURIComponent(safeNext(form.next))}`);
        return;
      }
      setSessionCookie(ctx, result);
    } catch (err) {
      if ((err as { code?: string }).code !== 'unauthorized') throw err;
      const users = await auth.usersExist();
      ctx.status = 401;
      ctx.body = loginPage(ctx, deps, {
        error: users ? 'Wrong address or password.' : 'Wrong password.',
        next: form.next,
        users,
      });
      return;
    }
    ctx.status = 303;
    ctx.redirect(safeNext(form.next));
  });

  // The second step of a sign-in: the ticket cookie says whose password was right, the code proves the device.
  router.get('/login/two-factor', (ctx) => {
    if (!auth.ticketUser(secondFactorTicket(ctx)))
      return ctx.redirect(`/dashboard/login?next=${encodeURIComponent(safeNext(ctx.query.next))}`);
    ctx.body = codePage(ctx, deps, { next: ctx.query.next as string | undefined });
  });

  router.post('/login/two-factor', async (ctx) => {
    const form = await readForm(ctx);
    checkPreLogin(ctx, deps, form);
    const ticket = secondFactorTicket(ctx);
    const userId = auth.ticketUser(ticket);
    try {
      // Before a session exists the actor is the user whose password was right (a recovery code used is recorded).
      const signed = await actingAs(
        { type: userId ? 'user' : 'dashboard', id: userId ?? null, address: ctx.state.clientAddress },
        () => auth.signInWithSecondFactor(ticket, form.code ?? '', client(ctx)),
      );
      clearSecondFactorTicket(ctx);
      setSessionCookie(ctx, signed);
    } catch (err) {
      if ((err as { code?: string }).code !== 'unauthorized') throw err;
      ctx.status = 401;
      if (!userId) {
        clearSecondFactorTicket(ctx);
        ctx.body = loginPage(ctx, deps, { error: (err as Error).message, next: form.next, users: true });
      } else
        ctx.body = codePage(ctx, deps, {
          error: 'That code is not right. Enter the 6 digits your app shows now, or a recovery code.',
          next: form.next,
        });
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

  // An invitation (mailsvc users invite): the person chooses a password and is signed in.
  router.get('/invite/:token', async (ctx) => {
    const invite = await deps.services.users.findInvite(ctx.params.token ?? '');
    if (!invite) {
      ctx.status = 404;
      ctx.body = plainPage(
        'Invitation',
        html`<div class="card"><h1>This invitation is not valid</h1><p>It was already used, has expired or was mistyped. Ask for a new one.</p></div>`,
      );
      return;
    }
    ctx.body = invitePage(ctx, deps, ctx.params.token ?? '', invite);
  });

  router.post('/invite/:token', async (ctx) => {
    const form = await readForm(ctx);
    checkPreLogin(ctx, deps, form);
    const token = ctx.params.token ?? '';
    const invite = await deps.services.users.findInvite(token);
    if (!invite)
      throw new AppError(
        'not_found',
        'This invitation is not valid: it was already used, has expired or was mistyped. Ask for a new one.',
      );
    if ((form.password ?? '') !== (form.confirm ?? '')) {
      ctx.status = 400;
      ctx.body = invitePage(ctx, deps, token, invite, 'The two passwords differ.');
      return;
    }
    let accepted;
    try {
      // No session yet: the audit log has the dashboard and the address the invitation was accepted from.
      accepted = await actingAs({ type: 'dashboard', id: null, address: ctx.state.clientAddress }, () =>
        deps.services.users.acceptInvite(token, form.password ?? ''),
      );
    } catch (err) {
      if ((err as { code?: string }).code !== 'validation_error' && (err as { code?: string }).code !== 'unauthorized')
        throw err;
      ctx.status = 400;
      ctx.body = invitePage(ctx, deps, token, invite, (err as Error).message);
      return;
    }
    const signed = await auth.signInUser(accepted.user.id, client(ctx));
    if ('ticket' in signed) {
      // Joined with the password of an account that has a second factor: its code before a session.
      setSecondFactorTicket(ctx, signed);
      ctx.status = 303;
      ctx.redirect('/dashboard/login/two-factor');
      return;
    }
    setSessionCookie(ctx, signed);
    const session = await auth.session(signed.secret);
    if (session) await auth.switchWorkspace(session, accepted.workspaceId);
    ctx.status = 303;
    ctx.redirect('/dashboard');
  });

  router.post('/login/:token', async (ctx) => {
    const form = await readForm(ctx);
    checkPreLogin(ctx, deps, form);
    setSessionCookie(ctx, await auth.signInWithLink(ctx.params.token ?? '', client(ctx)));
    ctx.status = 303;
    ctx.redirect('/dashboard');
  });
}

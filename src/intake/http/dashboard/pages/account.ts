import type { DashRoutes } from '../routes.js';
import type { SessionView } from '../../../../services/dashboard-auth.js';
import type { AccountActor } from '../../../../services/two-factor.js';
import { AppError } from '../../../../shared/errors.js';
import type { HttpDeps } from '../../context.js';
import { formAction } from '../form.js';
import { html, SafeHtml } from '../html.js';
import { actionButton, page, postForm, table, when, type DashView } from '../layout.js';
import {
  redirectWithNotice,
  redirectWithSecret,
  takeNotice,
  takeSecret,
  type DashCtx,
  type ShownSecret,
} from '../session.js';

/**
 * The signed-in person's own account: two-factor sign-in (enrol with a QR code, recovery codes,
 * turn off), the workspace's requirement of it (owners), the password, and the sessions with
 * where and when, each revocable. Every role may use it, for itself only.
 */

const RECOVERY_TITLE = 'Your recovery codes';

const who = (view: DashView): AccountActor => {
  if (view.session.userId === null)
    throw new AppError(
      'forbidden',
      'This session signed in with the shared password or a CLI link: it has no account. Create users with `mailsvc users create`.',
    );
  return { userId: view.session.userId, workspaceId: view.workspace.id };
};

/** A short, readable name of a browser from its User-Agent (the full string is on hover). */
function browserOf(ua: string | null): string {
  if (!ua) return 'unknown';
  const browser = /Edg\//.test(ua)
    ? 'Edge'
    : /Firefox\//.test(ua)
      ? 'Firefox'
      : /Chrom(e|ium)\//.test(ua)
        ? 'Chrome'
        : /Safari\//.test(ua)
          ? 'Safari'
          : /curl|node|undici/i.test(ua)
            ? 'a script'
            : 'a browser';
  const os = /Windows/.test(ua)
    ? 'Windows'
    : /Android/.test(ua)
      ? 'Android'
      : /iPhone|iPad/.test(ua)
        ? 'iOS'
        : /Mac OS X/.test(ua)
          ? 'macOS'
          : /Linux/.test(ua)
            ? 'Linux'
            : '';
  return os ? `${browser} on ${os}` : browser;
}

const recoveryCard = (shown: ShownSecret) =>
  html`<div class="card" id="recovery-codes"><h2>${shown.title}</h2><p>${shown.note}</p><ol class="codes">${shown.secret.split(' ').map((c) => html`<li><code>${c}</code></li>`)}</ol></div>`;

const sessionRow = (view: DashView, s: SessionView) =>
  html`<tr data-session="${s.id}"><td>${s.client_address ?? '—'}</td><td title="${s.user_agent ?? ''}">${browserOf(s.user_agent)}</td><td>${when(s.created_at)}</td><td>${when(s.last_seen_at)}</td><td>${
    s.current
      ? html`<strong>this browser</strong>`
      : actionButton(view, `/dashboard/account/sessions/${s.id}/revoke`, 'Revoke', 'danger')
  }</td></tr>`;

async function accountPage(
  deps: HttpDeps,
  view: DashView,
  extra: { notice?: string | undefined; error?: string | undefined; shown?: ShownSecret | undefined } = {},
): Promise<string> {
  if (view.session.userId === null) {
    return page(view, {
      title: 'Account',
      section: 'account',
      body: html`<div class="card"><p>You signed in with the shared <code>dashboard.password</code> or a one-time link from <code>mailsvc dashboard login</code>: this session belongs to no account, so it has no password, second factor or sessions to manage here.</p>
<p>Give each person their own account: <code>mailsvc users create --owner --email you@example.com</code>, then <code>mailsvc users invite EMAIL --role ROLE</code>. Once the first user exists, the shared password stops working.</p></div>`,
    });
  }
  const me = who(view);
  const [status, required, sessions] = await Promise.all([
    deps.services.twoFactor.status(me.userId),
    deps.services.twoFactor.required(view.workspace.id),
    deps.services.dashboardAuth.listSessions(me.userId, view.session.idHash),
  ]);
  const codeInput = (id: string) =>
    html`<label>Code from your app, or a recovery code<input id="${id}" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="64" required></label>`;
  const twoFactor = status.enabled
    ? html`<p id="two-factor-status">Two-factor sign-in is <strong>on</strong>. ${status.recoveryCodesLeft} of 10 recovery codes left.</p>
${postForm(view, '/dashboard/account/two-factor/recovery-codes', 'row', html`${codeInput('regen-code')}<button type="submit" class="secondary">New recovery codes</button>`)}
${required ? html`<p class="muted">${view.workspace.name} requires two-factor sign-in: it cannot be turned off.</p>` : html`${postForm(view, '/dashboard/account/two-factor/disable', 'row', html`${codeInput('disable-code')}<button type="submit" class="danger">Turn off</button>`)}`}`
    : html`<p id="two-factor-status">Two-factor sign-in is <strong>off</strong>: anyone with your password can sign in as you.</p><p><a class="button" href="/dashboard/account/two-factor">Set up two-factor sign-in</a></p>`;
  const requirement =
    view.role === 'owner'
      ? html`<div class="card"><h2>Require two-factor sign-in in ${view.workspace.name}</h2>${
          required
            ? html`<p>Required: members without it set it up before anything else.</p>${actionButton(view, '/dashboard/account/two-factor/required?off=1', 'Stop requiring it', 'secondary')}`
            : html`<p>Not required.${status.enabled ? '' : ' Turn it on for your own account first.'}</p>${status.enabled ? actionButton(view, '/dashboard/account/two-factor/required', 'Require it for everyone') : ''}`
        }</div>`
      : '';
  return page(view, {
    title: 'Account',
    section: 'account',
    notice: extra.notice,
    error: extra.error,
    body: html`${extra.shown ? recoveryCard(extra.shown) : ''}<div class="card"><h2>Two-factor sign-in</h2>${twoFactor}</div>${requirement}
<div class="card"><h2>Password</h2>${postForm(
      view,
      '/dashboard/account/password',
      'stack',
      html`<div class="row">
<label>Current password<input type="password" name="current_password" autocomplete="current-password" required></label>
<label>New password<input type="password" name="password" autocomplete="new-password" minlength="12" required></label>
<label>Again<input type="password" name="confirm" autocomplete="new-password" minlength="12" required></label></div><button type="submit">Change password</button>`,
    )}
<p class="muted">Changing it signs you out everywhere else.</p></div>
<div class="card"><h2>Sessions</h2>${table(
      ['Address', 'Browser', 'Signed in', 'Last seen', ''],
      sessions.map((s) => sessionRow(view, s)),
      'No sessions.',
    )}
${sessions.length > 1 ? actionButton(view, '/dashboard/account/sessions/revoke-others', 'Sign out everywhere else', 'danger') : ''}</div>`,
  });
}

async function enrolPage(deps: HttpDeps, view: DashView, error?: string): Promise<string> {
  const me = who(view);
  const enrolment = await deps.services.twoFactor.enrolment(me.userId);
  const required = await deps.services.twoFactor.required(view.workspace.id);
  // qrcode's own SVG document (no script, no links): sized here, placed inline (the CSP allows no inline styles).
  const qr = new SafeHtml(
    enrolment.qrSvg.replace(
      '<svg ',
      '<svg width="200" height="200" role="img" aria-label="QR code for your authenticator app" ',
    ),
  );
  return page(view, {
    title: 'Set up two-factor sign-in',
    section: 'account',
    error,
    notice: required ? `${view.workspace.name} requires two-factor sign-in: set it up to go on.` : undefined,
    body: html`<div class="card"><ol><li>Scan this code with an authenticator app (Google Authenticator, 1Password, Aegis, FreeOTP…).</li>
<li>Or type the key in by hand: <code id="totp-secret">${enrolment.secret}</code> (time-based, 6 digits, 30 seconds).</li>
<li>Enter the code the app shows to confirm.</li></ol><div class="qr">${qr}</div>
${postForm(view, '/dashboard/account/two-factor', 'row', html`<label>Code<input name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7" required autofocus></label><button type="submit">Confirm</button>`)}</div>`,
  });
}

const showCodes = (ctx: DashCtx, codes: string[], note: string) =>
  redirectWithSecret(ctx, '/dashboard/account', { title: RECOVERY_TITLE, note, secret: codes.join(' ') });

export function registerAccountRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/account', 'session', async (ctx) => {
    const shown = takeSecret(ctx);
    ctx.body = await accountPage(deps, ctx.state.dashboard, {
      notice: takeNotice(ctx),
      shown: shown?.title === RECOVERY_TITLE ? shown : undefined,
    });
  });

  router.get('/account/two-factor', 'session', async (ctx) => {
    const view = ctx.state.dashboard;
    if ((await deps.services.twoFactor.status(who(view).userId)).enabled) return ctx.redirect('/dashboard/account');
    ctx.body = await enrolPage(deps, view);
  });

  router.post('/account/two-factor', 'session', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    await formAction(
      ctx,
      async () => {
        const { recoveryCodes } = await deps.services.twoFactor.confirm(who(view), form.code ?? '');
        showCodes(
          ctx,
          recoveryCodes,
          'Two-factor sign-in is on. Keep these codes somewhere safe, apart from your phone: each signs you in once if you lose it. They are shown only this once.',
        );
      },
      (error) => enrolPage(deps, view, error),
    );
  });

  router.post('/account/two-factor/recovery-codes', 'session', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    await formAction(
      ctx,
      async () => {
        const { recoveryCodes } = await deps.services.twoFactor.regenerateRecoveryCodes(who(view), form.code ?? '');
        showCodes(
          ctx,
          recoveryCodes,
          'Your earlier recovery codes no longer work. Keep these somewhere safe: they are shown only this once.',
        );
      },
      (error) => accountPage(deps, view, { error }),
    );
  });

  router.post('/account/two-factor/disable', 'session', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    await formAction(
      ctx,
      async () => {
        await deps.services.twoFactor.disable(who(view), form.code ?? '');
        redirectWithNotice(ctx, '/dashboard/account', 'Two-factor sign-in is off; your recovery codes no longer work.');
      },
      (error) => accountPage(deps, view, { error }),
    );
  });

  router.post('/account/two-factor/required', 'manage', async (ctx) => {
    const view = ctx.state.dashboard;
    const on = ctx.query.off !== '1';
    await formAction(
      ctx,
      async () => {
        await deps.services.twoFactor.setRequired(who(view), on);
        redirectWithNotice(
          ctx,
          '/dashboard/account',
          on
            ? `${view.workspace.name} now requires two-factor sign-in.`
            : `${view.workspace.name} no longer requires two-factor sign-in.`,
        );
      },
      (error) => accountPage(deps, view, { error }),
    );
  });

  router.post('/account/password', 'session', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    await formAction(
      ctx,
      async () => {
        if ((form.password ?? '') !== (form.confirm ?? ''))
          throw new AppError('validation_error', 'The two new passwords differ.', { field: 'confirm' });
        const { ended } = await deps.services.dashboardAuth.changePassword(
          who(view),
          view.session.idHash,
          form.current_password ?? '',
          form.password ?? '',
        );
        redirectWithNotice(
          ctx,
          '/dashboard/account',
          `Your password is changed${ended > 0 ? `; ${ended} other session${ended === 1 ? '' : 's'} ended` : ''}.`,
        );
      },
      (error) => accountPage(deps, view, { error }),
    );
  });

  router.post('/account/sessions/revoke-others', 'session', async (ctx) => {
    const view = ctx.state.dashboard;
    const { ended } = await deps.services.dashboardAuth.endOtherSessions(who(view), view.session.idHash);
    redirectWithNotice(
      ctx,
      '/dashboard/account',
      `Signed out everywhere else (${ended} session${ended === 1 ? '' : 's'}).`,
    );
  });

  router.post('/account/sessions/:id/revoke', 'session', async (ctx) => {
    const view = ctx.state.dashboard;
    if (view.session.idHash.startsWith(ctx.params.id ?? ''))
      throw new AppError('validation_error', 'This is the session you are using: sign out instead.');
    await deps.services.dashboardAuth.revokeSession(who(view), ctx.params.id ?? '');
    redirectWithNotice(ctx, '/dashboard/account', 'The session is ended: that browser is signed out.');
  });
}

import { ROLE_PERMISSIONS, ROLES, type Role } from '../../../../services/users.js';
import type { HttpDeps } from '../../context.js';
import { formAction } from '../form.js';
import { html } from '../html.js';
import { badge, ifAllowed, page, postForm, secretCard, table, when, type DashView, type Kept } from '../layout.js';
import type { DashRoutes } from '../routes.js';
import { redirectWithNotice, redirectWithSecret, takeNotice, takeSecret, type ShownSecret } from '../session.js';

const WHAT: Record<string, string> = {
  read: 'see every page',
  secrets: 'see secrets (webhook signing secrets)',
  send: 'send and edit content (templates, contacts, broadcasts, suppressions, workflows)',
  manage: 'manage keys, domains, webhooks, receiving routes and the team',
};

/** The roles a person may hand out: only an owner makes owners. */
const grantable = (view: DashView): readonly Role[] =>
  view.role === 'owner' ? ROLES : ROLES.filter((r) => r !== 'owner');

const roleSelect = (view: DashView, name: string, selected: string) =>
  html`<select name="${name}" aria-label="Role">
    ${grantable(view).map((r) => html`<option value="${r}" ${r === selected ? html`selected` : ''}>${r}</option>`)}
  </select>`;

async function teamPage(
  deps: HttpDeps,
  view: DashView,
  extra: {
    notice?: string | undefined;
    error?: string;
    kept?: Kept;
    invited?: ShownSecret | undefined;
  } = {},
): Promise<string> {
  const kept = extra.kept ?? {};
  const members = await deps.services.users.list(view.workspace.id);
  // An admin cannot change an owner: no controls on owners' rows for them.
  const changeable = (role: Role) => view.role === 'owner' || role !== 'owner';
  const rows = members.map(
    (m) =>
      html`<tr>
        <td>${m.email}</td>
        <td>${badge(m.role)}</td>
        <td>${when(m.created_at)}</td>
        <td>
          ${changeable(m.role) ? postForm(view, '/dashboard/team/role', 'inline', html`<input type="hidden" name="email" value="${m.email}" />${roleSelect(view, 'role', m.role)}<button type="submit" class="secondary">Change role</button>`) : ''}
          ${changeable(m.role) ? postForm(view, '/dashboard/team/remove', 'inline', html`<input type="hidden" name="email" value="${m.email}" /><button type="submit" class="danger">Remove</button>`) : ''}
        </td>
      </tr>`,
  );
  const shared =
    view.session.userId === null
      ? html`<p class="notice">
          You are signed in with the shared <code>dashboard.password</code> or a
          CLI link: such sessions act as an owner.
        </p>`
      : '';
  return page(view, {
    title: 'Team',
    section: 'team',
    notice: extra.notice,
    error: extra.error,
    body: html`${shared}${extra.invited ? secretCard('invite-link', extra.invited) : ''}
      ${ifAllowed(
        view,
        '/dashboard/team/invite',
        html`<div class="card">
          <h2>Invite someone</h2>
          ${postForm(
            view,
            '/dashboard/team/invite',
            'row',
            html`<label
                >Email<input
                  name="email"
                  type="email"
                  required
                  maxlength="320"
                  value="${kept.email ?? ''}" /></label
              ><label
                >Role${roleSelect(view, 'role', kept.role ?? 'developer')}</label
              ><button type="submit">Invite</button>`,
          )}
          <p class="muted">
            A one-time link, valid for 7 days. Removing someone ends their
            sessions at once.
          </p>
        </div>`,
      )}
      ${table(['Email', 'Role', 'Member since', ''], rows, 'No users yet: the shared dashboard.password and `mailsvc dashboard login` links sign in.')}
      <h2>What each role may do</h2>
      ${table(
        ['Role', 'May'],
        ROLES.map(
          (r) =>
            html`<tr>
              <td>${r}</td>
              <td>${ROLE_PERMISSIONS[r].map((p) => WHAT[p]).join('; ')}</td>
            </tr>`,
        ),
        '',
      )}`,
  });
}

export function registerTeamRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/team', 'read', async (ctx) => {
    ctx.body = await teamPage(deps, ctx.state.dashboard, {
      notice: takeNotice(ctx),
      invited: takeSecret(ctx),
    });
  });

  router.post('/team/invite', 'manage', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    await formAction(
      ctx,
      async () => {
        const invite = await deps.services.users.invite({
          email: form.email ?? '',
          role: (form.role ?? '') as Role,
          workspaceId: view.workspace.id,
          by: view.role,
        });
        // The link is a credential until it is used: shown once, like a new key.
        redirectWithSecret(ctx, '/dashboard/team', {
          title: `Invitation for ${invite.email} (${invite.role})`,
          note: `It works once, until ${invite.expires_at}. Send it to them if it was not mailed.`,
          secret: invite.url,
        });
      },
      (error) =>
        teamPage(deps, view, {
          error,
          kept: { email: form.email ?? '', role: form.role ?? '' },
        }),
    );
  });

  router.post('/team/role', 'manage', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const changed = await deps.services.users.setRole({
      workspaceId: view.workspace.id,
      email: form.email ?? '',
      role: (form.role ?? '') as Role,
      by: view.role,
    });
    redirectWithNotice(ctx, '/dashboard/team', `${changed.email} is now ${changed.role}.`);
  });

  router.post('/team/remove', 'manage', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const removed = await deps.services.users.remove({
      workspaceId: view.workspace.id,
      email: form.email ?? '',
      by: view.role,
    });
    redirectWithNotice(ctx, '/dashboard/team', `${removed.email} is no longer in the team; their sessions have ended.`);
  });
}

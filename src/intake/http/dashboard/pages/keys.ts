import type { DashRoutes } from '../routes.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import {
  actionButton,
  badge,
  page,
  secretCard,
  table,
  when,
  type DashView,
  type Kept,
  ifAllowed,
  postForm,
} from '../layout.js';
import { formAction } from '../form.js';
import { redirectWithNotice, redirectWithSecret, takeNotice, takeSecret, type ShownSecret } from '../session.js';

const MAX_LISTED = 200;

async function keysPage(
  deps: HttpDeps,
  view: DashView,
  extra: { created?: ShownSecret | undefined; notice?: string | undefined; error?: string; kept?: Kept } = {},
): Promise<string> {
  const kept = extra.kept ?? {};
  const keys = await deps.services.credentials.list({
    workspaceId: view.workspace.id,
    oauth: false,
    limit: MAX_LISTED,
    offset: 0,
  });
  const domains = new Map((await deps.services.domains.list(view.workspace.id)).map((d) => [d.id, d.domain_name]));
  const created = extra.created ? secretCard('new-key', extra.created) : '';
  const rows = keys.map(
    (
      k,
    ) => html`<tr><td>${k.name}</td><td><code>${k.prefix}…</code></td><td>${k.kind === 'test' ? 'test' : 'live'}</td><td>${k.permission === 'sending_access' ? `sending only${k.domain_id ? ` (${domains.get(k.domain_id) ?? 'removed domain'})` : ''}` : 'full'}</td><td>${when(k.created_at)}</td><td>${when(k.last_used_at)}</td>
<td>${k.revoked_at ? badge('revoked') : actionButton(view, `/dashboard/keys/${k.id}/revoke`, 'Revoke', 'danger')}</td></tr>`,
  );
  return page(view, {
    title: 'API keys',
    section: 'keys',
    notice: extra.notice,
    error: extra.error,
    body: html`${created}${ifAllowed(
      view,
      '/dashboard/keys',
      html`<div class="card"><h2>Create a key</h2>${postForm(
        view,
        `/dashboard/keys`,
        'row',
        html`
<label>Name<input name="name" required maxlength="200" placeholder="production" value="${kept.name ?? ''}"></label>
<label class="check"><input type="checkbox" name="test" value="1" ${kept.test === '1' ? html`checked` : ''}> Test key (sk_test_: simulated delivery)</label>
<label class="check"><input type="checkbox" name="sending" value="1" ${kept.sending === '1' ? html`checked` : ''}> Sending access only</label><button type="submit">Create key</button>`,
      )}</div>`,
    )}
${table(['Name', 'Key', 'Kind', 'Access', 'Created', 'Last used', ''], rows, 'No keys yet.')}`,
  });
}

export function registerKeyRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/keys', 'read', async (ctx) => {
    ctx.body = await keysPage(deps, ctx.state.dashboard, { notice: takeNotice(ctx), created: takeSecret(ctx) });
  });

  router.post('/keys', 'manage', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    await formAction(
      ctx,
      async () => {
        const created = await deps.services.credentials.createKey({
          name: form.name ?? '',
          workspaceId: view.workspace.id,
          test: form.test === '1',
          permission: form.sending === '1' ? 'sending_access' : 'full_access',
        });
        redirectWithSecret(ctx, '/dashboard/keys', {
          title: `Key “${created.credential.name}” created`,
          note: 'Copy it now: it is shown only this once and cannot be seen again.',
          secret: created.secret,
        });
      },
      (error) =>
        keysPage(deps, view, {
          error,
          kept: { name: form.name ?? '', test: form.test ?? '', sending: form.sending ?? '' },
        }),
    );
  });

  router.post('/keys/:id/revoke', 'manage', async (ctx) => {
    const revoked = await deps.services.credentials.revoke(ctx.params.id!, ctx.state.dashboard.workspace.id);
    redirectWithNotice(ctx, '/dashboard/keys', `Key “${revoked.name}” (${revoked.prefix}…) is revoked.`);
  });
}

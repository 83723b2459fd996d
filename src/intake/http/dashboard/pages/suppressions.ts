import type { DashRoutes } from '../routes.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { page, table, when, ifAllowed, postForm } from '../layout.js';
import { redirectWithNotice, takeNotice } from '../session.js';

const PAGE = { limit: 200, offset: 0 };

export function registerSuppressionRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/suppressions', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const { items, total } = await deps.services.suppressions.list(view.workspace.id, PAGE);
    const rows = items.map(
      (
        s,
      ) => html`<tr><td>${s.email}</td><td>${s.reason}</td><td>${s.scope}</td><td class="wrap">${s.detail ?? ''}</td><td>${when(s.created_at)}</td>
<td>${postForm(view, `/dashboard/suppressions/remove`, 'inline', html`<input type="hidden" name="email" value="${s.email}"><button type="submit" class="secondary">Remove</button>`)}</td></tr>`,
    );
    ctx.body = page(view, {
      title: 'Suppressions',
      section: 'suppressions',
      notice: takeNotice(ctx),
      body: html`${ifAllowed(
        view,
        '/dashboard/suppressions',
        html`<div class="card"><h2>Suppress an address or domain</h2>${postForm(
          view,
          `/dashboard/suppressions`,
          'row',
          html`
<label>Address or @domain<input name="email" required placeholder="someone@example.com or @example.com"></label>
<label>Scope<select name="scope"><option value="all">all mail</option><option value="marketing">marketing only</option></select></label>
<button type="submit">Add</button>`,
        )}</div>`,
      )}
<p class="muted">${total} suppressed${total > items.length ? `; the newest ${items.length} are shown` : ''}.</p>
${table(['Address', 'Reason', 'Scope', 'Detail', 'Added', ''], rows, 'Nothing is suppressed.')}`,
    });
  });

  router.post('/suppressions', 'send', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const entry = (form.email ?? '').trim();
    const scope = form.scope === 'marketing' ? 'marketing' : 'all';
    const added = await deps.services.suppressions.add(
      view.workspace.id,
      entry.startsWith('@') ? { domain: entry.slice(1), scope } : { email: entry, scope },
    );
    redirectWithNotice(ctx, '/dashboard/suppressions', `${added.email} is suppressed.`);
  });

  router.post('/suppressions/remove', 'send', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const removed = await deps.services.suppressions.remove(view.workspace.id, form.email ?? '');
    redirectWithNotice(ctx, '/dashboard/suppressions', `${removed.email} is no longer suppressed.`);
  });
}

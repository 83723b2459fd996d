import type { DashRoutes } from '../routes.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { page, table, when } from '../layout.js';

/** Contact imports (API and CLI), newest first, with their counts and the rows they refused. */
export function registerImportRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/imports', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const { data } = await deps.services.contactImports.list(view.workspace.id, { limit: '100' });
    const rows = data.map((i) => {
      const c = i.counts;
      const problems =
        i.failure ??
        (i.errors.length
          ? i.errors
              .slice(0, 5)
              .map((e) => `line ${e.line}: ${e.reason}`)
              .join('; ') + (c.failed > 5 ? ` … ${c.failed - 5} more` : '')
          : '');
      return html`<tr><td>${i.file.name ?? i.id}</td><td>${i.status}</td><td>${c.total}</td><td>${c.created}</td><td>${c.updated}</td><td>${c.skipped}</td><td>${c.failed}</td><td class="wrap">${problems}</td><td>${when(i.created_at)}</td></tr>`;
    });
    ctx.body = page(view, {
      title: 'Contact imports',
      section: 'imports',
      body: html`<p class="muted">CSV files imported with <code>POST /v1/contacts/imports</code> (the SDK's <code>contacts.imports.create</code>) or <code>mailsvc contacts import FILE</code>; the newest 100.</p>
${table(['File', 'Status', 'Rows', 'Created', 'Updated', 'Skipped', 'Failed', 'Rows not imported', 'Started'], rows, 'No contacts have been imported.')}`,
    });
  });
}

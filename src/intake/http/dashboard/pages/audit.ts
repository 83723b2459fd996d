import type { AuditView } from '../../../../services/audit.js';
import { ACTOR_TYPES } from '../../../../store/audit-log.js';
import type { HttpDeps } from '../../context.js';
import { formAction } from '../form.js';
import { html } from '../html.js';
import { exactly, page, table, type DashView } from '../layout.js';
import type { DashRoutes } from '../routes.js';

const PAGE_SIZE = 50;
/** The filters of the page, as the query string carries them (the names GET /v1/audit-log takes). */
const FILTERS = ['actor_type', 'actor_id', 'action', 'object_type', 'since', 'until'] as const;

const detailText = (e: AuditView) =>
  e.detail
    ? Object.entries(e.detail)
        .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`)
        .join(' ')
    : '';

async function auditPage(
  deps: HttpDeps,
  view: DashView,
  query: Record<string, string>,
  error?: string,
): Promise<string> {
  const filters: Record<string, string> = {};
  for (const f of FILTERS) if (query[f]) filters[f] = query[f].trim();
  // The instance's own changes (IP pools) are shown to those who manage; the workspace's to all.
  const list = error
    ? { data: [], has_more: false }
    : await deps.services.audit.list(
        { workspaceId: view.workspace.id, instance: view.can('manage') },
        {
          ...filters,
          limit: String(PAGE_SIZE),
          ...(query.after ? { after: query.after } : {}),
        },
      );
  const members = new Map((await deps.services.users.list(view.workspace.id)).map((m) => [m.id, m.email]));
  const who = (e: AuditView) =>
    e.actor.type === 'user'
      ? (members.get(e.actor.id ?? '') ?? `user ${e.actor.id ?? ''}`)
      : e.actor.id
        ? `${e.actor.type} ${e.actor.id}`
        : e.actor.type;
  const rows = list.data.map(
    (e) =>
      html`<tr>
        <td>${exactly(e.created_at)}</td>
        <td>${who(e)}</td>
        <td>${e.client_address ?? ''}</td>
        <td><code>${e.action}</code></td>
        <td>${e.object_type}</td>
        <td><code>${e.object_id ?? ''}</code></td>
        <td class="wrap">${detailText(e)}</td>
      </tr>`,
  );
  const next =
    list.has_more && list.data.length > 0
      ? `/dashboard/audit?${new URLSearchParams({ ...filters, after: list.data.at(-1)!.id }).toString()}`
      : null;
  const input = (name: string, label: string, placeholder: string) =>
    html`<label
      >${label}<input
        name="${name}"
        value="${filters[name] ?? ''}"
        placeholder="${placeholder}"
        maxlength="200"
    /></label>`;
  return page(view, {
    title: 'Audit log',
    section: 'audit',
    error,
    body: html`<form
        class="row card"
        method="get"
        action="/dashboard/audit"
        role="search"
      >
        <label
          >Actor<select name="actor_type">
            <option value="">anyone</option>
            ${ACTOR_TYPES.map((t) => html`<option value="${t}" ${filters.actor_type === t ? html`selected` : ''}>${t}</option>`)}
          </select></label
        >
        ${input('actor_id', 'Actor id', 'key or user id')}${input('action', 'Action', 'domain. or api_key.created')}${input('object_type', 'Object type', 'webhook')}
        ${input('since', 'From', '2026-11-01')}${input('until', 'Until', '2026-12-01T00:00:00Z')}<button
          type="submit"
        >
          Filter
        </button>
      </form>
      ${table(['When (UTC)', 'Who', 'From', 'Action', 'Object', 'Id', 'Detail'], rows, 'No entries match.')}
      ${next ? html`<p><a href="${next}">Older entries</a></p>` : ''}`,
  });
}

export function registerAuditRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/audit', 'read', async (ctx) => {
    const query: Record<string, string> = {};
    for (const [k, v] of Object.entries(ctx.query)) if (typeof v === 'string') query[k] = v;
    // A bad filter comes back as the page with its reason, in a 400, not an error page.
    await formAction(
      ctx,
      async () => {
        ctx.body = await auditPage(deps, ctx.state.dashboard, query);
      },
      (error) => auditPage(deps, ctx.state.dashboard, query, error),
    );
  });
}

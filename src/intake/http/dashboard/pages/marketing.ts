import type Router from '@koa/router';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { badge, page, table, when } from '../layout.js';
import type { DashState } from '../session.js';

const PAGE = { limit: 100, offset: 0 };
const SUBSCRIBER_STATUSES = ['subscribed', 'unsubscribed'] as const;

export function registerMarketingRoutes(router: Router<DashState>, deps: HttpDeps): void {
  router.get('/marketing', async (ctx) => {
    const view = ctx.state.dashboard;
    const workspaceId = view.workspace.id;
    const [subscribers, counts, audiences, campaigns] = await Promise.all([
      deps.services.subscribers.list({ workspaceId }, { limit: 50, offset: 0 }),
      Promise.all(SUBSCRIBER_STATUSES.map(async (status) => [status, (await deps.services.subscribers.list({ workspaceId, status }, { limit: 1, offset: 0 })).total] as const)),
      deps.services.audiences.list(workspaceId, PAGE),
      deps.services.campaigns.list(workspaceId, PAGE),
    ]);
    const subscriberRows = subscribers.items.map(
      (s) => html`<tr><td>${s.email}</td><td>${[s.first_name, s.last_name].filter(Boolean).join(' ')}</td><td>${badge(s.status)}</td><td>${s.tags.join(', ')}</td><td>${when(s.created_at)}</td></tr>`,
    );
    const audienceRows = audiences.items.map((a) => html`<tr><td>${a.name}</td><td>${a.member_count}</td><td>${when(a.created_at)}</td></tr>`);
    const campaignRows = campaigns.items.map(
      (c) => html`<tr><td>${c.name}</td><td>${c.subject}</td><td>${badge(c.status)}</td><td>${c.recipients}</td>
<td>${c.counts ? Object.entries(c.counts).map(([k, v]) => `${k} ${v}`).join(', ') : ''}</td><td>${when(c.sent_at ?? c.created_at)}</td></tr>`,
    );
    ctx.body = page(view, {
      title: 'Subscribers & campaigns',
      section: 'marketing',
      body: html`<div class="card"><dl class="facts"><dt>Subscribers</dt><dd>${subscribers.total}</dd>${counts.map(([status, n]) => html`<dt>${status[0]!.toUpperCase() + status.slice(1)}</dt><dd>${n}</dd>`)}
<dt>Audiences</dt><dd>${audiences.total}</dd><dt>Campaigns</dt><dd>${campaigns.total}</dd></dl></div>
<h2>Campaigns</h2>${table(['Name', 'Subject', 'Status', 'Recipients', 'Counts', 'When'], campaignRows, 'No campaigns. Create them with POST /v1/campaigns.')}
<h2>Audiences</h2>${table(['Name', 'Members', 'Created'], audienceRows, 'No audiences.')}
<h2>Latest subscribers</h2>${table(['Email', 'Name', 'Status', 'Tags', 'Added'], subscriberRows, 'No subscribers. Add them with POST /v1/subscribers.')}`,
    });
  });
}

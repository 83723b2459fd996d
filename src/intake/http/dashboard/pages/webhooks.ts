import type Router from '@koa/router';
import type { AttemptView } from '../../../../services/webhooks.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { actionButton, badge, copyField, csrfField, page, table, when, type DashView } from '../layout.js';
import type { DashState } from '../session.js';
import { redirectWithNotice, takeNotice } from '../session.js';

const PAGE = { limit: 100, offset: 0 };

const attemptRow = (a: AttemptView) =>
  html`<tr class="attempt"><td>${a.attempt}</td><td>${when(a.started_at)}</td><td>${badge(a.outcome)}</td><td>${a.status_code ?? ''}</td><td>${a.duration_ms} ms</td>
<td class="wrap">${a.error ?? ''}${a.response ? html`<pre>${a.response.slice(0, 500)}</pre>` : ''}</td></tr>`;

async function endpointPage(deps: HttpDeps, view: DashView, id: string, extra: { secret?: string; notice?: string | undefined } = {}): Promise<string> {
  const [hook, deliveries] = await Promise.all([
    deps.services.webhooks.get(view.workspace.id, id),
    deps.services.webhooks.listDeliveries(view.workspace.id, id, {}, PAGE),
  ]);
  // Each delivery, then every attempt it took: a 500 followed by a successful retry stays visible.
  const rows = deliveries.items.map(
    (d) => html`<tr class="delivery"><td>${when(d.created_at)}</td><td>${d.event_type}</td><td>${badge(d.status)}</td><td>${d.attempt_count}</td>
<td>${d.next_attempt_at ? when(d.next_attempt_at) : ''}</td>
<td>${actionButton(view, `/dashboard/webhooks/${hook.id}/deliveries/${d.id}/replay`, 'Replay')}</td></tr>
${d.attempts.length > 0 ? html`<tr class="attempts"><td></td><td colspan="5">${table(['Attempt', 'Started', 'Outcome', 'HTTP', 'Duration', 'Response or error'], d.attempts.map(attemptRow), '')}</td></tr>` : ''}`,
  );
  const secret = extra.secret
    ? html`<div class="card"><h2>New signing secret</h2><p>Copy it now: it is shown only this once. The previous secret keeps working for a while so receivers can switch.</p>${copyField('new-secret', extra.secret)}</div>`
    : '';
  return page(view, {
    title: hook.url,
    section: 'webhooks',
    notice: extra.notice,
    body: html`${secret}<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(hook.status)}${hook.disabled_reason ? ` (${hook.disabled_reason})` : ''}</dd>
<dt>Events</dt><dd>${hook.events.join(', ')}</dd><dt>API</dt><dd>${hook.surface}</dd><dt>Secret</dt><dd><code>${hook.secret}</code></dd>
<dt>Last success</dt><dd>${when(hook.last_success_at)}</dd><dt>Last failure</dt><dd>${when(hook.last_failure_at)}</dd></dl>
<p>${actionButton(view, `/dashboard/webhooks/${hook.id}/rotate`, 'Rotate secret')}</p></div>
<h2>Deliveries</h2>${table(['Created', 'Event', 'Status', 'Attempts', 'Next attempt', ''], rows, 'No deliveries yet.')}`,
  });
}

export function registerWebhookRoutes(router: Router<DashState>, deps: HttpDeps): void {
  router.get('/webhooks', async (ctx) => {
    const view = ctx.state.dashboard;
    const { items } = await deps.services.webhooks.list(view.workspace.id, PAGE);
    const rows = items.map(
      (w) => html`<tr><td class="wrap"><a href="/dashboard/webhooks/${w.id}">${w.url}</a></td><td>${w.events.join(', ')}</td><td>${badge(w.status)}</td><td>${when(w.last_success_at)}</td><td>${when(w.last_failure_at)}</td></tr>`,
    );
    ctx.body = page(view, {
      title: 'Webhooks',
      section: 'webhooks',
      body: html`<div class="card"><h2>Add an endpoint</h2><form class="row" method="post" action="/dashboard/webhooks">${csrfField(view.csrf)}
<label>URL<input name="url" type="url" required placeholder="https://example.com/hooks/mail"></label>
<label>Events<input name="events" value="*" required title="Event types separated by commas, or * for all"></label><button type="submit">Add endpoint</button></form></div>
${table(['URL', 'Events', 'Status', 'Last success', 'Last failure'], rows, 'No webhook endpoints.')}`,
    });
  });

  // Shows the new endpoint's secret once, like a new API key.
  router.post('/webhooks', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const events = (form.events ?? '').split(',').map((e) => e.trim()).filter(Boolean);
    const created = await deps.services.webhooks.register(view.workspace.id, 'v1', { url: form.url ?? '', events });
    ctx.body = await endpointPage(deps, view, created.webhook.id, { secret: created.secret });
  });

  router.get('/webhooks/:id', async (ctx) => {
    const view = ctx.state.dashboard;
    ctx.body = await endpointPage(deps, view, ctx.params.id!, { notice: takeNotice(ctx) });
  });

  router.post('/webhooks/:id/rotate', async (ctx) => {
    const view = ctx.state.dashboard;
    const rotated = await deps.services.webhooks.rotateSecret(view.workspace.id, ctx.params.id!);
    ctx.body = await endpointPage(deps, view, rotated.webhook.id, { secret: rotated.secret });
  });

  router.post('/webhooks/:id/deliveries/:deliveryId/replay', async (ctx) => {
    const view = ctx.state.dashboard;
    await deps.services.webhooks.replay(view.workspace.id, ctx.params.id!, ctx.params.deliveryId!);
    redirectWithNotice(ctx, `/dashboard/webhooks/${ctx.params.id!}`, 'Delivery queued again.');
  });
}

import type { DashRoutes } from '../routes.js';
import { subscribedTypes, type AttemptView, type WebhookView } from '../../../../services/webhooks/webhooks.js';
import type { HttpDeps } from '../../context.js';
import { formAction } from '../form.js';
import { html } from '../html.js';
import {
  actionButton,
  badge,
  jsonBlock,
  page,
  secretCard,
  table,
  when,
  type DashView,
  type Kept,
  ifAllowed,
  postForm,
} from '../layout.js';
import { redirectWithNotice, redirectWithSecret, takeNotice, takeSecret, type ShownSecret } from '../session.js';

const PAGE = { limit: 100, offset: 0 };
const str = (value: unknown): string => (typeof value === 'string' ? value : '');

const attemptRow = (a: AttemptView) =>
  html`<tr class="attempt"><td>${a.attempt}</td><td>${when(a.started_at)}</td><td>${badge(a.outcome)}</td><td>${a.status_code ?? ''}</td><td>${a.duration_ms} ms</td>
<td class="wrap">${a.error ?? ''}${a.response ? html`<pre>${a.response.slice(0, 500)}</pre>` : ''}</td></tr>`;

const attemptsTable = (attempts: AttemptView[]) =>
  table(['Attempt', 'Started', 'Outcome', 'HTTP', 'Duration', 'Response or error'], attempts.map(attemptRow), '');

async function endpointPage(
  deps: HttpDeps,
  view: DashView,
  id: string,
  extra: { secret?: ShownSecret | undefined; notice?: string | undefined } = {},
): Promise<string> {
  const [hook, deliveries] = await Promise.all([
    deps.services.webhooks.get(view.workspace.id, id),
    deps.services.webhooks.listDeliveries(view.workspace.id, id, {}, PAGE),
  ]);
  // Each delivery, then every attempt it took: a 500 followed by a successful retry stays visible.
  const rows = deliveries.items.map(
    (
      d,
    ) => html`<tr class="delivery"><td>${when(d.created_at)}</td><td><a href="/dashboard/webhooks/${hook.id}/deliveries/${d.id}">${d.event_type}</a></td><td>${badge(d.status)}</td><td>${d.attempt_count}</td>
<td>${d.next_attempt_at ? when(d.next_attempt_at) : ''}</td>
<td>${actionButton(view, `/dashboard/webhooks/${hook.id}/deliveries/${d.id}/replay`, 'Replay')}</td></tr>
${d.attempts.length > 0 ? html`<tr class="attempts"><td></td><td colspan="5">${attemptsTable(d.attempts)}</td></tr>` : ''}`,
  );
  const types = subscribedTypes(hook.events);
  const enabled = hook.status === 'enabled';
  return page(view, {
    title: hook.url,
    section: 'webhooks',
    notice: extra.notice,
    body: html`${extra.secret ? secretCard('new-secret', extra.secret) : ''}<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(hook.status)}${hook.disabled_reason ? ` (${hook.disabled_reason})` : ''}</dd>
<dt>Events</dt><dd>${hook.events.join(', ')}</dd><dt>API</dt><dd>${hook.surface}</dd>${view.can('secrets') ? html`<dt>Secret</dt><dd><code>${hook.secret}</code>${hook.previous_secret_expires_at ? html` <span class="muted">(the previous one also signs until ${when(hook.previous_secret_expires_at)})</span>` : ''}</dd>` : ''}
<dt>Last success</dt><dd>${when(hook.last_success_at)}</dd><dt>Last failure</dt><dd>${when(hook.last_failure_at)}</dd><dt>Id</dt><dd><code>${hook.id}</code></dd></dl>
<div class="actions">${enabled ? actionButton(view, `/dashboard/webhooks/${hook.id}/disable`, 'Disable') : actionButton(view, `/dashboard/webhooks/${hook.id}/enable`, 'Enable', '')}
${actionButton(view, `/dashboard/webhooks/${hook.id}/rotate`, 'Rotate secret')}${actionButton(view, `/dashboard/webhooks/${hook.id}/delete`, 'Delete', 'danger')}</div></div>
${
  enabled
    ? html`${postForm(
        view,
        `/dashboard/webhooks/${hook.id}/test`,
        'row card',
        html`<label>Send a test event<select name="type">${types.map((t) => html`<option>${t}</option>`)}</select></label>
<button type="submit">Send test event</button><p class="muted">Sample data (an email to delivered@resend.dev with the subject “Test event from the mailsvc dashboard” and no email id), signed like every delivery, to this endpoint only.</p>`,
      )}`
    : ''
}
<h2>Deliveries</h2>${table(['Created', 'Event (payload)', 'Status', 'Attempts', 'Next attempt', ''], rows, 'No deliveries yet: send a test event.')}`,
  });
}

const addForm = (view: DashView, kept: Kept = {}) =>
  html`${ifAllowed(
    view,
    '/dashboard/webhooks',
    html`<div class="card"><h2>Add an endpoint</h2>${postForm(
      view,
      `/dashboard/webhooks`,
      'row',
      html`
<label>URL<input name="url" type="url" required maxlength="2048" value="${kept.url ?? ''}" placeholder="https://example.com/hooks/mail"></label>
<label>Events<input name="events" value="${kept.events ?? '*'}" required title="Event types separated by commas, or * for all"></label><button type="submit">Add endpoint</button>`,
    )}
<p class="muted">An HTTPS address on the internet. For an endpoint on this machine or a private network (while testing), the server must run with <code>webhooks.allowPrivateNetworks</code> (<code>MAILSVC_WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true</code>).</p></div>`,
  )}`;

const NEW_SECRET = "Copy it now: it is shown only this once. Receivers verify each delivery's signature with it.";
const ROTATED_SECRET =
  'Copy it now: it is shown only this once. The previous secret keeps signing for 24 hours, so receivers can switch.';

export function registerWebhookRoutes(router: DashRoutes, deps: HttpDeps): void {
  const listPage = async (view: DashView, extra: { error?: string; kept?: Kept; notice?: string | undefined } = {}) => {
    const { items } = await deps.services.webhooks.list(view.workspace.id, PAGE);
    const rows = items.map(
      (w: WebhookView) =>
        html`<tr><td class="wrap"><a href="/dashboard/webhooks/${w.id}">${w.url}</a></td><td>${w.events.join(', ')}</td><td>${badge(w.status)}</td><td>${when(w.last_success_at)}</td><td>${when(w.last_failure_at)}</td></tr>`,
    );
    return page(view, {
      title: 'Webhooks',
      section: 'webhooks',
      notice: extra.notice,
      error: extra.error,
      body: html`${addForm(view, extra.kept)}${table(['URL', 'Events', 'Status', 'Last success', 'Last failure'], rows, 'No webhook endpoints.')}`,
    });
  };

  router.get('/webhooks', 'read', async (ctx) => {
    ctx.body = await listPage(ctx.state.dashboard, { notice: takeNotice(ctx) });
  });

  router.post('/webhooks', 'manage', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const kept = { url: str(form.url), events: str(form.events) };
    await formAction(
      ctx,
      async () => {
        const events = kept.events
          .split(',')
          .map((e) => e.trim())
          .filter(Boolean);
        const created = await deps.services.webhooks.register(view.workspace.id, 'v1', { url: kept.url, events });
        redirectWithSecret(ctx, `/dashboard/webhooks/${created.webhook.id}`, {
          title: 'Signing secret',
          note: NEW_SECRET,
          secret: created.secret,
        });
      },
      (error) => listPage(view, { error, kept }),
    );
  });

  router.get('/webhooks/:id', 'read', async (ctx) => {
    ctx.body = await endpointPage(deps, ctx.state.dashboard, ctx.params.id!, {
      notice: takeNotice(ctx),
      secret: takeSecret(ctx),
    });
  });

  router.post('/webhooks/:id/rotate', 'manage', async (ctx) => {
    const rotated = await deps.services.webhooks.rotateSecret(ctx.state.dashboard.workspace.id, ctx.params.id!);
    redirectWithSecret(ctx, `/dashboard/webhooks/${rotated.webhook.id}`, {
      title: 'New signing secret',
      note: ROTATED_SECRET,
      secret: rotated.secret,
    });
  });

  router.post('/webhooks/:id/test', 'manage', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const delivery = await deps.services.webhooks.sendTest(view.workspace.id, ctx.params.id!, str(form.type));
    redirectWithNotice(
      ctx,
      `/dashboard/webhooks/${ctx.params.id!}`,
      `Test event ${delivery.event_type} sent: its delivery shows below once attempted.`,
    );
  });

  for (const status of ['enabled', 'disabled'] as const) {
    router.post(`/webhooks/:id/${status === 'enabled' ? 'enable' : 'disable'}`, 'manage', async (ctx) => {
      const hook = await deps.services.webhooks.update(ctx.state.dashboard.workspace.id, ctx.params.id!, { status });
      redirectWithNotice(
        ctx,
        `/dashboard/webhooks/${hook.id}`,
        status === 'enabled'
          ? 'The endpoint is enabled: new events are delivered to it.'
          : 'The endpoint is disabled: nothing is delivered to it until it is enabled again.',
      );
    });
  }

  router.post('/webhooks/:id/delete', 'manage', async (ctx) => {
    const view = ctx.state.dashboard;
    const hook = await deps.services.webhooks.get(view.workspace.id, ctx.params.id!);
    await deps.services.webhooks.remove(view.workspace.id, hook.id);
    redirectWithNotice(ctx, '/dashboard/webhooks', `The endpoint ${hook.url} is deleted.`);
  });

  router.get('/webhooks/:id/deliveries/:deliveryId', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const hook = await deps.services.webhooks.get(view.workspace.id, ctx.params.id!);
    const [{ delivery, payload }, withAttempts] = await Promise.all([
      deps.services.webhooks.deliveryPayload(view.workspace.id, hook.id, ctx.params.deliveryId!),
      deps.services.webhooks.getDelivery(view.workspace.id, hook.id, ctx.params.deliveryId!),
    ]);
    ctx.body = page(view, {
      title: `${delivery.event_type} to ${hook.url}`,
      section: 'webhooks',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Endpoint</dt><dd><a href="/dashboard/webhooks/${hook.id}">${hook.url}</a></dd><dt>Status</dt><dd>${badge(delivery.status)}</dd>
<dt>Attempts</dt><dd>${delivery.attempt_count}</dd><dt>Next attempt</dt><dd>${when(delivery.next_attempt_at)}</dd><dt>Delivery id</dt><dd><code>${delivery.id}</code> <span class="muted">(the webhook-id header)</span></dd>
<dt>Event id</dt><dd><code>${delivery.event_id}</code></dd></dl><div class="actions">${actionButton(view, `/dashboard/webhooks/${hook.id}/deliveries/${delivery.id}/replay`, 'Replay')}</div></div>
<h2>Payload</h2>${payload ? html`<p class="muted">The body of each attempt, as signed.</p>${jsonBlock(payload)}` : html`<p class="muted">The event is past retention: its payload is gone.</p>`}
<h2>Attempts</h2>${withAttempts.attempts.length > 0 ? attemptsTable(withAttempts.attempts) : html`<p class="muted">Not attempted yet.</p>`}`,
    });
  });

  router.post('/webhooks/:id/deliveries/:deliveryId/replay', 'manage', async (ctx) => {
    const view = ctx.state.dashboard;
    await deps.services.webhooks.replay(view.workspace.id, ctx.params.id!, ctx.params.deliveryId!);
    redirectWithNotice(ctx, `/dashboard/webhooks/${ctx.params.id!}`, 'Delivery queued again.');
  });
}

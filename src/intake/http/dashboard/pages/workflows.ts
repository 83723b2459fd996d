import type { DashRoutes } from '../routes.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import type { RunSummary, WorkflowSummary } from '../../../../services/workflows/workflow-views.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { actionButton, badge, page, table, when } from '../layout.js';
import { redirectWithNotice, takeNotice } from '../session.js';

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const json = (value: unknown) => (value === null || value === undefined ? '' : JSON.stringify(value));

/** Workflows and their runs: what ran for whom, where each run is, and buttons to stop them. */
export function registerWorkflowRoutes(router: DashRoutes, deps: HttpDeps): void {
  const service = deps.services.workflows;
  const runLink = (workflowId: string, r: RunSummary) =>
    html`<a href="/dashboard/workflows/${workflowId}/runs/${r.id}">${r.email}</a>`;

  router.get('/workflows', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const { items, more } = await service.list(
      view.workspace.id,
      parsePage({ limit: '100', after: str(ctx.query.after) }, 'keyset'),
    );
    const rows = items.map(
      (
        w,
      ) => html`<tr><td><a href="/dashboard/workflows/${w.id}">${w.name}</a></td><td>${badge(w.status)}</td><td><code>${w.trigger_event}</code></td>
<td>${w.runs.running}</td><td>${w.runs.completed}</td><td>${w.runs.failed}</td><td>${when(w.updated_at)}</td></tr>`,
    );
    const next = more
      ? html`<p><a href="/dashboard/workflows?${new URLSearchParams({ after: items[items.length - 1]!.id }).toString()}">Older workflows →</a></p>`
      : '';
    ctx.body = page(view, {
      title: 'Workflows',
      section: 'workflows',
      notice: takeNotice(ctx),
      body: html`<p class="muted">A workflow starts a run for a contact when its trigger event happens: a custom event (POST /v1/events/send) or a platform one (subscriber.created, email.clicked, …). Create them with POST /v1/automations or <code>mailsvc workflows create</code>.</p>
${table(['Name', 'Status', 'Trigger', 'Running', 'Completed', 'Failed', 'Updated'], rows, 'No workflows yet.')}${next}`,
    });
  });

  router.get('/workflows/:id', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const w = await service.get(view.workspace.id, ctx.params.id!);
    const status = str(ctx.query.status);
    const runs = await service.runs(
      view.workspace.id,
      w.id,
      parsePage({ limit: '50', after: str(ctx.query.after) }, 'keyset'),
      status || undefined,
    );
    const stepRows = w.steps.map((s) => {
      const out = w.connections
        .filter((c) => c.from === s.key)
        .map((c) => (c.type === 'default' ? c.to : `${c.type} → ${c.to}`));
      return html`<tr><td><code>${s.key}</code></td><td>${s.type}</td><td class="wrap"><code>${json(s.config)}</code></td><td>${out.join(', ')}</td></tr>`;
    });
    const runRows = runs.items.map(
      (
        r,
      ) => html`<tr><td>${runLink(w.id, r)}</td><td>${badge(r.status)}</td><td>${r.current_step ?? ''}</td><td>${when(r.next_at)}</td><td>${when(r.started_at)}</td><td>${when(r.completed_at)}</td>
<td>${r.status === 'running' ? actionButton(view, `/dashboard/workflows/${w.id}/runs/${r.id}/cancel`, 'Cancel') : ''}</td></tr>`,
    );
    const toggle =
      w.status === 'enabled'
        ? actionButton(view, `/dashboard/workflows/${w.id}/disable`, 'Disable (runs go on)')
        : actionButton(view, `/dashboard/workflows/${w.id}/enable`, 'Enable', '');
    const filters = ['', 'running', 'completed', 'failed', 'cancelled'].map((s) =>
      s === status
        ? html`<strong>${s || 'all'}</strong>`
        : html`<a href="/dashboard/workflows/${w.id}${s ? `?status=${s}` : ''}">${s || 'all'}</a>`,
    );
    const next = runs.more
      ? html`<p><a href="/dashboard/workflows/${w.id}?${new URLSearchParams({ ...(status ? { status } : {}), after: runs.items[runs.items.length - 1]!.id }).toString()}">Older runs →</a></p>`
      : '';
    ctx.body = page(view, {
      title: w.name,
      section: 'workflows',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(w.status)}</dd><dt>Trigger</dt><dd><code>${w.trigger_event}</code></dd>
<dt>Re-entry</dt><dd>${w.allow_reentry ? 'allowed' : 'one run per contact at a time'}</dd>
<dt>Runs</dt><dd>${Object.entries(w.runs)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ')}</dd><dt>Id</dt><dd><code>${w.id}</code></dd></dl>
<p>${toggle} ${actionButton(view, `/dashboard/workflows/${w.id}/stop`, 'Stop: disable and cancel every run', 'danger')}</p></div>
<h2>Steps</h2>${table(['Key', 'Type', 'Config', 'Then'], stepRows, 'No steps.')}
<h2>Runs</h2><p>${filters.flatMap((f, i) => (i === 0 ? [f] : [html` · `, f]))}</p>${table(['Contact', 'Status', 'At step', 'Continues', 'Started', 'Ended', ''], runRows, 'No runs.')}${next}`,
    });
  });

  router.get('/workflows/:id/runs/:runId', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const w = await service.get(view.workspace.id, ctx.params.id!);
    const run = await service.run(view.workspace.id, w.id, ctx.params.runId!);
    const rows = run.steps.map(
      (
        s,
      ) => html`<tr><td><code>${s.key}</code></td><td>${s.type}</td><td>${badge(s.status)}</td><td>${when(s.started_at)}</td><td>${when(s.completed_at)}</td>
<td class="wrap"><code>${json(s.output)}</code></td><td class="wrap">${s.error ? str(s.error.message) : ''}</td></tr>`,
    );
    ctx.body = page(view, {
      title: `Run for ${run.email}`,
      section: 'workflows',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Workflow</dt><dd><a href="/dashboard/workflows/${w.id}">${w.name}</a></dd><dt>Status</dt><dd>${badge(run.status)}</dd>
<dt>Contact</dt><dd>${run.email}</dd><dt>Trigger</dt><dd><code>${run.trigger_event}</code></dd><dt>Started</dt><dd>${when(run.started_at)}</dd>
<dt>Ended</dt><dd>${when(run.completed_at)}</dd>${run.error ? html`<dt>Error</dt><dd>${run.error}</dd>` : ''}${run.test ? html`<dt>Mode</dt><dd>test (simulated sends)</dd>` : ''}
<dt>Id</dt><dd><code>${run.id}</code></dd></dl>${run.status === 'running' ? actionButton(view, `/dashboard/workflows/${w.id}/runs/${run.id}/cancel`, 'Cancel this run', 'danger') : ''}</div>
<h2>Steps</h2>${table(['Step', 'Type', 'Status', 'Started', 'Ended', 'Output', 'Error'], rows, 'No steps yet.')}`,
    });
  });

  const summary = (w: Pick<WorkflowSummary, 'name' | 'status'>) => `${w.name} is ${w.status}.`;
  router.post('/workflows/:id/enable', 'send', async (ctx) => {
    const w = await service.update(ctx.state.dashboard.workspace.id, ctx.params.id!, { status: 'enabled' });
    redirectWithNotice(ctx, `/dashboard/workflows/${w.id}`, summary(w));
  });
  router.post('/workflows/:id/disable', 'send', async (ctx) => {
    const w = await service.update(ctx.state.dashboard.workspace.id, ctx.params.id!, { status: 'disabled' });
    redirectWithNotice(ctx, `/dashboard/workflows/${w.id}`, `${summary(w)} Runs in progress go on.`);
  });
  router.post('/workflows/:id/stop', 'send', async (ctx) => {
    const { workflow, cancelled } = await service.stop(ctx.state.dashboard.workspace.id, ctx.params.id!);
    redirectWithNotice(
      ctx,
      `/dashboard/workflows/${workflow.id}`,
      `${summary(workflow)} ${cancelled} run(s) cancelled.`,
    );
  });
  router.post('/workflows/:id/runs/:runId/cancel', 'send', async (ctx) => {
    const run = await service.cancelRun(ctx.state.dashboard.workspace.id, ctx.params.id!, ctx.params.runId!);
    redirectWithNotice(
      ctx,
      `/dashboard/workflows/${run.automation_id}/runs/${run.id}`,
      `The run for ${run.email} is ${run.status}.`,
    );
  });
}

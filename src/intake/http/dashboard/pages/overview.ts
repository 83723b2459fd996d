import type Router from '@koa/router';
import type { DomainChecks } from '../../../../services/deliverability/domain-checks.js';
import type { HttpDeps } from '../../context.js';
import { lineChart, ratioBars, type Series } from '../charts.js';
import { html } from '../html.js';
import { actionButton, badge, page, table } from '../layout.js';
import type { DashState } from '../session.js';
import { redirectWithNotice, takeNotice } from '../session.js';

const SERIES = [
  ['sent', 'sent', 's-sent'],
  ['delivered', 'delivered', 's-delivered'],
  ['delivery_delayed', 'deferred', 's-deferred'],
  ['bounced', 'bounced', 's-bounced'],
  ['complained', 'complained', 's-complained'],
  ['opened', 'opened', 's-opened'],
  ['clicked', 'clicked', 's-clicked'],
] as const;

const CHECKS = ['dkim', 'spf', 'dmarc', 'return_path_mx', 'mta_sts', 'tls_rpt'] as const;
const CHECK_LABELS: Record<(typeof CHECKS)[number], string> = { dkim: 'DKIM', spf: 'SPF', dmarc: 'DMARC', return_path_mx: 'Bounce MX', mta_sts: 'MTA-STS', tls_rpt: 'TLS-RPT' };

const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;

/** The checks of a domain as badges, one per check, in the status vocabulary. */
export const checkBadges = (checks: DomainChecks | null) =>
  checks
    ? html`<span class="checks">${CHECKS.flatMap((k) => (checks[k] ? [html`<span class="check" title="${checks[k]!.message}">${CHECK_LABELS[k]} ${badge(checks[k]!.status)}</span>`] : []))}</span>`
    : html`<span class="muted">not checked yet</span>`;

export function registerOverviewRoutes(router: Router<DashState>, deps: HttpDeps): void {
  const { services } = deps;

  router.get('/overview', async (ctx) => {
    const view = ctx.state.dashboard;
    const ws = view.workspace.id;
    const [hourly, daily, destinations, queue, domains, reputation] = await Promise.all([
      services.emailMetrics.series(ws, 'hour', 48),
      services.emailMetrics.series(ws, 'day', 30),
      services.emailMetrics.destinations(ws, 7),
      services.emailMetrics.queueDepth(ws),
      services.domains.list(ws),
      services.reputation.list(ws),
    ]);
    const toSeries = (buckets: typeof hourly): Series[] => SERIES.map(([metric, name, cls]) => ({ name, cls, values: buckets.map((b) => b.counts[metric]) }));
    const hourLabel = (ms: number) => new Date(ms).toISOString().slice(11, 16);
    const dayLabel = (ms: number) => new Date(ms).toISOString().slice(5, 10);
    const classes = Object.entries(destinations) as Array<[string, (typeof destinations)['gmail']]>;
    const attempted = (d: (typeof destinations)['gmail']) => d.delivered + d.bounced + d.failed;
    const reputationOf = new Map(reputation.map((r) => [r.domain_id, r]));
    const domainRows = domains.map((d) => {
      const r = reputationOf.get(d.id);
      return html`<tr><td><a href="/dashboard/domains/${d.id}">${d.domain_name}</a><br>${badge(d.status)}</td><td>${checkBadges(d.checks)}</td>
<td>${badge(!r || r.state === 'sending' ? 'ok' : r.state)}${r && r.held > 0 ? html`<br><span class="muted">${r.held} held</span>` : ''}</td><td>${r ? `${r.bounce.rate}%` : '—'}</td><td>${r ? `${r.complaint.rate}%` : '—'}</td>
<td>${r?.state === 'paused' ? actionButton(view, `/dashboard/domains/${d.id}/resume`, 'Resume', '') : ''}</td></tr>`;
    });
    ctx.body = page(view, {
      title: 'Overview',
      section: 'overview',
      notice: takeNotice(ctx),
      body: html`<p class="muted">Live mail only (test keys are left out); the figures are brought up to date every minute, in UTC.</p>
<div class="tiles" id="queue">${(['queued', 'sending', 'deferred', 'held'] as const).map((s) => html`<div class="tile"><span class="muted">${s}</span><b>${queue[s]}</b></div>`)}</div>
<h2>Last 48 hours</h2>${lineChart('Mail per hour over the last 48 hours', hourly.map((b) => hourLabel(b.start)), toSeries(hourly))}
<h2>Last 30 days</h2>${lineChart('Mail per day over the last 30 days', daily.map((b) => dayLabel(b.start)), toSeries(daily))}
<h2>By destination, last 7 days</h2>
${ratioBars('Delivery rate per mailbox provider', classes.map(([name, d]) => ({ label: name, value: d.delivery_rate, cls: 's-delivered', text: attempted(d) ? `${pct(d.delivery_rate)} of ${attempted(d)}` : 'no mail' })))}
${ratioBars('Bounce rate per mailbox provider', classes.map(([name, d]) => ({ label: name, value: d.bounce_rate, cls: 's-bounced', text: attempted(d) ? `${pct(d.bounce_rate)} bounced` : 'no mail' })))}
<h2>Sending domains</h2>
${table(['Domain', 'Checks', 'Marketing', 'Bounces', 'Complaints', ''], domainRows, 'No domains yet: add the domain you send from under Domains.')}`,
    });
  });

  router.post('/domains/:id/resume', async (ctx) => {
    const view = ctx.state.dashboard;
    const result = await services.reputation.resume(view.workspace.id, ctx.params.id!);
    redirectWithNotice(ctx, '/dashboard/overview', `${result.domain_name} sends marketing mail again: ${result.released} held recipient(s) released.`);
  });
}

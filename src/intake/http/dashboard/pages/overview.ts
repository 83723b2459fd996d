import type { DashRoutes } from '../routes.js';
import type { DomainChecks } from '../../../../checks/domain-checks.js';
import type { HttpDeps } from '../../context.js';
import type { SpaceReading } from '../../../../store/infra/free-space.js';
import { dayLabel, hourLabel, lineChart, ratioBars, type Series } from '../charts.js';
import { html } from '../html.js';
import { actionButton, badge, page, table } from '../layout.js';
import { redirectWithNotice, takeNotice } from '../session.js';

const SERIES = [
  ['sent', 'sent', 's-sent'],
  ['delivered', 'delivered', 's-delivered'],
  ['delivery_delayed', 'deferred', 's-deferred'],
  ['bounced', 'bounced', 's-bounced'],
  ['complained', 'complained', 's-complained'],
  // People's opens and clicks: Apple's prefetch and scanners are not engagement (docs/engagement.md).
  ['human_opened', 'opened', 's-opened'],
  ['human_clicked', 'clicked', 's-clicked'],
] as const;

const CHECKS = ['dkim', 'spf', 'dmarc', 'return_path_mx', 'mta_sts', 'tls_rpt'] as const;
const CHECK_LABELS: Record<(typeof CHECKS)[number], string> = {
  dkim: 'DKIM',
  spf: 'SPF',
  dmarc: 'DMARC',
  return_path_mx: 'Bounce MX',
  mta_sts: 'MTA-STS',
  tls_rpt: 'TLS-RPT',
};

const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;

/** The checks of a domain as badges, one per check, in the status vocabulary. */
const checkBadges = (checks: DomainChecks | null) =>
  checks
    ? html`<span class="checks">${CHECKS.flatMap((k) => (checks[k] ? [html`<span class="check" title="${checks[k].message}">${CHECK_LABELS[k]} ${badge(checks[k].status)}</span>`] : []))}</span>`
    : html`<span class="muted">not checked yet</span>`;

const size = (bytes: number) =>
  bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GB` : `${(bytes / 1024 ** 2).toFixed(0)} MB`;

/** Free space where the server writes, beside the reserve below which new mail is refused. */
const storageTiles = (readings: SpaceReading[]) =>
  readings.map(
    (r) =>
      html`<div class="tile" id="storage" title="${r.path}"><span class="muted">disk free</span><b>${size(r.freeBytes)}</b>${
        r.minFreeBytes > 0 && r.freeBytes < r.minFreeBytes
          ? html`<span>${badge('failing')} below the ${size(r.minFreeBytes)} reserve: new mail is refused</span>`
          : html`<span class="muted">new mail refused below ${size(r.minFreeBytes)}</span>`
      }</div>`,
  );

export function registerOverviewRoutes(router: DashRoutes, deps: HttpDeps): void {
  const { services } = deps;

  router.get('/overview', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const ws = view.workspace.id;
    const [liveHourly, liveDaily, destinations, queue, domains, reputation] = await Promise.all([
      services.emailMetrics.series(ws, 'hour', 48),
      services.emailMetrics.series(ws, 'day', 30),
      services.emailMetrics.destinations(ws, 7),
      services.emailMetrics.queueDepth(ws),
      services.domains.list(ws),
      services.reputation.list(ws),
    ]);
    // A newcomer sends with a test key first: with no live mail in 30 days, the charts show test mail, and say so.
    const quiet = liveDaily.every((b) => Object.values(b.counts).every((n) => n === 0));
    const [hourly, daily] = quiet
      ? await Promise.all([
          services.emailMetrics.series(ws, 'hour', 48, true),
          services.emailMetrics.series(ws, 'day', 30, true),
        ])
      : [liveHourly, liveDaily];
    const kind = quiet ? 'Test mail' : 'Mail';
    const toSeries = (buckets: typeof hourly): Series[] =>
      SERIES.map(([metric, name, cls]) => ({ name, cls, values: buckets.map((b) => b.counts[metric]) }));
    const classes = Object.entries<(typeof destinations)['gmail']>(destinations);
    const attempted = (d: (typeof destinations)['gmail']) => d.delivered + d.bounced + d.failed;
    const reputationOf = new Map(reputation.map((r) => [r.domain_id, r]));
    const domainRows = domains.map((d) => {
      const r = reputationOf.get(d.id);
      return html`<tr><td><a href="/dashboard/domains/${d.id}">${d.domain_name}</a><br>${badge(d.status)}</td><td>${checkBadges(d.checks)}</td>
<td>${badge(!r || r.state === 'sending' ? 'ok' : r.state)}${r && r.held > 0 ? html`<br><span class="muted">${r.held} held</span>` : ''}</td><td>${r ? `${r.bounce.rate}%` : '—'}</td><td>${r ? `${r.complaint.rate}%` : '—'}</td>
<td>${r && r.engagement.tracked > 0 ? html`${r.engagement.rate}%<br><span class="muted">of ${r.engagement.tracked}; ${r.engagement.machine_opened} by machines only</span>` : '—'}</td>
<td>${r?.state === 'paused' ? actionButton(view, `/dashboard/domains/${d.id}/resume`, 'Resume', '') : ''}</td></tr>`;
    });
    ctx.body = page(view, {
      title: 'Overview',
      section: 'overview',
      notice: takeNotice(ctx),
      body: html`${
        quiet
          ? html`<div class="notice" role="note" id="test-mail">No live mail in the last 30 days: the charts show <strong>test mail</strong> (sent with <code>sk_test_</code> keys, never delivered). Live mail replaces it once you send from a verified domain with a live key.</div>`
          : html`<p class="muted">Live mail (test keys are left out).</p>`
      }<p class="muted">Brought up to date every minute; times in UTC. Opens and clicks are people's: Apple Mail Privacy Protection's prefetch and security scanners are counted apart (<code>GET /v1/emails/metrics</code>).</p>
<div class="tiles" id="queue">${(['queued', 'sending', 'deferred', 'held'] as const).map((s) => html`<div class="tile"><span class="muted">${s}</span><b>${queue[s]}</b></div>`)}${storageTiles(services.space.read())}</div>
<h2>Last 48 hours</h2>${lineChart(
        `${kind} per hour, last 48 hours (UTC)`,
        hourly.map((b) => hourLabel(b.start)),
        toSeries(hourly),
      )}
<h2>Last 30 days</h2>${lineChart(
        `${kind} per day, last 30 days (UTC)`,
        daily.map((b) => dayLabel(b.start)),
        toSeries(daily),
      )}
<h2>By destination, last 7 days</h2><p class="muted">Live delivery attempts by mailbox provider.</p><div class="cols">
${ratioBars(
  'Delivery rate per mailbox provider',
  classes.map(([name, d]) => ({
    label: name,
    value: d.delivery_rate,
    cls: 's-delivered',
    text: attempted(d) ? `${pct(d.delivery_rate)} of ${attempted(d)}` : 'no mail',
  })),
)}
${ratioBars(
  'Bounce rate per mailbox provider',
  classes.map(([name, d]) => ({
    label: name,
    value: d.bounce_rate,
    cls: 's-bounced',
    text: attempted(d) ? `${pct(d.bounce_rate)} bounced` : 'no mail',
  })),
)}</div>
<h2>Sending domains</h2>
${table(['Domain', 'Checks', 'Marketing', 'Bounces', 'Complaints', 'Opened by people', ''], domainRows, 'No domains yet: add the domain you send from under Domains.')}`,
    });
  });

  router.post('/domains/:id/resume', 'manage', async (ctx) => {
    const view = ctx.state.dashboard;
    const result = await services.reputation.resume(view.workspace.id, ctx.params.id!);
    redirectWithNotice(
      ctx,
      '/dashboard/overview',
      `${result.domain_name} sends marketing mail again: ${result.released} held recipient(s) released.`,
    );
  });
}

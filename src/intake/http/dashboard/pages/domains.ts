import type Router from '@koa/router';
import type { DnsRecord, DomainView } from '../../../../services/domains.js';
import type { Check } from '../../../../services/deliverability/check-status.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { actionButton, badge, copyField, csrfField, page, table, when } from '../layout.js';
import type { DashState } from '../session.js';
import { redirectWithNotice, takeNotice } from '../session.js';

// One block per record rather than a table row: names and values are long, and on a phone
// each needs the full width to be read and copied.
const recordList = (prefix: string, records: DnsRecord[]) =>
  records.length === 0
    ? html`<p class="muted">No records.</p>`
    : html`<div class="card records">${records.map(
        (r, i) => html`<div class="record"><span class="badge">${r.type}</span>
<label>Name${copyField(`${prefix}-name-${i}`, r.name)}</label><label>Value${copyField(`${prefix}-value-${i}`, r.value)}</label></div>`,
      )}</div>`;

const CHECK_NAMES = [
  ['dkim', 'DKIM'],
  ['spf', 'SPF'],
  ['dmarc', 'DMARC'],
  ['return_path_mx', 'Bounce MX'],
  ['mta_sts', 'MTA-STS'],
  ['tls_rpt', 'TLS-RPT'],
] as const;

/** Every check with what it found and, when it is not ok, the record to publish. */
const checkList = (domain: DomainView) => {
  const checks = domain.checks;
  if (!checks) return html`<p class="muted">Not checked yet: press “Check DNS now”.</p>`;
  const items = CHECK_NAMES.flatMap(([key, label]) => {
    const c: Check | undefined = checks[key];
    if (!c) return [];
    return [
      html`<li id="check-${key}"><strong>${label}</strong> ${badge(c.status)}${c.required ? '' : html` <span class="muted">optional</span>`}<p>${c.message}</p>${
        c.found && c.status !== 'ok' ? html`<p class="muted">Found:</p><pre>${c.found}</pre>` : ''
      }${c.publish.length > 0 ? html`<p class="muted">Publish:</p>${recordList(`publish-${key}`, c.publish as DnsRecord[])}` : ''}</li>`,
    ];
  });
  return html`<p class="muted">Checked ${when(checks.checked_at)}.</p><ul class="check-list">${items}</ul>`;
};

export function registerDomainRoutes(router: Router<DashState>, deps: HttpDeps): void {
  router.get('/domains', async (ctx) => {
    const view = ctx.state.dashboard;
    const domains = await deps.services.domains.list(view.workspace.id);
    const rows = domains.map(
      (d) => html`<tr><td><a href="/dashboard/domains/${d.id}">${d.domain_name}</a></td><td>${badge(d.status)}</td><td>${when(d.created_at)}</td><td>${when(d.last_checked_at)}</td></tr>`,
    );
    ctx.body = page(view, {
      title: 'Domains',
      section: 'domains',
      body: html`<div class="card"><h2>Add a domain</h2><form class="row" method="post" action="/dashboard/domains">${csrfField(view.csrf)}
<label>Domain<input name="domain" required placeholder="example.com" maxlength="253"></label><button type="submit">Add domain</button></form></div>
${table(['Domain', 'Status', 'Added', 'Last checked'], rows, 'No domains yet: add the domain you send from.')}`,
    });
  });

  router.post('/domains', async (ctx) => {
    const view = ctx.state.dashboard;
    const domain = await deps.services.domains.add(view.workspace.id, { domain: ctx.state.form.domain ?? '' });
    ctx.status = 303;
    ctx.redirect(`/dashboard/domains/${domain.id}`);
  });

  router.get('/domains/:id', async (ctx) => {
    const view = ctx.state.dashboard;
    const { domain, customer, returnPath, receiving, reports } = await deps.services.domains.recordsToPublish(view.workspace.id, ctx.params.id!);
    const [reputation, dmarc, tls] = await Promise.all([
      deps.services.reputation.get(view.workspace.id, domain.id),
      deps.services.reportInbox.dmarcSummary(view.workspace.id, domain.id, 30),
      deps.services.reportInbox.tlsSummary(view.workspace.id, domain.id, 30),
    ]);
    const dmarcRows = dmarc.days.flatMap((d) =>
      d.sources.map(
        (s) =>
          html`<tr><td>${d.date}</td><td>${s.source_ip}${s.this_server ? html` <span class="badge good">this server</span>` : ''}</td><td>${s.messages}</td><td>${s.dmarc_pass}</td><td>${s.spf_aligned}</td><td>${s.dkim_aligned}</td><td>${Object.entries(s.dispositions).map(([k, v]) => `${k} ${v}`).join(', ')}</td><td>${s.reporters.join(', ')}</td></tr>`,
      ),
    );
    const tlsRows = tls.days.map(
      (d) => html`<tr><td>${d.date}</td><td>${d.successful}</td><td>${d.failed}</td><td>${d.failures.map((f) => `${f.result_type} at ${f.receiving_mx_hostname ?? '?'}: ${f.sessions}`).join('; ') || '—'}</td><td>${d.reporters.join(', ')}</td></tr>`,
    );
    ctx.body = page(view, {
      title: domain.domain_name,
      section: 'domains',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(domain.status)}</dd><dt>Added</dt><dd>${when(domain.created_at)}</dd>
<dt>Verified</dt><dd>${when(domain.verified_at)}</dd><dt>Last checked</dt><dd>${when(domain.last_checked_at)}</dd>
${domain.last_check_error ? html`<dt>Last check</dt><dd>${domain.last_check_error}</dd>` : ''}</dl>
<p>${actionButton(view, `/dashboard/domains/${domain.id}/verify`, 'Check DNS now', '')}</p></div>
<h2>Deliverability checks</h2><div class="card">${checkList(domain)}</div>
<h2>Reputation</h2><div class="card"><dl class="facts"><dt>Marketing mail</dt><dd>${badge(reputation.state === 'sending' ? 'ok' : reputation.state)} ${reputation.reason}</dd>
<dt>Hard bounces</dt><dd>${reputation.bounce.rate}% ${badge(reputation.bounce.status)} <span class="muted">(warning over ${reputation.bounce.warning}%, held over ${reputation.bounce.pause}%)</span></dd>
<dt>Complaints</dt><dd>${reputation.complaint.rate}% ${badge(reputation.complaint.status)} <span class="muted">(warning over ${reputation.complaint.warning}%, held over ${reputation.complaint.pause}%)</span></dd>
<dt>Sent</dt><dd>${reputation.sent} in the last ${reputation.window_hours} h</dd><dt>Held</dt><dd>${reputation.held}</dd></dl>
${reputation.state === 'paused' ? html`<p>${actionButton(view, `/dashboard/domains/${domain.id}/resume`, 'Resume marketing mail', '')}</p>` : ''}</div>
<h2>DMARC reports, last 30 days</h2><p class="muted">Who sends mail as ${domain.domain_name}, as the receivers report it (${dmarc.reports} report(s)).</p>
${table(['Day', 'Source', 'Messages', 'DMARC pass', 'SPF aligned', 'DKIM aligned', 'Disposition', 'Reported by'], dmarcRows, 'No DMARC report yet: publish the rua below; receivers send one a day.')}
<h2>TLS reports, last 30 days</h2>
${table(['Day', 'Sessions ok', 'Failed', 'Failures', 'Reported by'], tlsRows, 'No TLS report yet.')}
<h2>DNS records to publish</h2><p class="muted">Publish these at your DNS provider, then press “Verify now”. DKIM signing needs the CNAMEs.</p>
${recordList('dkim', customer)}
<h2>Return path (bounces)</h2><p class="muted">Recommended: lets bounces come back to mailsvc and aligns SPF.</p>
${recordList('rp', returnPath)}
<h2>Receiving (MX)</h2><p class="muted">To receive mail at this domain: publish this MX, then add routes under <a href="/dashboard/receiving">Receiving</a>. It replaces the domain's current mail servers.</p>
${recordList('mx', receiving)}
${reports.length > 0 ? html`<h2>DMARC and TLS reports</h2><p class="muted">So that receivers send their reports to this server (merge the rua into an existing DMARC record).</p>${recordList('reports', reports)}` : ''}`,
    });
  });

  router.post('/domains/:id/verify', async (ctx) => {
    const view = ctx.state.dashboard;
    const { domain } = await deps.services.domains.verify(view.workspace.id, ctx.params.id!);
    const attention = domain.checks ? CHECK_NAMES.filter(([k]) => domain.checks![k] && ['failing', 'not_published'].includes(domain.checks![k]!.status) && domain.checks![k]!.required).map(([, label]) => label) : [];
    const notice =
      domain.status !== 'verified'
        ? `${domain.domain_name} is not verified yet: see “Last check” for what is missing.`
        : attention.length > 0
          ? `${domain.domain_name} is verified; ${attention.join(', ')} need attention (see the checks).`
          : `${domain.domain_name} is verified.`;
    redirectWithNotice(ctx, `/dashboard/domains/${domain.id}`, notice);
  });
}

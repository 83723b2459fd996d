import type Router from '@koa/router';
import type { DnsRecord } from '../../../../services/domains.js';
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
    const { domain, customer, returnPath, receiving } = await deps.services.domains.recordsToPublish(view.workspace.id, ctx.params.id!);
    ctx.body = page(view, {
      title: domain.domain_name,
      section: 'domains',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(domain.status)}</dd><dt>Added</dt><dd>${when(domain.created_at)}</dd>
<dt>Verified</dt><dd>${when(domain.verified_at)}</dd><dt>Last checked</dt><dd>${when(domain.last_checked_at)}</dd>
${domain.last_check_error ? html`<dt>Last check</dt><dd>${domain.last_check_error}</dd>` : ''}</dl>
<p>${actionButton(view, `/dashboard/domains/${domain.id}/verify`, 'Verify now', '')}</p></div>
<h2>DNS records to publish</h2><p class="muted">Publish these at your DNS provider, then press “Verify now”. DKIM signing needs the CNAMEs.</p>
${recordList('dkim', customer)}
<h2>Return path (bounces)</h2><p class="muted">Recommended: lets bounces come back to mailsvc and aligns SPF.</p>
${recordList('rp', returnPath)}
<h2>Receiving (MX)</h2><p class="muted">To receive mail at this domain: publish this MX, then add routes under <a href="/dashboard/receiving">Receiving</a>. It replaces the domain's current mail servers.</p>
${recordList('mx', receiving)}`,
    });
  });

  router.post('/domains/:id/verify', async (ctx) => {
    const view = ctx.state.dashboard;
    const { domain } = await deps.services.domains.verify(view.workspace.id, ctx.params.id!);
    const notice = domain.status === 'verified' ? `${domain.domain_name} is verified.` : `${domain.domain_name} is not verified yet: see “Last check” for what is missing.`;
    redirectWithNotice(ctx, `/dashboard/domains/${domain.id}`, notice);
  });
}

import type { DashRoutes } from '../routes.js';
import type { DnsRecord, DomainView } from '../../../../services/domains/domains.js';
import type { Check } from '../../../../checks/check-status.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { actionButton, badge, copyField, page, table, when, type DashView, ifAllowed, postForm } from '../layout.js';
import { formAction } from '../form.js';
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
type CheckKey = (typeof CHECK_NAMES)[number][0];

type Records = Awaited<ReturnType<HttpDeps['services']['domains']['recordsToPublish']>>;

interface RecordGroup {
  id: string;
  title: string;
  /** Required: mail fails or is refused without it (SPF included: Gmail and Yahoo demand it). */
  required: boolean;
  why: string;
  records: DnsRecord[];
  check?: Check | undefined;
}

/**
 * Every record of the domain once, grouped by what it is for, with the last check of each
 * group beside it. A record a check asks for replaces the default one (an SPF record merged
 * with the one already published, say), so nothing shows twice.
 */
function recordGroups(domain: DomainView, r: Records): RecordGroup[] {
  const check = (k: CheckKey) => domain.checks?.[k];
  const or = (k: CheckKey, fallback: DnsRecord[]) => {
    const wanted = (check(k)?.publish ?? []) as DnsRecord[];
    return wanted.length > 0 ? wanted : fallback;
  };
  const spf = r.returnPath.filter((x) => x.type === 'TXT');
  const bounceMx = r.returnPath.filter((x) => x.type === 'MX');
  return [
    {
      id: 'dkim',
      title: 'DKIM',
      required: true,
      why: 'Signs your mail; verifying the domain checks these.',
      records: r.customer,
      check: check('dkim'),
    },
    {
      id: 'spf',
      title: 'SPF',
      required: true,
      why: 'Authorises this server to send for the Return-Path domain; merge with an SPF record already there.',
      records: or('spf', spf),
      check: check('spf'),
    },
    {
      id: 'dmarc',
      title: 'DMARC',
      required: true,
      why: 'Tells receivers what to do with mail that fails DKIM and SPF, and where to report.',
      records: or(
        'dmarc',
        r.reports.filter((x) => x.name.startsWith('_dmarc.')),
      ),
      check: check('dmarc'),
    },
    ...(bounceMx.length > 0
      ? [
          {
            id: 'return_path_mx',
            title: 'Bounce MX',
            required: false,
            why: 'Bounces that come later reach this server, which then stops mailing the address.',
            records: or('return_path_mx', bounceMx),
            check: check('return_path_mx'),
          },
        ]
      : []),
    {
      id: 'mta_sts',
      title: 'MTA-STS',
      required: false,
      why: 'Other servers deliver to the domain only over verified TLS.',
      records: or('mta_sts', []),
      check: check('mta_sts'),
    },
    {
      id: 'tls_rpt',
      title: 'TLS-RPT',
      required: false,
      why: 'Other servers report TLS failures delivering to the domain.',
      records: or(
        'tls_rpt',
        r.reports.filter((x) => x.name.startsWith('_smtp._tls.')),
      ),
      check: check('tls_rpt'),
    },
    {
      id: 'receiving',
      title: 'Receiving (MX)',
      required: false,
      why: "Only to receive mail at the domain here (Receiving): it replaces the domain's current mail servers.",
      records: r.receiving,
    },
  ];
}

/** A group: required ones open; optional ones folded unless their check fails, so the page stays short on a phone. */
const groupView = (g: RecordGroup) => {
  const title = html`<h3>${g.title} ${g.check ? badge(g.check.status) : ''} <span class="muted">${g.required ? 'required' : 'optional'}</span></h3>`;
  const detail = html`<p class="muted">${g.why}</p>${g.check ? html`<p>${g.check.message}</p>${g.check.found && g.check.status !== 'ok' ? html`<p class="muted">Found:</p><pre>${g.check.found}</pre>` : ''}` : ''}${
    g.records.length > 0 ? recordList(`rec-${g.id}`, g.records) : ''
  }`;
  if (g.required) return html`<li id="check-${g.id}" class="group">${title}${detail}</li>`;
  return html`<li id="check-${g.id}" class="group"><details ${g.check?.status === 'failing' ? html`open` : ''}><summary>${title}</summary>${detail}</details></li>`;
};

export function registerDomainRoutes(router: DashRoutes, deps: HttpDeps): void {
  const listPage = async (view: DashView, extra: { error?: string; kept?: string } = {}) => {
    const domains = await deps.services.domains.list(view.workspace.id);
    const rows = domains.map(
      (d) =>
        html`<tr><td><a href="/dashboard/domains/${d.id}">${d.domain_name}</a></td><td>${badge(d.status)}</td><td>${when(d.created_at)}</td><td>${when(d.last_checked_at)}</td></tr>`,
    );
    return page(view, {
      title: 'Domains',
      section: 'domains',
      error: extra.error,
      body: html`${ifAllowed(
        view,
        '/dashboard/domains',
        html`<div class="card"><h2>Add a domain</h2>${postForm(
          view,
          `/dashboard/domains`,
          'row',
          html`
<label>Domain<input name="domain" required placeholder="example.com" maxlength="253" value="${extra.kept ?? ''}"></label><button type="submit">Add domain</button>`,
        )}</div>`,
      )}
${table(['Domain', 'Status', 'Added', 'Last checked'], rows, 'No domains yet: add the domain you send from.')}`,
    });
  };

  router.get('/domains', 'read', async (ctx) => {
    ctx.body = await listPage(ctx.state.dashboard);
  });

  router.post('/domains', 'manage', async (ctx) => {
    const view = ctx.state.dashboard;
    const name = ctx.state.form.domain ?? '';
    await formAction(
      ctx,
      async () => {
        const domain = await deps.services.domains.add(view.workspace.id, { domain: name });
        ctx.status = 303;
        ctx.redirect(`/dashboard/domains/${domain.id}`);
      },
      (error) => listPage(view, { error, kept: name }),
    );
  });

  router.get('/domains/:id', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const records = await deps.services.domains.recordsToPublish(view.workspace.id, ctx.params.id!);
    const { domain } = records;
    const [reputation, dmarc, tls] = await Promise.all([
      deps.services.reputation.get(view.workspace.id, domain.id),
      deps.services.reportSummaries.dmarcSummary(view.workspace.id, domain.id, 30),
      deps.services.reportSummaries.tlsSummary(view.workspace.id, domain.id, 30),
    ]);
    const dmarcRows = dmarc.days.flatMap((d) =>
      d.sources.map(
        (s) =>
          html`<tr><td>${d.date}</td><td>${s.source_ip}${s.this_server ? html` <span class="badge good">this server</span>` : ''}</td><td>${s.messages}</td><td>${s.dmarc_pass}</td><td>${s.spf_aligned}</td><td>${s.dkim_aligned}</td><td>${Object.entries(
            s.dispositions,
          )
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}</td><td>${s.reporters.join(', ')}</td></tr>`,
      ),
    );
    const tlsRows = tls.days.map(
      (d) =>
        html`<tr><td>${d.date}</td><td>${d.successful}</td><td>${d.failed}</td><td>${d.failures.map((f) => `${f.result_type} at ${f.receiving_mx_hostname ?? '?'}: ${f.sessions}`).join('; ') || '—'}</td><td>${d.reporters.join(', ')}</td></tr>`,
    );
    const groups = recordGroups(domain, records);
    const operator = [...records.dkimHost, ...records.reportsHost];
    ctx.body = page(view, {
      title: domain.domain_name,
      section: 'domains',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(domain.status)}</dd><dt>Added</dt><dd>${when(domain.created_at)}</dd>
<dt>Verified</dt><dd>${when(domain.verified_at)}</dd><dt>Last checked</dt><dd>${when(domain.last_checked_at)}</dd>
${domain.last_check_error ? html`<dt>Last check</dt><dd>${domain.last_check_error}</dd>` : ''}</dl>
<p>${actionButton(view, `/dashboard/domains/${domain.id}/verify`, 'Check DNS now', '')}</p></div>
<h2>DNS records</h2><p class="muted">Publish these, then press “Check DNS now”. ${domain.checks ? html`Checked ${when(domain.checks.checked_at)}.` : 'Not checked yet.'}</p>
<div class="cols"><div><p class="who">In the zone of ${domain.domain_name}: the domain's owner publishes</p><ul class="check-list">${groups.map(groupView)}</ul></div>
<div><p class="who">In the zone of this mailsvc server: its operator publishes, once per domain</p>
<div class="card" id="operator"><h3>DKIM keys ${domain.checks?.dkim ? badge(domain.checks.dkim.status) : ''}</h3><p class="muted">The public keys the CNAMEs above point at, under the server's DKIM host; and, when reports come here, the record that lets them.</p>${recordList('operator', operator)}</div></div></div>
<h2>Reputation</h2><div class="card"><dl class="facts"><dt>Marketing mail</dt><dd>${badge(reputation.state === 'sending' ? 'ok' : reputation.state)} ${reputation.reason}</dd>
<dt>Hard bounces</dt><dd>${reputation.bounce.rate}% ${badge(reputation.bounce.status)} <span class="muted">(warning over ${reputation.bounce.warning}%, held over ${reputation.bounce.pause}%)</span></dd>
<dt>Complaints</dt><dd>${reputation.complaint.rate}% ${badge(reputation.complaint.status)} <span class="muted">(warning over ${reputation.complaint.warning}%, held over ${reputation.complaint.pause}%)</span></dd>
<dt>Sent</dt><dd>${reputation.sent} in the last ${reputation.window_hours} h</dd><dt>Held</dt><dd>${reputation.held}</dd></dl>
${reputation.state === 'paused' ? html`<p>${actionButton(view, `/dashboard/domains/${domain.id}/resume`, 'Resume marketing mail', '')}</p>` : ''}</div>
<h2>DMARC reports, last 30 days</h2><p class="muted">Who sends mail as ${domain.domain_name}, as the receivers report it (${dmarc.reports} report(s)).</p>
${table(['Day', 'Source', 'Messages', 'DMARC pass', 'SPF aligned', 'DKIM aligned', 'Disposition', 'Reported by'], dmarcRows, 'No DMARC report yet: publish the DMARC record above; receivers send one a day.')}
<h2>TLS reports, last 30 days</h2>
${table(['Day', 'Sessions ok', 'Failed', 'Failures', 'Reported by'], tlsRows, 'No TLS report yet.')}`,
    });
  });

  router.post('/domains/:id/verify', 'manage', async (ctx) => {
    const view = ctx.state.dashboard;
    const { domain } = await deps.services.domains.verify(view.workspace.id, ctx.params.id!);
    const attention = domain.checks
      ? CHECK_NAMES.filter(
          ([k]) =>
            domain.checks![k] &&
            ['failing', 'not_published'].includes(domain.checks![k].status) &&
            domain.checks![k].required,
        ).map(([, label]) => label)
      : [];
    const notice =
      domain.status !== 'verified'
        ? `${domain.domain_name} is not verified yet: see “Last check” for what is missing.`
        : attention.length > 0
          ? `${domain.domain_name} is verified; ${attention.join(', ')} need attention (see the checks).`
          : `${domain.domain_name} is verified.`;
    redirectWithNotice(ctx, `/dashboard/domains/${domain.id}`, notice);
  });
}

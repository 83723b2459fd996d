import type { DashRoutes } from '../routes.js';
import type { ParsedMail } from 'mailparser';
import type { EmailDetail } from '../../../../services/emails.js';
import { parseMail } from '../../../../shared/parse-mail.js';
import { isAppError } from '../../../../shared/errors.js';
import { EMAIL_STATUSES } from '../../../../store/emails.js';
import type { HttpDeps } from '../../context.js';
import { html, type SafeHtml } from '../html.js';
import { actionButton, badge, exactly, jsonBlock, page, table, when, type DashView } from '../layout.js';
import { redirectWithNotice, takeNotice } from '../session.js';

/** The stored message, parsed; undefined when there is none yet (a campaign message not composed). */
async function parsedMessage(deps: HttpDeps, view: DashView, id: string): Promise<ParsedMail | undefined> {
  try {
    return await parseMail(await deps.services.emails.raw(view.workspace.id, id), {
      skipImageLinks: true,
      skipTextToHtml: true,
    });
  } catch (err) {
    if (isAppError(err) && err.code === 'not_found') return undefined;
    throw err;
  }
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');

/** An SMTP reply once: stored replies often start with their own code already. */
const replyText = (code: number | null, message: string | null): string =>
  code === null
    ? (message ?? '')
    : message === null
      ? String(code)
      : message.startsWith(String(code))
        ? message
        : `${code} ${message}`;

/** The next day of a `YYYY-MM-DD` date: "to 12 June" includes the whole of the 12th. */
const dayAfter = (date: string): string =>
  /^\d{4}-\d{2}-\d{2}$/.test(date)
    ? new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)
    : date;

/** Statuses that can still be cancelled from the page. */
const CANCELLABLE = new Set(['scheduled', 'queued', 'deferred', 'held']);

/** What happened, oldest first: the email's creation, its events, and a cancellation (which records no event). */
function timeline(
  email: EmailDetail,
  events: Array<{ id: string; type: string; created_at: string; data: unknown }>,
): SafeHtml[] {
  const items: SafeHtml[] = [
    html`<li>${exactly(email.created_at)} <strong>${email.scheduled_at ? 'scheduled' : 'queued'}</strong>${email.scheduled_at ? html` for ${when(email.scheduled_at)}` : ''} <span class="muted">via ${email.intake}</span></li>`,
  ];
  for (const e of events) {
    items.push(
      html`<li>${exactly(e.created_at)} <strong>${e.type}</strong><details><summary>data</summary>${jsonBlock(e.data)}</details></li>`,
    );
  }
  const cancelled = email.recipients
    .filter((r) => r.status === 'cancelled' && r.finished_at)
    .map((r) => r.finished_at!)
    .sort();
  if (cancelled.length > 0)
    items.push(
      html`<li>${exactly(cancelled.at(-1))} <strong>cancelled</strong> <span class="muted">${cancelled.length} recipient(s)</span></li>`,
    );
  return items;
}

const tagLink = (tag: string) =>
  html`<a href="/dashboard/emails?${new URLSearchParams({ tag }).toString()}"><code>${tag}</code></a>`;

export function registerEmailRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/emails', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const filters = {
      q: str(ctx.query.q),
      status: str(ctx.query.status),
      tag: str(ctx.query.tag),
      from: str(ctx.query.from),
      until: str(ctx.query.until),
      to: str(ctx.query.to),
    };
    const list = await deps.services.emails.list(view.workspace.id, {
      q: filters.q,
      status: filters.status,
      tag: filters.tag,
      to: filters.to,
      created_after: filters.from,
      created_before: filters.until ? dayAfter(filters.until) : '',
      after: str(ctx.query.after),
      limit: '50',
    });
    const rows = list.data.map(
      (
        e,
      ) => html`<tr><td class="wrap"><a href="/dashboard/emails/${e.id}">${e.subject || '(no subject)'}</a>${e.test ? html` <span class="badge">test</span>` : ''}</td>
<td class="wrap">${e.from}</td><td class="wrap">${e.to.join(', ')}</td><td>${badge(e.status)}</td><td>${when(e.created_at)}</td></tr>`,
    );
    const kept = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== ''));
    const more = list.has_more
      ? html`<p><a href="/dashboard/emails?${new URLSearchParams({ ...kept, after: list.next_cursor ?? '' }).toString()}">Older emails →</a></p>`
      : '';
    ctx.body = page(view, {
      title: 'Emails',
      section: 'emails',
      notice: takeNotice(ctx),
      body: html`<form class="row card" method="get" action="/dashboard/emails" role="search">
<label>Search<input type="search" name="q" value="${filters.q}" placeholder="subject, address or email id" maxlength="320"></label>
<label>Status<select name="status"><option value="">any</option>${EMAIL_STATUSES.map((s) => html`<option ${s === filters.status ? html`selected` : ''}>${s}</option>`)}</select></label>
<label>Tag<input name="tag" value="${filters.tag}" placeholder="name or name:value" maxlength="256"></label>
<label>From<input type="date" name="from" value="${filters.from}"></label>
<label>To<input type="date" name="until" value="${filters.until}"></label>
${filters.to ? html`<input type="hidden" name="to" value="${filters.to}">` : ''}<button type="submit">Filter</button>${Object.keys(kept).length > 0 ? html` <a href="/dashboard/emails">Clear</a>` : ''}</form>
${table(['Subject', 'From', 'To', 'Status', 'Created (UTC)'], rows, Object.keys(kept).length > 0 ? 'No emails match.' : 'No emails yet. Send one with the API: POST /v1/emails.')}${more}`,
    });
  });

  router.get('/emails/:id', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const id = ctx.params.id!;
    const [email, events, message] = await Promise.all([
      deps.services.emails.get(view.workspace.id, id),
      deps.services.emails.events(view.workspace.id, id),
      parsedMessage(deps, view, id),
    ]);
    const deliveries = await deps.services.webhooks.deliveriesOfEmail(view.workspace.id, email.id);
    const recipients = email.recipients.map(
      (
        r,
      ) => html`<tr><td>${r.email}</td><td>${badge(r.status)}</td><td>${r.attempts}</td><td>${r.next_attempt_at ? when(r.next_attempt_at) : html`<span class="muted">—</span>`}</td>
<td class="wrap">${r.last_response ? replyText(r.last_response.code, r.last_response.message) : ''}</td></tr>`,
    );
    const attempts = email.attempts.map(
      (
        a,
      ) => html`<tr><td>${exactly(a.started_at)}</td><td>${a.recipient}</td><td>${badge(a.outcome)}</td><td>${a.simulated ? html`<span class="muted">simulator</span>` : a.mx_host}</td>
<td class="wrap">${replyText(a.code, a.response)}</td><td>${a.simulated ? 'simulated' : `${a.duration_ms} ms${a.tls ? ', TLS' : ''}`}</td></tr>`,
    );
    const hooks = deliveries.map(
      (d) =>
        html`<tr><td>${d.event_type}</td><td class="wrap"><a href="/dashboard/webhooks/${d.endpoint_id}/deliveries/${d.id}">${d.url}</a></td><td>${badge(d.status)}</td><td>${d.attempt_count}</td><td>${d.status_code ?? ''}</td></tr>`,
    );
    const meta = email.metadata ?? {};
    const run =
      typeof meta.workflow_id === 'string' && typeof meta.workflow_run_id === 'string'
        ? { workflow: meta.workflow_id, run: meta.workflow_run_id }
        : null;
    const headers = message?.headerLines.map((h) => h.line).join('\n');
    const preview = message?.html
      ? html`<iframe class="preview" sandbox="" src="/dashboard/emails/${email.id}/preview" title="HTML preview" referrerpolicy="no-referrer"></iframe>`
      : message?.text
        ? html`<pre>${message.text}</pre>`
        : html`<p class="muted">No content stored yet.</p>`;
    const facts: Array<[string, SafeHtml | string]> = [
      ['Status', html`${badge(email.status)}${email.test ? html` <span class="badge">test</span>` : ''}`],
      ['From', email.from],
      ['To', email.to.join(', ')],
      ...(email.cc.length > 0 ? [['Cc', email.cc.join(', ')] as [string, string]] : []),
      ...(email.bcc.length > 0 ? [['Bcc', email.bcc.join(', ')] as [string, string]] : []),
      ...(email.reply_to.length > 0 ? [['Reply-To', email.reply_to.join(', ')] as [string, string]] : []),
      ['Created', exactly(email.created_at)],
      ...(email.scheduled_at ? [['Scheduled for', when(email.scheduled_at)] as [string, SafeHtml]] : []),
      ['Type', `${email.priority}, via ${email.intake}`],
      [
        'Tags',
        email.tags.length > 0
          ? html`${email.tags.map((t, i) => html`${i > 0 ? ', ' : ''}${tagLink(t)}`)}`
          : html`<span class="muted">none</span>`,
      ],
      ...(email.campaign_id
        ? [
            ['Campaign', html`<a href="/dashboard/campaigns/${email.campaign_id}">${email.campaign_id}</a>`] as [
              string,
              SafeHtml,
            ],
          ]
        : []),
      ...(run
        ? [
            ['Workflow run', html`<a href="/dashboard/workflows/${run.workflow}/runs/${run.run}">${run.run}</a>`] as [
              string,
              SafeHtml,
            ],
          ]
        : []),
      ...(email.template_id
        ? [
            ['Template', html`<a href="/dashboard/templates/${email.template_id}">${email.template_id}</a>`] as [
              string,
              SafeHtml,
            ],
          ]
        : []),
      ...(email.external_id ? [['External id', email.external_id] as [string, string]] : []),
      ['Message-ID', html`<code>${email.message_id}</code>`],
      ['Id', html`<code>${email.id}</code>`],
    ];
    ctx.body = page(view, {
      title: email.subject || '(no subject)',
      section: 'emails',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts">${facts.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>
${CANCELLABLE.has(email.status) ? html`<div class="actions">${actionButton(view, `/dashboard/emails/${email.id}/cancel`, email.status === 'scheduled' ? 'Cancel the scheduled send' : 'Cancel what has not gone yet', 'danger')}</div>` : ''}</div>
${email.metadata ? html`<h2>Metadata</h2>${jsonBlock(email.metadata)}` : ''}
<h2>Recipients</h2>${table(['Recipient', 'Status', 'Attempts', 'Next retry (UTC)', 'Last reply'], recipients, 'No recipients.')}
<h2>Timeline</h2><ul class="timeline" id="events">${timeline(email, events)}</ul>
<h2>Delivery attempts</h2>${table(['When (UTC)', 'Recipient', 'Outcome', 'MX', 'Remote reply', 'Time'], attempts, 'No delivery attempts yet.')}
<h2>Webhook deliveries</h2>${table(['Event', 'Endpoint', 'Status', 'Attempts', 'HTTP'], hooks, 'No webhook endpoint took these events.')}
<h2>Preview</h2>${preview}
<h2>Headers</h2>${headers ? html`<pre id="headers">${headers}</pre>` : html`<p class="muted">No content stored yet.</p>`}`,
    });
  });

  router.post('/emails/:id/cancel', 'send', async (ctx) => {
    const view = ctx.state.dashboard;
    const email = await deps.services.emails.cancel(view.workspace.id, ctx.params.id!);
    redirectWithNotice(ctx, `/dashboard/emails/${email.id}`, `Cancelled: the email is ${email.status}.`);
  });

  router.get('/emails/:id/preview', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const message = await parsedMessage(deps, view, ctx.params.id!);
    sandboxedPreview(ctx, message?.html || null);
  });
}

/**
 * A message's HTML as the detail pages frame it (`<iframe sandbox="">`): the CSP sandbox keeps
 * scripts, forms and remote loads (tracking pixels included) from running even if the page is
 * opened directly. Never rendered or cleaned on the server.
 */
export function sandboxedPreview(
  ctx: { set(name: string, value: string): void; type: string; body: unknown },
  markup: string | null,
  remoteImages = false,
): void {
  // No script ever; remote images only when the person asked (loading them tells the sender it was opened).
  ctx.set(
    'Content-Security-Policy',
    `sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:${remoteImages ? ' https:' : ''}; font-src data:; frame-ancestors 'self'`,
  );
  ctx.set('X-Frame-Options', 'SAMEORIGIN');
  ctx.type = 'html';
  ctx.body = markup || '<p>No HTML part.</p>';
}

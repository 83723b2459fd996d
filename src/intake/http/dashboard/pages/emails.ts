import type Router from '@koa/router';
import type { ParsedMail } from 'mailparser';
import { parseMail } from '../../../../shared/parse-mail.js';
import { isAppError } from '../../../../shared/errors.js';
import { EMAIL_STATUSES } from '../../../../store/tables.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { badge, page, table, when, type DashView } from '../layout.js';
import type { DashState } from '../session.js';

/** The stored message, parsed; undefined when there is none yet (a campaign message not composed). */
async function parsedMessage(deps: HttpDeps, view: DashView, id: string): Promise<ParsedMail | undefined> {
  try {
    return await parseMail(await deps.services.emails.raw(view.workspace.id, id), { skipImageLinks: true, skipTextToHtml: true });
  } catch (err) {
    if (isAppError(err) && err.code === 'not_found') return undefined;
    throw err;
  }
}

const str = (value: unknown): string => (typeof value === 'string' ? value : '');

export function registerEmailRoutes(router: Router<DashState>, deps: HttpDeps): void {
  router.get('/emails', async (ctx) => {
    const view = ctx.state.dashboard;
    const status = str(ctx.query.status);
    const to = str(ctx.query.to);
    const list = await deps.services.emails.list(view.workspace.id, { status, to, after: str(ctx.query.after), limit: '50' });
    const rows = list.data.map(
      (e) => html`<tr><td><a href="/dashboard/emails/${e.id}">${e.subject || '(no subject)'}</a>${e.test ? html` <span class="badge">test</span>` : ''}</td>
<td class="wrap">${e.to.join(', ')}</td><td>${badge(e.status)}</td><td>${when(e.created_at)}</td></tr>`,
    );
    const more = list.has_more
      ? html`<p><a href="/dashboard/emails?${new URLSearchParams({ status, to, after: list.next_cursor ?? '' }).toString()}">Older emails →</a></p>`
      : '';
    ctx.body = page(view, {
      title: 'Emails',
      section: 'emails',
      body: html`<form class="row card" method="get" action="/dashboard/emails">
<label>Recipient<input type="search" name="to" value="${to}" placeholder="someone@example.com"></label>
<label>Status<select name="status"><option value="">any</option>${EMAIL_STATUSES.map((s) => html`<option ${s === status ? html`selected` : ''}>${s}</option>`)}</select></label>
<button type="submit">Filter</button></form>
${table(['Subject', 'To', 'Status', 'Created'], rows, 'No emails match. Send one with the API: POST /v1/emails.')}${more}`,
    });
  });

  router.get('/emails/:id', async (ctx) => {
    const view = ctx.state.dashboard;
    const id = ctx.params.id!;
    const [email, events, message] = await Promise.all([
      deps.services.emails.get(view.workspace.id, id),
      deps.services.emails.events(view.workspace.id, id),
      parsedMessage(deps, view, id),
    ]);
    const recipients = email.recipients.map(
      (r) => html`<tr><td>${r.email}</td><td>${badge(r.status)}</td><td>${r.attempts}</td><td class="wrap">${r.last_response ? `${r.last_response.code ?? ''} ${r.last_response.message ?? ''}` : ''}</td></tr>`,
    );
    const attempts = email.attempts.map(
      (a) => html`<tr><td>${when(a.started_at)}</td><td>${a.recipient}</td><td>${badge(a.outcome)}</td><td>${a.mx_host}</td><td class="wrap">${a.code ?? ''} ${a.response ?? ''}</td><td>${a.duration_ms} ms${a.tls ? ', TLS' : ''}</td></tr>`,
    );
    const timeline = events.map((e) => html`<li>${when(e.created_at)} <strong>${e.type}</strong></li>`);
    const headers = message?.headerLines.map((h) => h.line).join('\n');
    const preview = message?.html
      ? html`<iframe class="preview" sandbox="" src="/dashboard/emails/${email.id}/preview" title="HTML preview" referrerpolicy="no-referrer"></iframe>`
      : message?.text
        ? html`<pre>${message.text}</pre>`
        : html`<p class="muted">No content stored yet.</p>`;
    ctx.body = page(view, {
      title: email.subject || '(no subject)',
      section: 'emails',
      body: html`<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(email.status)}${email.test ? html` <span class="badge">test</span>` : ''}</dd>
<dt>From</dt><dd>${email.from}</dd><dt>To</dt><dd>${email.to.join(', ')}</dd><dt>Created</dt><dd>${when(email.created_at)}</dd>
<dt>Type</dt><dd>${email.priority}, via ${email.intake}</dd><dt>Id</dt><dd><code>${email.id}</code></dd></dl></div>
<h2>Recipients</h2>${table(['Recipient', 'Status', 'Attempts', 'Last reply'], recipients, 'No recipients.')}
<h2>Events</h2>${timeline.length ? html`<ul class="timeline" id="events">${timeline}</ul>` : html`<p class="muted">No events yet.</p>`}
<h2>Delivery attempts</h2>${table(['When', 'Recipient', 'Outcome', 'MX', 'Remote reply', 'Time'], attempts, 'No delivery attempts yet.')}
<h2>Preview</h2>${preview}
<h2>Headers</h2>${headers ? html`<pre>${headers}</pre>` : html`<p class="muted">No content stored yet.</p>`}`,
    });
  });

  router.get('/emails/:id/preview', async (ctx) => {
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
export function sandboxedPreview(ctx: { set(name: string, value: string): void; type: string; body: unknown }, markup: string | null): void {
  ctx.set('Content-Security-Policy', "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; frame-ancestors 'self'");
  ctx.set('X-Frame-Options', 'SAMEORIGIN');
  ctx.type = 'html';
  ctx.body = markup || '<p>No HTML part.</p>';
}

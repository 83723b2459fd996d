import type { DashRoutes } from '../routes.js';
import type { AuthenticationResults } from '../../../../receiving/routes/authenticate-message.js';
import { ROUTE_ACTIONS } from '../../../../store/receiving.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { actionButton, badge, page, table, when, ifAllowed, postForm } from '../layout.js';
import { redirectWithNotice, takeNotice } from '../session.js';
import { sandboxedPreview } from './emails.js';

const str = (value: unknown): string => (typeof value === 'string' ? value : '');

/** pass is good, fail is bad, anything else (none, neutral, softfail, temperror) is neither. */
const authBadge = (name: string, result: string) =>
  html`<span class="badge ${result === 'pass' ? 'good' : result === 'fail' ? 'bad' : 'wait'}">${name} ${result}</span>`;
const authBadges = (a: AuthenticationResults) =>
  html`${authBadge('SPF', a.spf.result)} ${authBadge('DKIM', a.dkim.result)} ${authBadge('DMARC', a.dmarc.result)}`;

const size = (bytes: number) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
      ? `${(bytes / 1024).toFixed(1)} KB`
      : `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** Routes and received mail: the dashboard's view of receiving. */
export function registerReceivingRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/receiving', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const [routes, received] = await Promise.all([
      deps.services.routes.list(view.workspace.id, { limit: 100, offset: 0 }),
      deps.services.receivedEmails.list(view.workspace.id, { after: str(ctx.query.after), limit: '50' }),
    ]);
    const routeRows = routes.items.map(
      (
        r,
      ) => html`<tr><td>${r.address}${r.kind === 'address' ? html` · <a href="/dashboard/receiving/inboxes/${r.id}">threads</a>` : ''}</td><td>${badge(r.action)}</td><td>${r.name ?? ''}</td><td>${when(r.last_received_at)}</td>
<td>${actionButton(view, `/dashboard/receiving/routes/${r.id}/remove`, 'Remove')}</td></tr>`,
    );
    const mailRows = received.data.map(
      (
        m,
      ) => html`<tr><td><a href="/dashboard/receiving/${m.id}">${m.subject || '(no subject)'}</a></td><td class="wrap">${m.from}</td>
<td class="wrap">${m.received_for.join(', ')}</td><td>${authBadges(m.authentication)}</td><td>${when(m.created_at)}</td></tr>`,
    );
    const more = received.has_more
      ? html`<p><a href="/dashboard/receiving?${new URLSearchParams({ after: received.next_cursor ?? '' }).toString()}">Older messages →</a></p>`
      : '';
    ctx.body = page(view, {
      title: 'Receiving',
      section: 'receiving',
      notice: takeNotice(ctx),
      body: html`${ifAllowed(
        view,
        '/dashboard/receiving/routes',
        html`<div class="card"><h2>Add a route</h2>
<p class="muted">Mail is taken only for addresses a route covers, on verified domains whose MX points here (see the domain's page); any other address is refused.</p>
${postForm(
  view,
  `/dashboard/receiving/routes`,
  'row',
  html`
<label>Address<input name="address" required placeholder="support@example.com, reply+*@example.com or *@example.com" maxlength="320"></label>
<label>Action<select name="action">${ROUTE_ACTIONS.map((a) => html`<option>${a}</option>`)}</select></label>
<label>Name<input name="name" maxlength="200"></label><button type="submit">Add route</button>`,
)}</div>`,
      )}
${table(['Address', 'Action', 'Name', 'Last received', ''], routeRows, 'No routes: every address is refused.')}
<h2>Received mail</h2>${table(['Subject', 'From', 'To', 'Authentication', 'Received'], mailRows, 'Nothing received yet.')}${more}`,
    });
  });

  router.post('/receiving/routes', 'manage', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const action = ROUTE_ACTIONS.find((a) => a === form.action);
    const route = await deps.services.routes.add(view.workspace.id, {
      address: form.address ?? '',
      action,
      name: form.name || null,
    });
    redirectWithNotice(ctx, '/dashboard/receiving', `Added ${route.address} (${route.action}).`);
  });

  router.post('/receiving/routes/:id/remove', 'manage', async (ctx) => {
    const view = ctx.state.dashboard;
    const route = await deps.services.routes.remove(view.workspace.id, ctx.params.id!);
    redirectWithNotice(ctx, '/dashboard/receiving', `Removed ${route.address}: its mail is refused from now on.`);
  });

  router.get('/receiving/:id', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const [m, raw] = await Promise.all([
      deps.services.receivedEmails.get(view.workspace.id, ctx.params.id!),
      deps.services.receivedEmails.raw(view.workspace.id, ctx.params.id!),
    ]);
    const auth = m.authentication;
    const signatures = auth.dkim.signatures.map(
      (s) => html`<li>${s.domain} (${s.selector ?? '?'}): ${s.result}${s.aligned ? ', aligned' : ''}</li>`,
    );
    const attachments = m.attachments.map(
      (a) =>
        html`<tr><td>${a.filename ?? '(no name)'}</td><td>${a.content_type}</td><td>${a.content_disposition}</td><td>${size(a.size)}</td></tr>`,
    );
    const preview = m.html
      ? html`<iframe class="preview" sandbox="" src="/dashboard/receiving/${m.id}/preview" title="HTML preview" referrerpolicy="no-referrer"></iframe>`
      : m.text
        ? html`<pre>${m.text}</pre>`
        : html`<p class="muted">No text or HTML part.</p>`;
    // The header block as it arrived, in order and with repeated headers (Received) all shown.
    const end = raw.indexOf('\r\n\r\n');
    const headers = raw.subarray(0, end >= 0 ? end : Math.min(raw.length, 64 * 1024)).toString('utf8');
    ctx.body = page(view, {
      title: m.subject || '(no subject)',
      section: 'receiving',
      body: html`<div class="card"><dl class="facts"><dt>From</dt><dd>${m.from}</dd><dt>To</dt><dd>${m.to.join(', ')}</dd>
${m.cc.length ? html`<dt>Cc</dt><dd>${m.cc.join(', ')}</dd>` : ''}<dt>Received for</dt><dd>${m.received_for.join(', ')}</dd>
<dt>Received</dt><dd>${when(m.created_at)} from ${m.envelope.remote_address}${m.envelope.tls ? ' over TLS' : ''}</dd>
<dt>Envelope sender</dt><dd>${m.envelope.mail_from || '(null sender)'}</dd>
<dt>Authentication</dt><dd>${authBadges(auth)}${auth.arc ? html` ${authBadge('ARC', auth.arc.result)}` : ''}</dd>
${m.in_reply_to_email_id ? html`<dt>Replies to</dt><dd><a href="/dashboard/emails/${m.in_reply_to_email_id}">${m.in_reply_to_email?.subject || m.in_reply_to_email_id}</a>${m.in_reply_to_email?.campaign_id ? ' (a campaign message)' : ''}</dd>` : ''}
<dt>Id</dt><dd><code>${m.id}</code></dd></dl></div>
${signatures.length ? html`<h2>DKIM signatures</h2><ul>${signatures}</ul>` : ''}
<h2>Preview</h2>${preview}
<h2>Attachments</h2><p class="muted">Download them through the API, with a key of this workspace.</p>${table(['Name', 'Type', 'Disposition', 'Size'], attachments, 'No attachments.')}
<h2>Headers</h2><pre>${headers}</pre>`,
    });
  });

  router.get('/receiving/:id/preview', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const m = await deps.services.receivedEmails.get(view.workspace.id, ctx.params.id!);
    sandboxedPreview(ctx, m.html);
  });
}

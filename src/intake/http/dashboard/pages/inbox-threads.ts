import type { DashRoutes } from '../routes.js';
import { validationError } from '../../../../shared/errors.js';
import { parsePage } from '../../../../store/infra/list-page.js';
import { INBOX_FOLDERS, type InboxFolder } from '../../../../store/inboxes.js';
import type { HttpDeps } from '../../context.js';
import { html } from '../html.js';
import { actionButton, badge, page, table, when } from '../layout.js';
import { redirectWithNotice, takeNotice } from '../session.js';
import { isOneOf } from '../../../../shared/one-of.js';

/** An inbox's conversations in the dashboard: threads by folder or search, one thread's messages, moving and marking them. */

const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const MOVES = ['inbox', 'archive', 'spam', 'trash'] as const;

const labelChips = (labels: Array<{ name: string; color: string }>) =>
  labels.map((l) => html`<span class="badge" style="border-color:${l.color};color:${l.color}">${l.name}</span> `);

export function registerInboxThreadRoutes(router: DashRoutes, deps: HttpDeps): void {
  router.get('/receiving/inboxes/:id', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const threads = deps.services.inboxThreads;
    const inbox = await threads.inbox(view.workspace.id, ctx.params.id!);
    const folder = isOneOf(INBOX_FOLDERS, str(ctx.query.folder)) ? (str(ctx.query.folder) as InboxFolder) : 'inbox';
    const q = str(ctx.query.q).trim();
    if (q.length > 500) throw validationError('q', 'at most 500 characters');
    const pageOf = parsePage({ after: str(ctx.query.after) || undefined, limit: '50' }, 'keyset');
    const { data, more } = q
      ? await threads.search(view.workspace.id, inbox.id, { folders: [folder], query: q }, pageOf)
      : await threads.list(view.workspace.id, inbox.id, { folders: [folder] }, pageOf);
    const rows = data.map(
      (
        t,
      ) => html`<tr><td><a href="/dashboard/receiving/inboxes/${inbox.id}/threads/${t.id}">${t.read ? t.subject || '(no subject)' : html`<strong>${t.subject || '(no subject)'}</strong>`}</a> ${labelChips(t.labels)}</td>
<td class="wrap">${t.from ?? ''}</td><td>${t.email_count}${t.has_attachment ? ' 📎' : ''}${t.has_draft ? ' (draft)' : ''}</td><td>${t.read ? '' : badge('unread')}</td><td>${when(t.received_at)}</td></tr>`,
    );
    const tabs = INBOX_FOLDERS.map((f) =>
      f === folder
        ? html`<strong>${f}</strong> `
        : html`<a href="/dashboard/receiving/inboxes/${inbox.id}?folder=${f}">${f}</a> `,
    );
    const next = more
      ? html`<p><a href="/dashboard/receiving/inboxes/${inbox.id}?${new URLSearchParams({ folder, q, after: data.at(-1)!.id }).toString()}">Older threads →</a></p>`
      : '';
    ctx.body = page(view, {
      title: `Threads of ${inbox.address}`,
      section: 'receiving',
      notice: takeNotice(ctx),
      body: html`<p>${tabs}</p>
<form class="row" method="get" action="/dashboard/receiving/inboxes/${inbox.id}"><input type="hidden" name="folder" value="${folder}">
<label>Search<input name="q" value="${q}" maxlength="500" placeholder="words in the subject, addresses or text"></label><button type="submit">Search</button></form>
${table(['Subject', 'From', 'Messages', '', 'Last activity'], rows, q ? 'No thread matches.' : `No threads in ${folder}.`)}${next}`,
    });
  });

  router.get('/receiving/inboxes/:id/threads/:threadId', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const threads = deps.services.inboxThreads;
    const [thread, messages] = await Promise.all([
      threads.get(view.workspace.id, ctx.params.id!, ctx.params.threadId!),
      threads.messages(view.workspace.id, ctx.params.id!, ctx.params.threadId!, { limit: 100, offset: 0 }),
    ]);
    const base = `/dashboard/receiving/inboxes/${ctx.params.id}/threads/${thread.id}`;
    const cards = messages.data.map(
      (
        m,
      ) => html`<div class="card"><dl class="facts"><dt>${m.direction === 'inbound' ? 'From' : 'Sent from'}</dt><dd>${m.from}</dd><dt>To</dt><dd>${m.to.join(', ')}</dd>
${m.cc.length ? html`<dt>Cc</dt><dd>${m.cc.join(', ')}</dd>` : ''}<dt>${m.direction === 'inbound' ? 'Received' : 'Sent'}</dt><dd>${when(m.received_at)} ${m.read ? '' : badge('unread')}</dd>
${m.attachments.length ? html`<dt>Attachments</dt><dd>${m.attachments.map((a) => a.filename ?? '(no name)').join(', ')}</dd>` : ''}
<dt>Message</dt><dd><a href="${m.direction === 'inbound' ? `/dashboard/receiving/${m.id}` : `/dashboard/emails/${m.id}`}">${m.direction === 'inbound' ? 'the received email' : 'the sent email'}</a></dd></dl>
${m.text ? html`<pre>${m.text}</pre>` : html`<p class="muted">HTML only: see the message.</p>`}</div>`,
    );
    const runs = thread.agent_runs.map(
      (r) =>
        html`<tr><td>${when(r.created_at)}</td><td>${badge(r.status)}</td><td>${r.actions.map((a) => html`${String(a.type)}: ${String(a.result)}${a.detail ? html` <span class="muted">(${String(a.detail)})</span>` : ''}<br>`)}</td><td class="wrap">${r.error ?? ''}</td></tr>`,
    );
    const moves = MOVES.filter((f) => f !== thread.folder).map((f) =>
      actionButton(view, `${base}/folder/${f}`, `Move to ${f}`),
    );
    ctx.body = page(view, {
      title: thread.subject || '(no subject)',
      section: 'receiving',
      notice: takeNotice(ctx),
      body: html`<p>In <a href="/dashboard/receiving/inboxes/${ctx.params.id}?folder=${thread.folder}">${thread.folder}</a> ${labelChips(thread.labels)}</p>
<p>${actionButton(view, `${base}/read/${thread.read ? 'no' : 'yes'}`, thread.read ? 'Mark unread' : 'Mark read')} ${moves}</p>
${cards}
${runs.length ? html`<h2>Agent</h2>${table(['When', 'Run', 'Actions', 'Error'], runs, '')}` : ''}`,
    });
  });

  router.post('/receiving/inboxes/:id/threads/:threadId/read/:state', 'send', async (ctx) => {
    const view = ctx.state.dashboard;
    const thread = await deps.services.inboxThreads.update(view.workspace.id, ctx.params.id!, ctx.params.threadId!, {
      read: ctx.params.state === 'yes',
    });
    redirectWithNotice(
      ctx,
      `/dashboard/receiving/inboxes/${ctx.params.id}/threads/${thread.id}`,
      thread.read ? 'Marked read.' : 'Marked unread.',
    );
  });

  router.post('/receiving/inboxes/:id/threads/:threadId/folder/:folder', 'send', async (ctx) => {
    const view = ctx.state.dashboard;
    const folder = MOVES.find((f) => f === ctx.params.folder);
    if (!folder) throw validationError('folder', `must be one of ${MOVES.join(', ')}`);
    const thread = await deps.services.inboxThreads.update(view.workspace.id, ctx.params.id!, ctx.params.threadId!, {
      folder,
    });
    redirectWithNotice(
      ctx,
      `/dashboard/receiving/inboxes/${ctx.params.id}/threads/${thread.id}`,
      `Moved to ${thread.folder}.`,
    );
  });
}

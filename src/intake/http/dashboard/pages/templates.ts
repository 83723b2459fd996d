import type Router from '@koa/router';
import type { TemplateView } from '../../../../services/templates.js';
import type { HttpDeps } from '../../context.js';
import { formAction } from '../form.js';
import { html } from '../html.js';
import { actionButton, badge, csrfField, page, table, when, type DashView, type Kept } from '../layout.js';
import type { DashState } from '../session.js';
import { redirectWithNotice, takeNotice } from '../session.js';
import { sandboxedPreview } from './emails.js';

const PAGE = { limit: 100, offset: 0 };
const str = (value: unknown): string => (typeof value === 'string' ? value : '');

const createForm = (view: DashView, kept: Kept = {}) => html`<form class="stack card" method="post" action="/dashboard/templates">${csrfField(view.csrf)}
<h2>New template</h2>
<div class="row"><label>Name<input name="name" required maxlength="200" value="${kept.name ?? ''}" placeholder="Welcome"></label>
<label>Alias <span class="muted">(optional: send and read it by this name)</span><input name="alias" maxlength="100" value="${kept.alias ?? ''}" placeholder="welcome-email"></label></div>
<label>Subject<input name="subject" maxlength="998" value="${kept.subject ?? ''}" placeholder="Welcome, {{first_name}}"></label>
<label>HTML<textarea name="html" required rows="10" placeholder="<p>Hello {{first_name}}</p>">${kept.html ?? ''}</textarea></label>
<label>Text <span class="muted">(optional: derived from the HTML when left empty)</span><textarea name="text" rows="4">${kept.text ?? ''}</textarea></label>
<p class="muted">Variables are written <code>{{name}}</code>; a send or a workflow step supplies them.</p>
<div class="actions"><button type="submit">Create template</button></div></form>`;

/** Templates: list, one template with its preview, and a form to create one. */
export function registerTemplateRoutes(router: Router<DashState>, deps: HttpDeps): void {
  const listPage = async (view: DashView, extra: { error?: string; kept?: Kept; notice?: string | undefined } = {}) => {
    const { items } = await deps.services.templates.list(view.workspace.id, PAGE);
    const rows = items.map(
      (t) => html`<tr><td><a href="/dashboard/templates/${t.id}">${t.name}</a></td><td>${t.alias ? html`<code>${t.alias}</code>` : ''}</td><td class="wrap">${t.subject ?? ''}</td><td>${badge(t.status)}</td><td>${when(t.updated_at)}</td></tr>`,
    );
    return page(view, {
      title: 'Templates',
      section: 'templates',
      notice: extra.notice,
      error: extra.error,
      body: html`${table(['Name', 'Alias', 'Subject', 'Status', 'Updated'], rows, 'No templates yet: create one below, with `mailsvc templates create`, or POST /v1/templates.')}
${createForm(view, extra.kept)}`,
    });
  };

  router.get('/templates', async (ctx) => {
    ctx.body = await listPage(ctx.state.dashboard, { notice: takeNotice(ctx) });
  });

  router.post('/templates', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const kept = { name: str(form.name), alias: str(form.alias).trim(), subject: str(form.subject), html: str(form.html), text: str(form.text) };
    await formAction(
      ctx,
      async () => {
        const created = await deps.services.templates.create(view.workspace.id, {
          name: kept.name,
          html: kept.html,
          subject: kept.subject || null,
          text: kept.text || null,
          ...(kept.alias ? { alias: kept.alias } : {}),
        });
        redirectWithNotice(ctx, `/dashboard/templates/${created.id}`, `Template “${created.name}” created.`);
      },
      (error) => listPage(view, { error, kept }),
    );
  });

  router.get('/templates/:id', async (ctx) => {
    const view = ctx.state.dashboard;
    const t: TemplateView = await deps.services.templates.get(view.workspace.id, ctx.params.id!);
    const variables = (t.variables ?? []).map((v) => html`<tr><td><code>${v.key}</code></td><td>${v.type}</td><td>${v.fallback_value ?? ''}</td></tr>`);
    ctx.body = page(view, {
      title: t.name,
      section: 'templates',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(t.status)}${t.has_unpublished_versions ? html` <span class="muted">changed since it was published: mail uses the published version until the next publish</span>` : ''}</dd>
<dt>Alias</dt><dd>${t.alias ? html`<code>${t.alias}</code>` : html`<span class="muted">none</span>`}</dd><dt>Subject</dt><dd>${t.subject ?? html`<span class="muted">none (the send gives it)</span>`}</dd>
<dt>From</dt><dd>${t.from ?? html`<span class="muted">the send's</span>`}</dd><dt>Published</dt><dd>${when(t.published_at)}</dd><dt>Updated</dt><dd>${when(t.updated_at)}</dd><dt>Id</dt><dd><code>${t.id}</code></dd></dl>
<div class="actions">${actionButton(view, `/dashboard/templates/${t.id}/publish`, t.status === 'published' ? 'Publish the current version' : 'Publish', '')}</div></div>
${variables.length > 0 ? html`<h2>Variables</h2>${table(['Name', 'Type', 'Fallback'], variables, '')}` : ''}
<h2>Preview</h2><iframe class="preview" sandbox="" src="/dashboard/templates/${t.id}/preview" title="HTML preview" referrerpolicy="no-referrer"></iframe>
<h2>HTML</h2><pre>${t.html}</pre>
${t.text ? html`<h2>Text</h2><pre>${t.text}</pre>` : ''}
<p class="muted">Send it: <code>POST /v1/emails</code> with <code>"template": {"id": "${t.alias ?? t.id}", "variables": {…}}</code>, or name it in a workflow's send step.</p>`,
    });
  });

  router.get('/templates/:id/preview', async (ctx) => {
    const t = await deps.services.templates.get(ctx.state.dashboard.workspace.id, ctx.params.id!);
    sandboxedPreview(ctx, t.html);
  });

  router.post('/templates/:id/publish', async (ctx) => {
    const t = await deps.services.templates.publish(ctx.state.dashboard.workspace.id, ctx.params.id!);
    redirectWithNotice(ctx, `/dashboard/templates/${t.id}`, `“${t.name}” is published: mail sent with it now uses this version.`);
  });
}

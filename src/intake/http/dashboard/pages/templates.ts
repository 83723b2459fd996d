import type { DashRoutes } from '../routes.js';
import type { TemplateView } from '../../../../services/templates.js';
import type { HttpDeps } from '../../context.js';
import { formAction } from '../form.js';
import { html } from '../html.js';
import { actionButton, badge, page, table, when, type DashView, type Kept, postForm } from '../layout.js';
import { redirectWithNotice, takeNotice } from '../session.js';
import { sandboxedPreview } from './emails.js';

const PAGE = { limit: 100, offset: 0 };
const str = (value: unknown): string => (typeof value === 'string' ? value : '');

const createForm = (view: DashView, kept: Kept = {}) =>
  html`${postForm(
    view,
    `/dashboard/templates`,
    'stack card',
    html`
<h2>New template</h2>
<div class="row"><label>Name<input name="name" required maxlength="200" value="${kept.name ?? ''}" placeholder="Welcome"></label>
<label>Alias <span class="muted">(optional: send and read it by this name)</span><input name="alias" maxlength="100" value="${kept.alias ?? ''}" placeholder="welcome-email"></label></div>
<label>Subject<input name="subject" maxlength="998" value="${kept.subject ?? ''}" placeholder="Welcome, {{first_name}}"></label>
<label>Source language <span class="muted">(MJML compiles to HTML that Outlook and Gmail render)</span><select name="language"><option value="html"${kept.language === 'mjml' ? '' : ' selected'}>HTML</option><option value="mjml"${kept.language === 'mjml' ? ' selected' : ''}>MJML</option></select></label>
<label>Source<textarea name="html" required rows="10" placeholder="<p>Hello {{first_name}}</p> or <mjml><mj-body>…</mj-body></mjml>">${kept.html ?? ''}</textarea></label>
<label>Text <span class="muted">(optional: derived from the HTML when left empty)</span><textarea name="text" rows="4">${kept.text ?? ''}</textarea></label>
<p class="muted">Variables are written <code>{{name}}</code>; a send or a workflow step supplies them.</p>
<div class="actions"><button type="submit">Create template</button></div>`,
  )}`;

/** Sample values from the query string: `v.name=Ada` fills {{name}} in the preview. */
const samplesOf = (query: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(
    Object.entries(query).flatMap(([k, v]) => (k.startsWith('v.') && typeof v === 'string' ? [[k.slice(2), v]] : [])),
  );

/** Templates: list, one template with its studio (preview at two widths, client checks beside the source), and a form to create one. */
export function registerTemplateRoutes(router: DashRoutes, deps: HttpDeps): void {
  /**
   * The studio: sample variables, the preview at desktop and phone widths (a sandboxed frame
   * whose CSP runs no script and loads nothing remote unless asked), and the source with the
   * check's findings beside the lines they point at.
   */
  const studio = async (view: DashView, t: TemplateView, query: Record<string, unknown>) => {
    const samples = samplesOf(query);
    const remote = query.remote === '1';
    const check = await deps.services.templates.check(view.workspace.id, t.id, {
      type: query.type === 'marketing' ? 'marketing' : 'transactional',
    });
    const params = new URLSearchParams(Object.entries(samples).map(([k, v]): [string, string] => [`v.${k}`, v]));
    if (remote) params.set('remote', '1');
    const src = `/dashboard/templates/${t.id}/preview${params.size > 0 ? `?${params}` : ''}`;
    const variableInputs = (t.variables ?? []).map(
      (v) =>
        html`<label><code>${v.key}</code><input name="v.${v.key}" value="${samples[v.key] ?? String(v.sample_value ?? v.fallback_value ?? '')}"></label>`,
    );
    const byLine = new Map<number, string[]>();
    for (const f of check.findings)
      for (const line of f.lines) byLine.set(line, [...(byLine.get(line) ?? []), f.message]);
    const lines = t.html.split('\n').map((text, i) => {
      const notes = byLine.get(i + 1);
      return notes
        ? html`<li class="hit" id="line-${i + 1}"><code>${text}</code><span class="finding-note">${notes.join(' · ')}</span></li>`
        : html`<li><code>${text}</code></li>`;
    });
    const findings = check.findings.map(
      (f) =>
        html`<li class="finding ${f.severity}"><strong>${f.severity}</strong> ${f.message}${f.lines.length ? html` <span class="muted">(line ${f.lines.map((l) => html`<a href="#line-${l}">${l}</a>`)})</span>` : ''}<br><span class="muted">${f.suggestion}</span></li>`,
    );
    return html`<h2>Studio</h2>
<form class="card row" method="get" action="/dashboard/templates/${t.id}">${variableInputs}
<label>Mail type<select name="type"><option value="transactional">transactional</option><option value="marketing"${query.type === 'marketing' ? ' selected' : ''}>marketing</option></select></label>
<label><input type="checkbox" name="remote" value="1"${remote ? ' checked' : ''}> Load remote images</label>
<div class="actions"><button type="submit">Preview and check</button></div></form>
<div class="studio"><section><h3>Source${t.language === 'mjml' ? ' (compiled from MJML)' : ''}</h3><ol class="source">${lines}</ol></section>
<section><h3>Desktop</h3><iframe class="preview desktop" sandbox="" src="${src}" title="Preview at desktop width" referrerpolicy="no-referrer"></iframe>
<h3>Phone</h3><iframe class="preview mobile" sandbox="" src="${src}" title="Preview at phone width" referrerpolicy="no-referrer"></iframe></section></div>
<h3>Checks <span class="muted">(${Math.ceil(check.size / 1024)} KB; client data of ${check.client_data_updated.slice(0, 10)})</span></h3>
${findings.length > 0 ? html`<ul class="findings">${findings}</ul>` : html`<p class="muted">No findings: nothing here breaks in the clients checked.</p>`}`;
  };

  const listPage = async (view: DashView, extra: { error?: string; kept?: Kept; notice?: string | undefined } = {}) => {
    const { items } = await deps.services.templates.list(view.workspace.id, PAGE);
    const rows = items.map(
      (t) =>
        html`<tr><td><a href="/dashboard/templates/${t.id}">${t.name}</a></td><td>${t.alias ? html`<code>${t.alias}</code>` : ''}</td><td class="wrap">${t.subject ?? ''}</td><td>${badge(t.status)}</td><td>${when(t.updated_at)}</td></tr>`,
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

  router.get('/templates', 'read', async (ctx) => {
    ctx.body = await listPage(ctx.state.dashboard, { notice: takeNotice(ctx) });
  });

  router.post('/templates', 'send', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const kept = {
      name: str(form.name),
      alias: str(form.alias).trim(),
      subject: str(form.subject),
      html: str(form.html),
      text: str(form.text),
      language: str(form.language),
    };
    await formAction(
      ctx,
      async () => {
        const created = await deps.services.templates.create(view.workspace.id, {
          name: kept.name,
          ...(kept.language === 'mjml' ? { mjml: kept.html } : { html: kept.html }),
          subject: kept.subject || null,
          text: kept.text || null,
          ...(kept.alias ? { alias: kept.alias } : {}),
        });
        redirectWithNotice(ctx, `/dashboard/templates/${created.id}`, `Template “${created.name}” created.`);
      },
      (error) => listPage(view, { error, kept }),
    );
  });

  router.get('/templates/:id', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const t: TemplateView = await deps.services.templates.get(view.workspace.id, ctx.params.id!);
    const variables = (t.variables ?? []).map(
      (v) => html`<tr><td><code>${v.key}</code></td><td>${v.type}</td><td>${v.fallback_value ?? ''}</td></tr>`,
    );
    ctx.body = page(view, {
      title: t.name,
      section: 'templates',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(t.status)}${t.has_unpublished_versions ? html` <span class="muted">changed since it was published: mail uses the published version until the next publish</span>` : ''}</dd>
<dt>Alias</dt><dd>${t.alias ? html`<code>${t.alias}</code>` : html`<span class="muted">none</span>`}</dd><dt>Subject</dt><dd>${t.subject ?? html`<span class="muted">none (the send gives it)</span>`}</dd>
<dt>From</dt><dd>${t.from ?? html`<span class="muted">the send's</span>`}</dd><dt>Published</dt><dd>${when(t.published_at)}</dd><dt>Updated</dt><dd>${when(t.updated_at)}</dd><dt>Id</dt><dd><code>${t.id}</code></dd></dl>
<div class="actions">${actionButton(view, `/dashboard/templates/${t.id}/publish`, t.status === 'published' ? 'Publish the current version' : 'Publish', '')}</div></div>
${variables.length > 0 ? html`<h2>Variables</h2>${table(['Name', 'Type', 'Fallback'], variables, '')}` : ''}
${await studio(view, t, ctx.query)}
${t.text ? html`<h2>Text</h2><pre>${t.text}</pre>` : ''}
<p class="muted">Send it: <code>POST /v1/emails</code> with <code>"template": {"id": "${t.alias ?? t.id}", "variables": {…}}</code>, or name it in a workflow's send step.</p>`,
    });
  });

  router.get('/templates/:id/preview', 'read', async (ctx) => {
    const preview = await deps.services.templates.preview(ctx.state.dashboard.workspace.id, ctx.params.id!, {
      variables: samplesOf(ctx.query),
    });
    sandboxedPreview(ctx, preview.html, ctx.query.remote === '1');
  });

  router.post('/templates/:id/publish', 'send', async (ctx) => {
    const t = await deps.services.templates.publish(ctx.state.dashboard.workspace.id, ctx.params.id!);
    redirectWithNotice(
      ctx,
      `/dashboard/templates/${t.id}`,
      `“${t.name}” is published: mail sent with it now uses this version.`,
    );
  });
}

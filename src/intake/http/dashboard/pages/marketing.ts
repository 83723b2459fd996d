import type { DashRoutes } from '../routes.js';
import type { CampaignView } from '../../../../services/marketing/campaigns.js';
import type { HttpDeps } from '../../context.js';
import { formAction } from '../form.js';
import { html, type SafeHtml } from '../html.js';
import { actionButton, badge, jsonBlock, page, table, when, type DashView, type Kept, postForm } from '../layout.js';
import { redirectWithNotice, takeNotice } from '../session.js';

const PAGE = { limit: 100, offset: 0 };
const SUBSCRIBER_STATUSES = ['subscribed', 'unsubscribed'] as const;
/** Campaigns on the summary page, each with its counts (one query apiece). */
const RECENT_CAMPAIGNS = 20;
const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const list = (text: string): string[] =>
  text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);

/** A campaign's counts in the order mail moves through them. */
const COUNT_ORDER = [
  'queued',
  'pending',
  'delivered',
  'bounced',
  'failed',
  'suppressed',
  'cancelled',
  'human_opened',
  'human_clicked',
  'machine_opened',
  'machine_clicked',
  'unsubscribed',
  'held_out',
];
/** People's opens and clicks, named plainly; machines' (Apple's prefetch, scanners) apart. */
const COUNT_LABELS: Record<string, string> = {
  human_opened: 'opened',
  human_clicked: 'clicked',
  machine_opened: 'opened by machines only',
  machine_clicked: 'clicked by machines only',
  held_out: 'held out',
};
const label = (k: string) => COUNT_LABELS[k] ?? k;
const countsText = (counts: Record<string, number> | undefined) =>
  counts
    ? COUNT_ORDER.filter((k) => k in counts)
        .map((k) => `${counts[k]} ${label(k)}`)
        .join(', ')
    : '';
const tiles = (counts: Record<string, number>, keys: string[]): SafeHtml =>
  html`<div class="tiles" id="counts">${keys.map((k) => html`<div class="tile"><span class="muted">${label(k)}</span><b>${counts[k] ?? 0}</b></div>`)}</div>`;

/** An A/B test's variants side by side: each one's test sends and people's engagement, and the winner. */
const abTest = (c: CampaignView): SafeHtml => {
  if (!c.variants) return html``;
  const pct = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
  const rows = c.variants.map(
    (
      v,
    ) => html`<tr><td>${v.id}${c.winner?.variant === v.id ? html` ${badge('winner')}` : ''}${v.name ? html`<br><span class="muted">${v.name}</span>` : ''}</td><td class="wrap">${v.subject}</td><td>${v.stats.sent}</td><td>${v.stats.delivered}</td>
<td>${v.stats.human_opened} (${pct(v.stats.human_open_rate)})</td><td>${v.stats.human_clicked} (${pct(v.stats.human_click_rate)})</td></tr>`,
  );
  const decided = c.winner
    ? html`Variant ${c.winner.variant} won (${c.winner.chosen_by === 'manual' ? 'chosen by hand' : c.winner.chosen_by === 'tie' ? 'a tie: the first of the best' : `the better ${c.winner_metric === 'human_open_rate' ? 'open' : 'click'} rate of people`}) ${when(c.winner.chosen_at)}; ${c.winner.stats?.sent ?? 0} sent to the rest.`
    : html`The winner, by people's ${c.winner_metric === 'human_open_rate' ? 'open' : 'click'} rate, is chosen ${c.winner_due_at ? html`at ${when(c.winner_due_at)}` : `${c.test_duration} after the variants are sent`}.`;
  return html`<h2>A/B test</h2><p class="muted">${c.test_percentage}% of the recipients in the test, split evenly; ${c.holdout_percentage}% held out. ${decided}</p>
${table(['Variant', 'Subject', 'Sent', 'Delivered', 'Opened by people', 'Clicked by people'], rows, '')}`;
};

const subscriberForm = (view: DashView, kept: Kept = {}) =>
  html`${postForm(
    view,
    `/dashboard/subscribers`,
    'stack card',
    html`
<h2>Add a subscriber</h2><div class="row"><label>Email<input name="email" type="email" required maxlength="320" value="${kept.email ?? ''}"></label>
<label>First name<input name="first_name" maxlength="200" value="${kept.first_name ?? ''}"></label><label>Last name<input name="last_name" maxlength="200" value="${kept.last_name ?? ''}"></label>
<label>Tags <span class="muted">(comma-separated)</span><input name="tags" value="${kept.tags ?? ''}" placeholder="newsletter, beta"></label></div>
<p class="muted">An address that is already a subscriber is updated (and subscribed again).</p><div class="actions"><button type="submit">Add subscriber</button></div>`,
  )}`;

async function campaignForm(deps: HttpDeps, view: DashView, kept: Kept = {}): Promise<SafeHtml> {
  const [audiences, domains] = await Promise.all([
    deps.services.audiences.list(view.workspace.id, PAGE),
    deps.services.domains.list(view.workspace.id),
  ]);
  const verified = domains.filter((d) => d.status === 'verified').map((d) => d.domain_name);
  return html`${postForm(
    view,
    `/dashboard/campaigns`,
    'stack card',
    html`
<div class="row"><label>Name<input name="name" maxlength="200" value="${kept.name ?? ''}" placeholder="June newsletter"></label>
<label>Audience<select name="audience_id"><option value="">every subscriber (or the tags below)</option>${audiences.items.map((a) => html`<option value="${a.id}" ${kept.audience_id === a.id ? html`selected` : ''}>${a.name} (${a.member_count})</option>`)}</select></label>
<label>Tags <span class="muted">(optional, comma-separated)</span><input name="tags" value="${kept.tags ?? ''}"></label></div>
<div class="row"><label>From name<input name="from_name" required maxlength="200" value="${kept.from_name ?? ''}" placeholder="Acme"></label>
<label>From address<input name="from_email" type="email" required maxlength="320" value="${kept.from_email ?? ''}" placeholder="news@${verified[0] ?? 'example.com'}"></label></div>
<label>Subject<input name="subject" required maxlength="998" value="${kept.subject ?? ''}"></label>
<label>HTML<textarea name="html" required rows="10" placeholder="<p>Hello {{first_name}}</p>">${kept.html ?? ''}</textarea></label>
<label class="check"><input type="checkbox" name="test" value="1" ${kept.test === '1' ? html`checked` : ''}> Test campaign: runs everything, delivers nothing (as a test key)</label>
<p class="muted">${verified.length > 0 ? `A live campaign sends from a verified domain: ${verified.join(', ')}.` : 'A live campaign needs a verified domain (Domains); a test campaign may use a domain that is only added.'} Every message carries a one-click unsubscribe link.</p>
<div class="actions"><button type="submit" name="send" value="1">Send now</button><button type="submit" name="send" value="0" class="secondary">Save as draft</button></div>`,
  )}`;
}

/** Subscribers, audiences and campaigns: the summary, a page for each subscriber and campaign, and forms to add them. */
export function registerMarketingRoutes(router: DashRoutes, deps: HttpDeps): void {
  const summary = async (view: DashView, extra: { error?: string; kept?: Kept; notice?: string | undefined } = {}) => {
    const workspaceId = view.workspace.id;
    const [subscribers, counts, audiences, campaigns] = await Promise.all([
      deps.services.subscribers.list({ workspaceId }, { limit: 50, offset: 0 }),
      Promise.all(
        SUBSCRIBER_STATUSES.map(
          async (status) =>
            [
              status,
              (await deps.services.subscribers.list({ workspaceId, status }, { limit: 1, offset: 0 })).total,
            ] as const,
        ),
      ),
      deps.services.audiences.list(workspaceId, PAGE),
      deps.services.campaigns.list(workspaceId, { limit: RECENT_CAMPAIGNS, offset: 0 }),
    ]);
    // The list leaves counts out (they cost a query per campaign); the page shows them.
    const withCounts = await Promise.all(campaigns.items.map((c) => deps.services.campaigns.get(workspaceId, c.id)));
    const subscriberRows = subscribers.items.map(
      (s) =>
        html`<tr><td><a href="/dashboard/subscribers/${s.id}">${s.email}</a></td><td>${[s.first_name, s.last_name].filter(Boolean).join(' ')}</td><td>${badge(s.status)}</td><td>${s.tags.join(', ')}</td><td>${when(s.created_at)}</td></tr>`,
    );
    const audienceRows = audiences.items.map(
      (a) => html`<tr><td>${a.name}</td><td>${a.member_count}</td><td>${when(a.created_at)}</td></tr>`,
    );
    const campaignRows = withCounts.map(
      (
        c,
      ) => html`<tr><td><a href="/dashboard/campaigns/${c.id}">${c.name}</a>${c.test ? html` <span class="badge">test</span>` : ''}</td><td class="wrap">${c.subject}</td><td>${badge(c.status)}</td><td>${c.recipients}</td>
<td class="wrap counts">${countsText(c.counts)}</td><td>${when(c.sent_at ?? c.created_at)}</td></tr>`,
    );
    return page(view, {
      title: 'Subscribers & campaigns',
      section: 'marketing',
      notice: extra.notice,
      error: extra.error,
      body: html`<div class="card"><dl class="facts"><dt>Subscribers</dt><dd>${subscribers.total}</dd>${counts.map(([status, n]) => html`<dt>${status[0]!.toUpperCase() + status.slice(1)}</dt><dd>${n}</dd>`)}
<dt>Audiences</dt><dd>${audiences.total}</dd><dt>Campaigns</dt><dd>${campaigns.total}</dd></dl></div>
<h2>Campaigns</h2><p><a href="/dashboard/campaigns/new">New campaign →</a></p>${table(['Name', 'Subject', 'Status', 'Recipients', 'Counts', 'When'], campaignRows, 'No campaigns yet.')}
<h2>Audiences</h2>${table(['Name', 'Members', 'Created'], audienceRows, 'No audiences.')}
<h2>Latest subscribers</h2>${table(['Email', 'Name', 'Status', 'Tags', 'Added'], subscriberRows, 'No subscribers yet.')}
${subscriberForm(view, extra.kept)}`,
    });
  };

  router.get('/marketing', 'read', async (ctx) => {
    ctx.body = await summary(ctx.state.dashboard, { notice: takeNotice(ctx) });
  });

  router.post('/subscribers', 'send', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const kept = {
      email: str(form.email),
      first_name: str(form.first_name),
      last_name: str(form.last_name),
      tags: str(form.tags),
    };
    await formAction(
      ctx,
      async () => {
        const { subscriber, created } = await deps.services.subscribers.upsert(
          view.workspace.id,
          {
            email: kept.email,
            first_name: kept.first_name || null,
            last_name: kept.last_name || null,
            tags: list(kept.tags),
            status: 'subscribed',
          },
          'dashboard',
        );
        redirectWithNotice(
          ctx,
          `/dashboard/subscribers/${subscriber.id}`,
          `${subscriber.email} ${created ? 'added' : 'updated'}.`,
        );
      },
      (error) => summary(view, { error, kept }),
    );
  });

  router.get('/subscribers/:id', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const s = await deps.services.subscribers.get(view.workspace.id, ctx.params.id!);
    const [counts, emails] = await Promise.all([
      deps.services.emails.countsOfSubscriber(view.workspace.id, s.id),
      deps.services.emails.list(view.workspace.id, { subscriber_id: s.id, limit: '20' }),
    ]);
    const rows = emails.data.map(
      (e) =>
        html`<tr><td class="wrap"><a href="/dashboard/emails/${e.id}">${e.subject || '(no subject)'}</a></td><td>${badge(e.status)}</td><td>${when(e.created_at)}</td></tr>`,
    );
    ctx.body = page(view, {
      title: s.email,
      section: 'marketing',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(s.status)}${s.unsubscribed_at ? html` <span class="muted">since ${when(s.unsubscribed_at)}</span>` : ''}</dd>
<dt>Name</dt><dd>${[s.first_name, s.last_name].filter(Boolean).join(' ') || html`<span class="muted">—</span>`}</dd><dt>Tags</dt><dd>${s.tags.join(', ') || html`<span class="muted">none</span>`}</dd>
<dt>Source</dt><dd>${s.source}</dd>${s.external_id ? html`<dt>External id</dt><dd>${s.external_id}</dd>` : ''}<dt>Added</dt><dd>${when(s.created_at)}</dd><dt>Updated</dt><dd>${when(s.updated_at)}</dd><dt>Id</dt><dd><code>${s.id}</code></dd></dl></div>
${s.metadata ? html`<h2>Properties</h2>${jsonBlock(s.metadata)}` : ''}
<h2>Mail from campaigns and workflows</h2>${tiles(counts, ['delivered', 'bounced', 'opened', 'clicked', 'complained', 'suppressed'])}
${table(['Subject', 'Status', 'Created'], rows, 'No campaign or workflow mail to this subscriber yet.')}
${emails.has_more ? html`<p><a href="/dashboard/emails?${new URLSearchParams({ q: s.email }).toString()}">All mail to ${s.email} →</a></p>` : ''}`,
    });
  });

  router.get('/campaigns/new', 'send', async (ctx) => {
    const view = ctx.state.dashboard;
    ctx.body = page(view, { title: 'New campaign', section: 'marketing', body: await campaignForm(deps, view) });
  });

  router.post('/campaigns', 'send', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const kept = Object.fromEntries(
      ['name', 'audience_id', 'tags', 'from_name', 'from_email', 'subject', 'html', 'test'].map((k) => [
        k,
        str(form[k]),
      ]),
    );
    await formAction(
      ctx,
      async () => {
        const created: CampaignView = await deps.services.campaigns.create(
          view.workspace,
          {
            name: kept.name || undefined,
            subject: kept.subject!,
            fromName: kept.from_name!,
            fromEmail: kept.from_email!,
            html: kept.html!,
            tags: kept.tags ? list(kept.tags) : undefined,
            audienceId: kept.audience_id || undefined,
          },
          kept.test === '1',
          { send: form.send !== '0' },
        );
        redirectWithNotice(
          ctx,
          `/dashboard/campaigns/${created.id}`,
          created.status === 'draft' ? `“${created.name}” is saved as a draft.` : `“${created.name}” is being sent.`,
        );
      },
      async (error) =>
        page(view, { title: 'New campaign', section: 'marketing', error, body: await campaignForm(deps, view, kept) }),
    );
  });

  router.get('/campaigns/:id', 'read', async (ctx) => {
    const view = ctx.state.dashboard;
    const c = await deps.services.campaigns.get(view.workspace.id, ctx.params.id!);
    const emails = await deps.services.emails.list(view.workspace.id, { campaign_id: c.id, limit: '20' });
    const rows = emails.data.map(
      (e) =>
        html`<tr><td class="wrap"><a href="/dashboard/emails/${e.id}">${e.to.join(', ')}</a></td><td>${badge(e.status)}</td><td>${when(e.created_at)}</td></tr>`,
    );
    const actions = [
      ...(c.status === 'draft' ? [actionButton(view, `/dashboard/campaigns/${c.id}/send`, 'Send now', '')] : []),
      ...(['queuing', 'testing', 'sending'].includes(c.status)
        ? [actionButton(view, `/dashboard/campaigns/${c.id}/cancel`, 'Cancel', 'danger')]
        : []),
    ];
    ctx.body = page(view, {
      title: c.name,
      section: 'marketing',
      notice: takeNotice(ctx),
      body: html`<div class="card"><dl class="facts"><dt>Status</dt><dd>${badge(c.status)}${c.test ? html` <span class="badge">test</span>` : ''}</dd><dt>Subject</dt><dd>${c.subject}</dd><dt>From</dt><dd>${c.from}</dd>
<dt>Recipients</dt><dd>${c.audience_id ? html`audience <code>${c.audience_id}</code>` : c.tags && c.tags.length > 0 ? `subscribers tagged ${c.tags.join(', ')}` : 'every subscriber'}${c.topic_id ? html`, topic <code>${c.topic_id}</code>` : ''}</dd>
<dt>Created</dt><dd>${when(c.created_at)}</dd>${c.scheduled_at ? html`<dt>Scheduled for</dt><dd>${when(c.scheduled_at)}</dd>` : ''}<dt>Queued</dt><dd>${when(c.queued_at)}</dd><dt>Sent</dt><dd>${when(c.sent_at)}</dd>
${c.cancelled_at ? html`<dt>Cancelled</dt><dd>${when(c.cancelled_at)}</dd>` : ''}<dt>Id</dt><dd><code>${c.id}</code></dd></dl>${actions.length > 0 ? html`<div class="actions">${actions}</div>` : ''}</div>
<h2>Counts</h2>${tiles(c.counts ?? {}, COUNT_ORDER)}
<p class="muted">Opened and clicked count people; Apple Mail Privacy Protection's prefetch and security scanners are counted apart.</p>
${abTest(c)}
<h2>Messages</h2>${table(['To', 'Status', 'Created'], rows, c.status === 'draft' ? 'Nothing is sent until the campaign is.' : 'No messages queued yet.')}
${emails.has_more ? html`<p class="muted">The 20 newest; the counts above cover them all.</p>` : ''}
${c.html ? html`<h2>Content</h2><pre>${c.html}</pre>` : ''}`,
    });
  });

  router.post('/campaigns/:id/send', 'send', async (ctx) => {
    const view = ctx.state.dashboard;
    const current = await deps.services.campaigns.get(view.workspace.id, ctx.params.id!);
    const c = await deps.services.campaigns.send(view.workspace, current.id, null, current.test);
    redirectWithNotice(ctx, `/dashboard/campaigns/${c.id}`, `“${c.name}” is being sent.`);
  });

  router.post('/campaigns/:id/cancel', 'send', async (ctx) => {
    const c = await deps.services.campaigns.cancel(ctx.state.dashboard.workspace.id, ctx.params.id!);
    redirectWithNotice(ctx, `/dashboard/campaigns/${c.id}`, `“${c.name}” is ${c.status}.`);
  });
}

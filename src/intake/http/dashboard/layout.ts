import type { Permission, Role } from '../../../services/users.js';
import type { DashboardSessionInfo } from '../../../services/dashboard-auth.js';
import type { Workspace } from '../../../store/workspaces.js';
import { assets } from './assets.js';
import { html, type SafeHtml } from './html.js';

/** What every signed-in page knows: set by the session middleware. */
export interface DashView {
  session: DashboardSessionInfo;
  workspace: Workspace;
  workspaces: Workspace[];
  csrf: string;
  /** The signed-in person's role here (the shared password and CLI links act as an owner). */
  role: Role;
  /** Whether this role may request `method path` (routes.ts, the same check the middleware runs). */
  may(method: 'GET' | 'POST', path: string): boolean;
  /** Whether this role has `permission` (for what a page shows inside itself: secrets). */
  can(permission: Permission): boolean;
}

const SECTIONS = [
  ['overview', 'Overview'],
  ['emails', 'Emails'],
  ['templates', 'Templates'],
  ['keys', 'API keys'],
  ['domains', 'Domains'],
  ['webhooks', 'Webhooks'],
  ['marketing', 'Subscribers & campaigns'],
  ['imports', 'Imports'],
  ['suppressions', 'Suppressions'],
  ['receiving', 'Receiving'],
  ['workflows', 'Workflows'],
  ['delivery', 'Delivery'],
  ['team', 'Team'],
  ['audit', 'Audit log'],
  ['oauth', 'Connected apps'],
] as const;
type Section = (typeof SECTIONS)[number][0];

/** The hidden input every form carries; the middleware refuses a POST without it. */
const csrfField = (token: string) => html`<input type="hidden" name="_csrf" value="${token}">`;

/**
 * A form that changes something; nothing at all for a role that may not post it (the same
 * check as the middleware's), so a page never offers what would be refused. Pages draw every
 * POST form through this or actionButton (a unit test holds them to it).
 */
export const postForm = (view: DashView, action: string, className: string, inner: SafeHtml) =>
  view.may('POST', action)
    ? html`<form class="${className}" method="post" action="${action}">${csrfField(view.csrf)}${inner}</form>`
    : html``;

/** Markup shown only to a role that may post to `action` (a card around a form, its heading). */
export const ifAllowed = (view: DashView, action: string, markup: SafeHtml) =>
  view.may('POST', action) ? markup : html``;

/** A POST button in its own small form (revoke, verify, replay...); nothing for a role that may not. */
export const actionButton = (view: DashView, action: string, label: string, className = 'secondary') =>
  postForm(view, action, 'inline', html`<button type="submit" class="${className}">${label}</button>`);

/** A read-only field and a button that copies it. */
export const copyField = (id: string, value: string, label = 'Copy') =>
  html`<span class="secret"><input id="${id}" readonly value="${value}" aria-label="${label}"><button type="button" class="secondary" data-copy="${id}">${label}</button></span>`;

const GOOD = new Set([
  'normal',
  'warm',
  'delivered',
  'verified',
  'succeeded',
  'enabled',
  'subscribed',
  'sent',
  'active',
  'opened',
  'clicked',
  'webhook',
  'completed',
  'ok',
]);
const BAD = new Set([
  'bounced',
  'failed',
  'complained',
  'suppressed',
  'disabled',
  'revoked',
  'cancelled',
  'unsubscribed',
  'reject',
  'failing',
  'paused',
]);
export const badge = (status: string) =>
  html`<span class="badge ${GOOD.has(status) ? 'good' : BAD.has(status) ? 'bad' : 'wait'}">${status}</span>`;

/** ISO timestamps shown to the second, in UTC (the API's zone); the exact time on hover. */
export const when = (iso: string | null | undefined) =>
  iso
    ? html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 19).replace('T', ' ')}</time>`
    : html`<span class="muted">—</span>`;

/** To the millisecond, for timelines where events a moment apart must read in order. */
export const exactly = (iso: string | null | undefined) =>
  iso ? html`<time datetime="${iso}">${iso.slice(0, 23).replace('T', ' ')}</time>` : html`<span class="muted">—</span>`;

/** A value of a form to show again after an error, with the rest of the page. */
export type Kept = Record<string, string>;

/** JSON for people: indented, in a block that wraps. */
export const jsonBlock = (value: unknown) => html`<pre class="json">${JSON.stringify(value, null, 2)}</pre>`;

/** A card showing a secret once (a new key, a signing secret), with a copy button. */
export const secretCard = (id: string, shown: { title: string; note: string; secret: string }) =>
  html`<div class="card" id="${id}"><h2>${shown.title}</h2><p>${shown.note}</p>${copyField(`${id}-value`, shown.secret)}</div>`;

export const table = (head: string[], rows: SafeHtml[], empty: string) =>
  rows.length === 0
    ? html`<p class="muted">${empty}</p>`
    : html`<div class="scroll"><table><thead><tr>${head.map((h) => html`<th>${h}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div>`;

const shell = (title: string, header: SafeHtml | string, body: SafeHtml) => html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title} · mailsvc</title>
<link rel="stylesheet" href="${assets.css.path}"><script src="${assets.js.path}" defer></script>
</head><body>${header}<main>${body}</main></body></html>`;

interface PageOptions {
  title: string;
  /** `account`: the signed-in person's own page, linked beside Sign out rather than in the workspace's sections. */
  section: Section | 'account';
  body: SafeHtml;
  notice?: string | undefined;
  error?: string | undefined;
}

export function page(view: DashView, options: PageOptions): string {
  const switcher =
    view.workspaces.length > 1
      ? html`<form method="post" action="/dashboard/workspace">${csrfField(view.csrf)}<select name="workspace" aria-label="Workspace">${view.workspaces.map(
          (w) => html`<option value="${w.id}" ${w.id === view.workspace.id ? html`selected` : ''}>${w.name}</option>`,
        )}</select><button type="submit" class="secondary">Switch</button></form>`
      : html`<span class="ws-name">${view.workspace.name}</span>`;
  const header = html`<header><a class="brand" href="/dashboard">mailsvc</a>${switcher}
<a class="account" href="/dashboard/account" ${options.section === 'account' ? html`aria-current="page"` : ''}>Account</a><form method="post" action="/dashboard/logout">${csrfField(view.csrf)}<button type="submit" class="secondary">Sign out</button></form>
<nav>${SECTIONS.filter(([key]) => view.may('GET', `/dashboard/${key}`)).map(([key, label]) => html`<a href="/dashboard/${key}" ${key === options.section ? html`aria-current="page"` : ''}>${label}</a>`)}</nav></header>`;
  const body = html`<h1>${options.title}</h1>${options.notice ? html`<div class="notice" role="status">${options.notice}</div>` : ''}${
    options.error ? html`<div class="error" role="alert">${options.error}</div>` : ''
  }${options.body}`;
  return shell(options.title, header, body).value;
}

/** Pages shown before sign-in and error pages without a session. */
export function plainPage(title: string, body: SafeHtml): string {
  return shell(
    title,
    html`<header><a class="brand" href="/dashboard">mailsvc</a></header>`,
    html`<div class="login">${body}</div>`,
  ).value;
}

import type { DashRoutes } from '../routes.js';
import type Router from '@koa/router';
import { OPERATOR_CLIENT, scopesForRole } from '../../../../services/oauth.js';
import { allows, type Role } from '../../../../services/users.js';
import { actingAs } from '../../../../shared/actor.js';
import { AppError } from '../../../../shared/errors.js';
import type { Workspace } from '../../../../store/workspaces.js';
import type { Ctx, HttpDeps, State } from '../../context.js';
import { CONSENT_PATH, OFFERED_SCOPES } from '../../oauth/provider.js';
import { html } from '../html.js';
import { actionButton, badge, page, plainPage, table, when } from '../layout.js';
import { readForm, redirectWithNotice, sessionActor, SESSION_COOKIE, takeNotice } from '../session.js';

/**
 * The person's side of OAuth: the consent page an app's authorization request lands on (after
 * sign-in), and "Connected apps", where grants are listed and revoked and an admin removes
 * clients. The protocol is oidc-provider's (intake/http/oauth/provider.ts); this page reads its
 * interaction and hands back the person's answer.
 */

const PROTOCOL_SCOPES = new Set(['openid', 'offline_access']);
const MAX_LISTED = 100;

/** The workspaces a session may grant access to, with the person's role in each. */
/**
 * The workspaces a grant may name: those the person has a role in, less those that require a
 * second factor they have not set up (there, the dashboard refuses them every change until
 * they enrol; handing an app a token would be one).
 */
async function grantableWorkspaces(
  deps: HttpDeps,
  userId: string | null,
): Promise<{ choices: Array<{ workspace: Workspace; role: Role }>; needEnrolment: Workspace[] }> {
  const all = await deps.services.workspaces.list();
  if (userId === null) return { choices: all.map((workspace) => ({ workspace, role: 'owner' })), needEnrolment: [] };
  const choices: Array<{ workspace: Workspace; role: Role }> = [];
  const needEnrolment: Workspace[] = [];
  for (const workspace of all) {
    const role = await deps.services.users.roleOf(userId, workspace.id);
    if (!role) continue;
    const gate = await deps.services.twoFactor.gate(userId, workspace.id);
    if (gate.required && !gate.enrolled) needEnrolment.push(workspace);
    else choices.push({ workspace, role });
  }
  return { choices, needEnrolment };
}

const oauthServer = (deps: HttpDeps) => {
  if (!deps.oauth) throw new AppError('not_found', 'The authorization server is not running');
  return deps.oauth;
};

/** The interaction the authorization request started, or a page that says it is gone. */
async function interactionOf(ctx: Ctx, deps: HttpDeps) {
  const provider = await oauthServer(deps).provider();
  let details;
  try {
    details = await provider.interactionDetails(ctx.req, ctx.res);
  } catch {
    throw new AppError(
      'validation_error',
      'This authorization request has expired or was opened in another browser. Go back to the app and connect again.',
    );
  }
  if (details.uid !== ctx.params.uid)
    throw new AppError(
      'validation_error',
      'This authorization request does not belong to this page. Go back to the app and connect again.',
    );
  const client = await provider.Client.find(String(details.params.client_id ?? ''));
  if (!client) throw new AppError('validation_error', 'The app that asked is no longer registered.');
  const asked = String(details.params.scope ?? '')
    .split(' ')
    .filter((s) => s !== '');
  return { provider, details, client, asked };
}

/** Hands the answer back to oidc-provider and follows it to the app's redirect URI. */
async function finish(ctx: Ctx, deps: HttpDeps, result: Record<string, unknown>): Promise<void> {
  const returnTo = await (
    await oauthServer(deps).provider()
  ).interactionResult(ctx.req, ctx.res, result, {
    mergeWithLastSubmission: false,
  });
  ctx.status = 303;
  ctx.redirect(returnTo);
}

function consentPage(
  csrf: string,
  uid: string,
  shown: {
    clientName: string;
    redirectHost: string;
    scopes: string[];
    checked: Set<string>;
    choices: Array<{ workspace: Workspace; role: Role }>;
    error?: string;
  },
): string {
  const { choices } = shown;
  const chooser =
    choices.length === 1
      ? html`<p>Workspace: <strong>${choices[0]!.workspace.name}</strong> (your role: ${choices[0]!.role})</p><input type="hidden" name="workspace" value="${choices[0]!.workspace.id}">`
      : html`<label>Workspace<select name="workspace">${choices.map((c) => html`<option value="${c.workspace.id}">${c.workspace.name} (${c.role})</option>`)}</select></label>`;
  const boxes = shown.scopes.map(
    (s) =>
      html`<label class="check"><input type="checkbox" name="scope_${s}" value="1" ${shown.checked.has(s) ? html`checked` : ''}> <code>${s}</code></label>`,
  );
  return plainPage(
    'Authorize an app',
    html`<div class="card"><h1>Connect ${shown.clientName}?</h1>${shown.error ? html`<div class="error" role="alert">${shown.error}</div>` : ''}
<p><strong>${shown.clientName}</strong> asks for access to mailsvc. After you answer, you go back to <strong>${shown.redirectHost}</strong>.</p>
<form method="post" action="${CONSENT_PATH}/${uid}"><input type="hidden" name="_csrf" value="${csrf}">
${chooser}<fieldset><legend>It may (untick what you do not want to give)</legend>${boxes}</fieldset>
<p class="muted">Scopes your role in the workspace does not have are not given. You can revoke this access at any time under Connected apps.</p>
<button type="submit" name="decision" value="approve">Approve</button> <button type="submit" name="decision" value="refuse" class="secondary">Refuse</button></form></div>`,
  );
}

/** The consent routes: public (the session is checked here, so an expired request can still be answered with an error to the app). */
export function registerOAuthConsentRoutes(router: Router<State>, deps: HttpDeps): void {
  const auth = deps.services.dashboardAuth;
  const offered = new Set<string>([...OFFERED_SCOPES, ...PROTOCOL_SCOPES]);

  const load = async (ctx: Ctx) => {
    const found = await interactionOf(ctx, deps);
    const unknown = found.asked.filter((s) => !offered.has(s));
    // A scope this server does not offer: the standard error, sent back to the app (RFC 6749 §4.1.2.1).
    if (unknown.length > 0) {
      await finish(ctx, deps, {
        error: 'invalid_scope',
        error_description: `scope ${unknown[0]!.slice(0, 100)} is not offered; see scopes_supported in /.well-known/oauth-authorization-server`,
      });
      return undefined;
    }
    const session = await auth.session(ctx.cookies.get(SESSION_COOKIE));
    if (!session) {
      if (ctx.method !== 'GET') throw new AppError('unauthorized', 'Your dashboard session has ended; sign in again.');
      ctx.redirect(`/dashboard/login?next=${encodeURIComponent(ctx.path)}`);
      return undefined;
    }
    const { choices, needEnrolment } = await grantableWorkspaces(deps, session.userId);
    if (choices.length === 0) {
      if (needEnrolment.length > 0)
        throw new AppError(
          'forbidden',
          `The workspace ${needEnrolment[0]!.name} requires two-factor sign-in: set it up on your Account page, then approve this app again.`,
        );
      throw new AppError('forbidden', 'You have no role in any workspace, so there is nothing to grant.');
    }
    const apiAsked = found.asked.filter((s) => !PROTOCOL_SCOPES.has(s));
    const redirect = String(found.details.params.redirect_uri ?? found.client.redirectUris[0] ?? '');
    let redirectHost = redirect;
    try {
      const target = new URL(redirect);
      redirectHost = target.host;
      // The answer is a form whose redirects end at the app: browsers hold those redirects to form-action too.
      ctx.set(
        'Content-Security-Policy',
        ctx.response
          .get('Content-Security-Policy')
          .replace("form-action 'self'", `form-action 'self' ${target.origin}`),
      );
    } catch {
      // shown as given
    }
    return {
      ...found,
      session,
      choices,
      apiAsked,
      redirectHost,
      clientName: found.client.clientName ?? found.client.clientId,
    };
  };

  router.get(`${CONSENT_PATH.slice('/dashboard'.length)}/:uid`, async (ctx) => {
    const state = await load(ctx);
    if (!state) return;
    // Nothing asked: every scope, full access ticked (for the role's scopes the approval narrows it).
    const scopes = state.apiAsked.length > 0 ? state.apiAsked : [...OFFERED_SCOPES];
    const checked = new Set(state.apiAsked.length > 0 ? scopes : ['full_access']);
    ctx.body = consentPage(auth.csrfToken(state.session.idHash), state.details.uid, {
      clientName: state.clientName,
      redirectHost: state.redirectHost,
      scopes,
      checked,
      choices: state.choices,
    });
  });

  router.post(`${CONSENT_PATH.slice('/dashboard'.length)}/:uid`, async (ctx) => {
    const state = await load(ctx);
    if (!state) return;
    const form = await readForm(ctx);
    if (!auth.checkCsrf(state.session.idHash, form._csrf))
      throw new AppError(
        'forbidden',
        'The form was refused: its security token is missing or stale. Reload the page and try again.',
      );
    if (form.decision !== 'approve') {
      await finish(ctx, deps, { error: 'access_denied', error_description: 'the person refused the request' });
      return;
    }
    const choice = state.choices.find((c) => c.workspace.id === form.workspace);
    if (!choice) throw new AppError('forbidden', 'You have no role in that workspace.');
    const mayGive = new Set<string>(scopesForRole(choice.role));
    const shown = state.apiAsked.length > 0 ? state.apiAsked : [...OFFERED_SCOPES];
    const ticked = shown.filter((s) => form[`scope_${s}`] === '1');
    const approved = ticked.filter((s) => mayGive.has(s));
    if (approved.length === 0) {
      ctx.status = 400;
      ctx.body = consentPage(auth.csrfToken(state.session.idHash), state.details.uid, {
        clientName: state.clientName,
        redirectHost: state.redirectHost,
        scopes: shown,
        checked: new Set(ticked),
        choices: state.choices,
        error:
          ticked.length === 0
            ? 'Tick at least one scope, or refuse.'
            : `Your role in ${choice.workspace.name} (${choice.role}) gives none of these scopes.`,
      });
      return;
    }
    const accountId = state.session.userId ?? 'operator';
    const grant = new state.provider.Grant({ accountId, clientId: state.client.clientId });
    // The API's scopes are the provider's own scopes too (provider.ts): given and refused on both sides of the grant.
    grant.addOIDCScope([...state.asked.filter((s) => PROTOCOL_SCOPES.has(s)), ...approved].join(' '));
    const resources = Object.keys(state.details.prompt.details.missingResourceScopes ?? {});
    const requested = state.details.params.resource;
    const targets =
      resources.length > 0
        ? resources
        : Array.isArray(requested)
          ? requested
          : [typeof requested === 'string' ? requested : oauthServer(deps).resources.v1];
    // What the person did not give is recorded as refused, so the provider does not ask again for it.
    const refused = state.apiAsked.filter((s) => !approved.includes(s));
    if (refused.length > 0) grant.rejectOIDCScope(refused.join(' '));
    for (const resource of targets) {
      grant.addResourceScope(resource, approved.join(' '));
      if (refused.length > 0) grant.rejectResourceScope(resource, refused.join(' '));
    }
    const providerGrantId = await grant.save();
    await actingAs({ ...sessionActor(state.session), address: ctx.state.clientAddress }, () =>
      deps.services.oauth.approve({
        providerGrantId,
        clientId: state.client.clientId,
        clientName: state.clientName,
        userId: state.session.userId,
        workspaceId: choice.workspace.id,
        scopes: approved,
      }),
    );
    await finish(ctx, deps, { login: { accountId }, consent: { grantId: providerGrantId } });
  });
}

/** Connected apps: the grants of this workspace (a member's own; all of them for owners and admins) and the registered clients. */
export function registerOAuthAppRoutes(router: DashRoutes, deps: HttpDeps): void {
  // One's own grants: any member; others' grants and the clients: owners and admins (checked below and by the route).
  router.get('/oauth', 'session', async (ctx) => {
    const view = ctx.state.dashboard;
    const manager = allows(view.role, 'manage');
    const filter =
      manager || view.session.userId === null
        ? { workspaceId: view.workspace.id }
        : { workspaceId: view.workspace.id, userId: view.session.userId };
    const { items } = await deps.services.oauth.listGrants(filter, { limit: MAX_LISTED, offset: 0 });
    const grantRows = items.map(
      (
        g,
      ) => html`<tr><td>${g.client.name}</td><td>${g.client_id === OPERATOR_CLIENT ? html`<span class="muted">mailsvc tokens create</span>` : html`<code>${g.client_id}</code>`}</td><td>${g.scopes.join(' ')}</td><td>${when(g.created_at)}</td><td>${when(g.last_used_at)}</td>
<td>${g.revoked_at ? badge('revoked') : actionButton(view, `/dashboard/oauth/grants/${g.id}/revoke`, 'Revoke', 'danger')}</td></tr>`,
    );
    const clients = manager ? await deps.services.oauth.listClients() : [];
    const clientRows = clients.map(
      (
        c,
      ) => html`<tr><td>${c.client_name}</td><td><code>${c.client_id}</code></td><td>${c.redirect_uris.join(' ')}</td><td>${c.token_endpoint_auth_method === 'none' ? 'public' : 'confidential'}</td><td>${c.registered_by}</td><td>${when(c.created_at)}</td>
<td>${actionButton(view, `/dashboard/oauth/clients/${encodeURIComponent(c.client_id)}/remove`, 'Remove', 'danger')}</td></tr>`,
    );
    ctx.body = page(view, {
      title: 'Connected apps',
      section: 'oauth',
      notice: takeNotice(ctx),
      body: html`<p class="muted">Apps and assistants a person authorized with OAuth (and tokens minted with <code>mailsvc tokens create</code>). Revoking one ends its access at once.</p>
${table(['App', 'Client', 'Scopes', 'Granted', 'Last used', ''], grantRows, 'No app is connected to this workspace.')}
${manager ? html`<h2>Registered clients</h2>${table(['Name', 'Client id', 'Redirect URIs', 'Type', 'Registered by', 'Created', ''], clientRows, 'No client has registered yet.')}<p class="muted">Server-side apps: <code>mailsvc oauth clients create --name NAME --redirect-uri URL --confidential</code>.</p>` : ''}`,
    });
  });

  router.post('/oauth/grants/:id/revoke', 'session', async (ctx) => {
    const view = ctx.state.dashboard;
    const manager = allows(view.role, 'manage') || view.session.userId === null;
    if (!manager) {
      const own = await deps.services.oauth.listGrants(
        { workspaceId: view.workspace.id, userId: view.session.userId! },
        { limit: MAX_LISTED, offset: 0 },
      );
      if (!own.items.some((g) => g.id === ctx.params.id))
        throw new AppError('forbidden', 'Only an owner or admin may revoke another person’s grant.');
    }
    const revoked = await deps.services.oauth.revokeGrant(view.workspace.id, ctx.params.id!);
    redirectWithNotice(ctx, '/dashboard/oauth', `${revoked.client.name} no longer has access.`);
  });

  router.post('/oauth/clients/:id/remove', 'manage', async (ctx) => {
    const removed = await deps.services.oauth.removeClient(ctx.params.id!);
    redirectWithNotice(ctx, '/dashboard/oauth', `Client ${removed.client_name} is removed and its grants are revoked.`);
  });
}

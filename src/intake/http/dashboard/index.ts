import Router from '@koa/router';
import type { Next } from 'koa';
import compose from 'koa-compose';
import { AppError } from '../../../shared/errors.js';
import type { Ctx, HttpDeps, State } from '../context.js';
import { normalize } from '../middleware/render-errors.js';
import { assets } from './assets.js';
import { html } from './html.js';
import { page, plainPage } from './layout.js';
import { registerAccountRoutes } from './pages/account.js';
import { registerDomainRoutes } from './pages/domains.js';
import { registerEmailRoutes } from './pages/emails.js';
import { registerKeyRoutes } from './pages/keys.js';
import { registerLoginRoutes } from './pages/login.js';
import { registerMarketingRoutes } from './pages/marketing.js';
import { registerOverviewRoutes } from './pages/overview.js';
import { registerReceivingRoutes } from './pages/receiving.js';
import { registerInboxThreadRoutes } from './pages/inbox-threads.js';
import { registerSuppressionRoutes } from './pages/suppressions.js';
import { registerImportRoutes } from './pages/imports.js';
import { registerTemplateRoutes } from './pages/templates.js';
import { registerWebhookRoutes } from './pages/webhooks.js';
import { registerWorkflowRoutes } from './pages/workflows.js';
import { registerDeliveryRoutes } from './pages/delivery.js';
import { registerTeamRoutes } from './pages/team.js';
import { registerAuditRoutes } from './pages/audit.js';
import { DashRoutes } from './routes.js';
import { registerOAuthAppRoutes, registerOAuthConsentRoutes } from './pages/oauth.js';
import { clearSessionCookie, requireSession, SESSION_COOKIE, type DashCtx, type DashState } from './session.js';

const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const isDashboardPath = (path: string): boolean => path === '/dashboard' || path.startsWith('/dashboard/');

function publicRouter(deps: HttpDeps): Router<State> {
  const router = new Router<State>({ prefix: '/dashboard' });
  for (const asset of Object.values(assets)) {
    router.get(asset.path.slice('/dashboard'.length), (ctx) => {
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
      ctx.type = asset.type;
      ctx.body = asset.body;
    });
  }
  registerLoginRoutes(router, deps);
  registerOAuthConsentRoutes(router, deps);
  return router;
}

/** The signed-in pages, each route declared with what it needs (routes.ts). */
export function privateRoutes(deps: HttpDeps): { router: Router<DashState>; routes: DashRoutes } {
  const koaRouter = new Router<DashState>({ prefix: '/dashboard' });
  const router = new DashRoutes(koaRouter);
  router.get('/', 'read', (ctx) => ctx.redirect('/dashboard/overview'));
  router.post('/logout', 'session', async (ctx) => {
    await deps.services.dashboardAuth.signOut(ctx.cookies.get(SESSION_COOKIE));
    clearSessionCookie(ctx);
    ctx.status = 303;
    ctx.redirect('/dashboard/login');
  });
  router.post('/workspace', 'session', async (ctx) => {
    const { form, dashboard: view } = ctx.state;
    const workspace = await deps.services.workspaces.get(form.workspace ?? '');
    await deps.services.dashboardAuth.switchWorkspace(view.session, workspace.id);
    ctx.status = 303;
    ctx.redirect('/dashboard');
  });
  registerOverviewRoutes(router, deps);
  registerEmailRoutes(router, deps);
  registerTemplateRoutes(router, deps);
  registerKeyRoutes(router, deps);
  registerDomainRoutes(router, deps);
  registerWebhookRoutes(router, deps);
  registerMarketingRoutes(router, deps);
  registerSuppressionRoutes(router, deps);
  registerInboxThreadRoutes(router, deps);
  registerImportRoutes(router, deps);
  registerReceivingRoutes(router, deps);
  registerWorkflowRoutes(router, deps);
  registerDeliveryRoutes(router, deps);
  registerAccountRoutes(router, deps);
  registerTeamRoutes(router, deps);
  registerAuditRoutes(router, deps);
  registerOAuthAppRoutes(router, deps);
  return { router: koaRouter, routes: router };
}

/** Errors as pages, in the dashboard's layout when signed in; the API's JSON envelope is not for people. */
function renderError(ctx: Ctx, deps: HttpDeps, thrown: unknown): void {
  const err = normalize(thrown);
  // A login link's token is a credential: it never reaches the log.
  if (err.code === 'internal_error')
    deps.logger.error(
      {
        err: err.cause ?? thrown,
        requestId: ctx.state.requestId,
        path: ctx.path.replace(/\/login\/.+$/, '/login/<token>'),
      },
      'dashboard request failed',
    );
  ctx.status = err.status;
  if (err.retryAfter !== undefined) ctx.set('Retry-After', String(err.retryAfter));
  ctx.type = 'html';
  const message =
    err.code === 'internal_error' ? `Something went wrong (request ${ctx.state.requestId}).` : err.message;
  // eslint-disable-next-line no-restricted-syntax -- the dashboard's state is set on the same context by requireSession
  const view = (ctx as unknown as DashCtx).state.dashboard as DashCtx['state']['dashboard'] | undefined;
  if (view) {
    ctx.body = page(view, {
      title: err.status === 404 ? 'Not found' : 'That did not work',
      section: 'overview',
      error: message,
      body: html`<p><a href="/dashboard">Dashboard home</a></p>`,
    });
  } else {
    ctx.body = plainPage(
      'Error',
      html`<div class="card"><div class="error" role="alert">${message}</div><p><a href="/dashboard/login">Sign in</a></p></div>`,
    );
  }
}

/**
 * The web dashboard under /dashboard: server-rendered pages over the same services as the
 * API. Sign-in and assets are public; everything else passes requireSession (session cookie,
 * CSRF token on every POST).
 */
export function dashboardRoutes(deps: HttpDeps) {
  const open = publicRouter(deps);
  const openRoutes = open.routes();
  const signedIn = privateRoutes(deps);
  const guarded = compose<Ctx>([
    requireSession(deps, signedIn.routes) as (ctx: Ctx, next: Next) => Promise<void>,
    // eslint-disable-next-line no-restricted-syntax -- @koa/router types its middleware over its own context; ours extends Koa's
    signedIn.router.routes() as unknown as (ctx: Ctx, next: Next) => Promise<void>,
  ]);

  return async function dashboard(ctx: Ctx, next: Next): Promise<void> {
    if (!isDashboardPath(ctx.path)) return next();
    ctx.set('Content-Security-Policy', PAGE_CSP);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('X-Content-Type-Options', 'nosniff');
    // Login links carry their token in the URL; no page may leak its address to another site.
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', 'no-store');
    try {
      const matched = open.match(ctx.path, ctx.method).route;
      // eslint-disable-next-line no-restricted-syntax -- @koa/router types its middleware over its own context; ours extends Koa's
      if (matched) await (openRoutes as unknown as (ctx: Ctx, next: Next) => Promise<void>)(ctx, async () => {});
      else await guarded(ctx, async () => {});
      if (ctx.body === undefined && ctx.status === 404)
        throw new AppError('not_found', `No dashboard page at ${ctx.path}`);
    } catch (err) {
      renderError(ctx, deps, err);
    }
  };
}

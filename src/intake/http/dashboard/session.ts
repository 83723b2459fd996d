import { allows, type Role } from '../../../services/users.js';
import { actingAs } from '../../../shared/actor.js';
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import parse from 'co-body';
import type { Next, ParameterizedContext } from 'koa';
import type { DashboardSessionInfo, SecondFactorNeeded, SignedIn } from '../../../services/dashboard-auth.js';
import { AppError } from '../../../shared/errors.js';
import type { Ctx, HttpDeps, State } from '../context.js';
import type { DashView } from './layout.js';

export const SESSION_COOKIE = 'mailsvc_session';
/** Binds the sign-in forms' CSRF token before a session exists (login CSRF). */
const PRELOGIN_COOKIE = 'mailsvc_prelogin';
const COOKIE_PATH = '/dashboard';
/** The sealed ticket between a right password and the code (dashboard-auth's SecondFactorNeeded). */
const TICKET_COOKIE = 'mailsvc_2fa';
/** A message for the page a form action redirects to. */
const NOTICE_COOKIE = 'mailsvc_notice';

/** The state of signed-in requests: set by requireSession before any page handler runs. */
export type DashState = State & { dashboard: DashView; form: Record<string, string> };
export type DashCtx = ParameterizedContext<DashState>;

// HttpOnly keeps the session away from scripts; Lax stops other sites' POSTs from carrying it;
// Secure whenever the request came over HTTPS (directly or, with http.trustProxy, via a proxy).
const cookieOptions = (ctx: Ctx, expires?: Date) => ({
  httpOnly: true,
  sameSite: 'lax' as const,
  secure: ctx.secure,
  path: COOKIE_PATH,
  overwrite: true,
  ...(expires ? { expires } : {}),
});

export function setSessionCookie(ctx: Ctx, signedIn: SignedIn): void {
  ctx.cookies.set(SESSION_COOKIE, signedIn.secret, cookieOptions(ctx, new Date(signedIn.expiresAt)));
  ctx.cookies.set(PRELOGIN_COOKIE, null, cookieOptions(ctx));
}

export function setSecondFactorTicket(ctx: Ctx, needed: SecondFactorNeeded): void {
  ctx.cookies.set(TICKET_COOKIE, needed.ticket, cookieOptions(ctx, new Date(needed.expiresAt)));
}

export const secondFactorTicket = (ctx: Ctx): string | undefined => ctx.cookies.get(TICKET_COOKIE);

export function clearSecondFactorTicket(ctx: Ctx): void {
  ctx.cookies.set(TICKET_COOKIE, null, cookieOptions(ctx));
}

export function clearSessionCookie(ctx: Ctx): void {
  ctx.cookies.set(SESSION_COOKIE, null, cookieOptions(ctx));
}

/**
 * Post/redirect/get with a message for the next page. The message travels in a short-lived
 * cookie, not the URL, so a crafted link cannot make the dashboard show made-up text.
 */
export function redirectWithNotice(ctx: Ctx, url: string, notice: string): void {
  ctx.cookies.set(NOTICE_COOKIE, Buffer.from(notice).toString('base64url'), { ...cookieOptions(ctx), maxAge: 60_000 });
  ctx.status = 303;
  ctx.redirect(url);
}

/** A secret for the page a form action redirects to (a new key, a webhook's signing secret). */
const SECRET_COOKIE = 'mailsvc_secret';

export interface ShownSecret {
  title: string;
  note: string;
  secret: string;
}

// Sealed with a key derived from the session's own cookie and bound to the page it is for: the
// cookie is useless to anyone without that session, and it is gone after one minute or one view.
const sealKey = (ctx: Ctx) =>
  createHash('sha256')
    .update(`dashboard-secret:${ctx.cookies.get(SESSION_COOKIE) ?? ''}`)
    .digest();

/**
 * Post/redirect/get for an answer that holds a secret shown once: a refresh of the page after
 * it shows nothing again and submits nothing again.
 */
export function redirectWithSecret(ctx: Ctx, url: string, shown: ShownSecret): void {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey(ctx), iv).setAAD(Buffer.from(url));
  const sealed = Buffer.concat([cipher.update(JSON.stringify(shown), 'utf8'), cipher.final()]);
  ctx.cookies.set(SECRET_COOKIE, Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url'), {
    ...cookieOptions(ctx),
    maxAge: 60_000,
  });
  ctx.status = 303;
  ctx.redirect(url);
}

/** The secret left for this page by redirectWithSecret, once. */
export function takeSecret(ctx: Ctx): ShownSecret | undefined {
  const value = ctx.cookies.get(SECRET_COOKIE);
  if (!value) return undefined;
  ctx.cookies.set(SECRET_COOKIE, null, cookieOptions(ctx));
  try {
    const bytes = Buffer.from(value, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', sealKey(ctx), bytes.subarray(0, 12)).setAAD(Buffer.from(ctx.path));
    decipher.setAuthTag(bytes.subarray(12, 28));
    return JSON.parse(
      Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8'),
    ) as ShownSecret;
  } catch {
    // Another session's, another page's, or tampered with: nothing to show.
    return undefined;
  }
}

/** The message left by redirectWithNotice, shown once. */
export function takeNotice(ctx: Ctx): string | undefined {
  const value = ctx.cookies.get(NOTICE_COOKIE);
  if (!value) return undefined;
  ctx.cookies.set(NOTICE_COOKIE, null, cookieOptions(ctx));
  return Buffer.from(value, 'base64url').toString('utf8').slice(0, 500);
}

/** Fields of an urlencoded form; repeated fields keep their last value. */
export async function readForm(ctx: Ctx): Promise<Record<string, string>> {
  if (!ctx.is('application/x-www-form-urlencoded'))
    throw new AppError('unsupported_media_type', 'Forms must be sent as application/x-www-form-urlencoded');
  const body = (await parse.form(ctx.req, { limit: '256kb' })) as Record<string, unknown>;
  const form: Record<string, string> = {};
  for (const [key, value] of Object.entries(body)) {
    const last = Array.isArray(value) ? value.at(-1) : value;
    if (typeof last === 'string') form[key] = last;
  }
  return form;
}

const csrfRefused = () =>
  new AppError(
    'forbidden',
    'The form was refused: its security token is missing or stale. Reload the page and try again.',
  );

/** The CSRF token for the sign-in forms, bound to a random cookie set here. */
export function preLoginToken(ctx: Ctx, deps: HttpDeps): string {
  let binding = ctx.cookies.get(PRELOGIN_COOKIE);
  if (!binding || !/^[A-Za-z0-9_-]{43}$/.test(binding)) {
    binding = randomBytes(32).toString('base64url');
    ctx.cookies.set(PRELOGIN_COOKIE, binding, cookieOptions(ctx));
  }
  return deps.services.dashboardAuth.csrfToken(`prelogin:${binding}`);
}

export function checkPreLogin(ctx: Ctx, deps: HttpDeps, form: Record<string, string>): void {
  const binding = ctx.cookies.get(PRELOGIN_COOKIE);
  if (!binding || !deps.services.dashboardAuth.checkCsrf(`prelogin:${binding}`, form._csrf)) throw csrfRefused();
}

/**
 * Everything below sign-in: a valid session or a redirect to the sign-in page (a 401 for
 * POSTs, which must not be replayed after sign-in), then, for every POST, the form and its
 * CSRF token checked, then the role against what the route declares (routes.ts), before any
 * handler runs.
 */
/** What a member of a workspace that requires two-factor may reach before enrolling: enrolment itself, signing out, another workspace. */
const enrolmentPath = (path: string): boolean =>
  ['/dashboard/account/two-factor', '/dashboard/logout', '/dashboard/workspace'].includes(path);

/** What the session middleware asks of the declared routes (routes.ts, whose handlers take this file's state). */
interface RouteCheck {
  find(method: string, path: string): unknown;
  permits(role: Role, method: string, path: string): boolean;
}

/**
 * Who a session acts as in the audit log: a user by their id; a shared-password session by a
 * prefix of its hash (enough to tell sessions apart, never the cookie).
 */
export function sessionActor(session: DashboardSessionInfo): { type: 'user' | 'dashboard'; id: string } {
  return session.userId === null
    ? { type: 'dashboard', id: session.idHash.slice(0, 16) }
    : { type: 'user', id: session.userId };
}

export function requireSession(deps: HttpDeps, routes: RouteCheck) {
  return async function session(ctx: DashCtx, next: Next): Promise<void> {
    const auth = deps.services.dashboardAuth;
    const found = await auth.session(ctx.cookies.get(SESSION_COOKIE));
    if (!found) {
      if (ctx.method === 'GET' || ctx.method === 'HEAD') {
        ctx.redirect(`/dashboard/login?next=${encodeURIComponent(ctx.originalUrl)}`);
        return;
      }
      throw new AppError('unauthorized', 'Your dashboard session has ended; sign in again.');
    }
    const workspaces = await deps.services.workspaces.list();
    const workspace =
      workspaces.find((w) => w.id === found.workspaceId) ?? (await deps.services.workspaces.ensureDefault());
    const role = found.userId === null ? 'owner' : await deps.services.users.roleOf(found.userId, workspace.id);
    if (!role)
      throw new AppError(
        'forbidden',
        `You have no role in the workspace ${workspace.name}; ask one of its owners or admins for an invitation.`,
      );
    const may = (method: string, path: string) => routes.permits(role, method, path);
    ctx.state.dashboard = {
      session: found,
      workspace,
      workspaces,
      csrf: auth.csrfToken(found.idHash),
      role,
      may,
      can: (permission) => allows(role, permission),
    };
    // A workspace that requires a second factor: a member without one sets it up before anything else.
    if (found.userId !== null && !enrolmentPath(ctx.path)) {
      const gate = await deps.services.twoFactor.gate(found.userId, workspace.id);
      if (gate.required && !gate.enrolled) {
        if (ctx.method === 'GET' || ctx.method === 'HEAD') {
          ctx.redirect('/dashboard/account/two-factor');
          return;
        }
        throw new AppError(
          'forbidden',
          `The workspace ${workspace.name} requires two-factor sign-in: set it up on your Account page first.`,
        );
      }
    }
    if (ctx.method === 'POST') {
      ctx.state.form = await readForm(ctx);
      if (!auth.checkCsrf(found.idHash, ctx.state.form._csrf)) throw csrfRefused();
    }
    // The one role check of the dashboard: the route's declaration against what the role allows.
    // A path no route declares falls through to the router's 404.
    if (routes.find(ctx.method, ctx.path) && !may(ctx.method, ctx.path)) {
      throw new AppError(
        'forbidden',
        ctx.method === 'POST'
          ? `Your role (${role}) may not change this; an owner or admin can.`
          : `Your role (${role}) may not see this page; an owner or admin can.`,
      );
    }
    await actingAs({ ...sessionActor(found), address: ctx.state.clientAddress }, next);
  };
}

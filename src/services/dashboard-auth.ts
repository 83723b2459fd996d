import { createHmac, randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { toIso } from '../shared/clock.js';
import { decryptSecret, encryptSecret, safeEqual, sha256Hex } from '../shared/crypto.js';
import { AppError } from '../shared/errors.js';
import {
  deleteDashboardSession,
  deleteExpiredDashboardRows,
  deleteUserSession,
  deleteUserSessions,
  findDashboardSession,
  listUserSessions,
  saveDashboardSession,
  saveLoginToken,
  setDashboardSessionWorkspace,
  touchDashboardSession,
  useLoginToken,
} from '../store/dashboard.js';
import type { ServiceDeps } from './deps.js';
import { LoginThrottle } from './login-throttle.js';
import type { AccountActor, TwoFactorService } from './two-factor.js';
import type { UserService } from './users.js';

export { LOCKOUT_WINDOW_MS, MAX_LOGIN_FAILURES } from './login-throttle.js';

const scrypt = promisify(scryptCallback) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export const SESSION_TTL_MS = 12 * 3600_000;
export const LOGIN_LINK_TTL_MS = 15 * 60_000;
/** How long the second step of a sign-in (the code after the password) may take. */
const SECOND_FACTOR_TTL_MS = 5 * 60_000;
/** A session's last-seen time is written at most this often: not a write on every request. */
const LAST_SEEN_RESOLUTION_MS = 60_000;
const MAX_USER_AGENT = 300;

export interface DashboardSessionInfo {
  /** SHA-256 of the cookie's secret: what the store keeps and what CSRF tokens are bound to. */
  idHash: string;
  workspaceId: string | null;
  expiresAt: number;
  /** The user signed in; null for the shared password and CLI links (the operator: an owner's rights). */
  userId: string | null;
}

export interface SignedIn {
  /** The cookie value: random, shown to the browser only. */
  secret: string;
  expiresAt: number;
}

/** The password was right and the user has a second factor: the code comes next. */
export interface SecondFactorNeeded {
  /** Sealed with the instance key: who passed the password, until when. Kept in a cookie. */
  ticket: string;
  expiresAt: number;
}

/** Where a sign-in comes from: the client address (the lockout's key) and its User-Agent. */
export interface ClientInfo {
  address: string;
  userAgent?: string | undefined;
}

/** A session as its user sees it on the Account page. */
export interface SessionView {
  /** A prefix of the session's hash: names it in forms and the audit log, never the cookie. */
  id: string;
  current: boolean;
  client_address: string | null;
  user_agent: string | null;
  created_at: string;
  last_seen_at: string | null;
  expires_at: string;
}

export interface DashboardAuthService {
  readonly passwordEnabled: boolean;
  /** Whether users exist: the sign-in form asks for an address, and dashboard.password no longer works. */
  usersExist(): Promise<boolean>;
  /** A single-use sign-in link under http.publicUrl (what `mailsvc dashboard login` prints). */
  createLoginLink(): Promise<{ url: string; expires_at: string }>;
  /**
   * `client` identifies the caller for the lockout (its address). With users (services/users.ts)
   * the address and the user's password; before the first user, the shared dashboard.password.
   */
  signInWithPassword(password: string, client: ClientInfo, email?: string): Promise<SignedIn | SecondFactorNeeded>;
  /** Who a second-factor ticket is for (undefined: expired or not ours), to name them in the audit log. */
  ticketUser(ticket: string | undefined): string | undefined;
  /** The second step: a TOTP code or a recovery code; wrong ones count towards the same lockout as passwords. */
  signInWithSecondFactor(
    ticket: string | undefined,
    code: string,
    client: ClientInfo,
  ): Promise<SignedIn & { userId: string; method: 'totp' | 'recovery_code'; recoveryCodesLeft: number }>;
  /**
   * A session for a user who just proved who they are (an accepted invitation); an existing
   * account with a second factor (joining another workspace) still owes its code.
   */
  signInUser(userId: string, client: ClientInfo): Promise<SignedIn | SecondFactorNeeded>;
  signInWithLink(token: string, client: ClientInfo): Promise<SignedIn>;
  session(secret: string | undefined): Promise<DashboardSessionInfo | undefined>;
  signOut(secret: string | undefined): Promise<void>;
  switchWorkspace(session: DashboardSessionInfo, workspaceId: string): Promise<void>;
  /** A user's sessions, newest first; `current` marks the one asking. */
  listSessions(userId: string, currentIdHash: string | null): Promise<SessionView[]>;
  /** Ends one of the user's sessions (by SessionView.id); at once, on every node. */
  revokeSession(who: AccountActor, sessionId: string): Promise<{ id: string }>;
  /** "Sign out everywhere else": every session of the user but `keepIdHash`. */
  endOtherSessions(who: AccountActor, keepIdHash: string): Promise<{ ended: number }>;
  /**
   * Ends every session of a user (a removed user, a reset second factor): for other services
   * and the Team page. Not audited here: the change that calls it is.
   */
  endAllSessions(userId: string): Promise<number>;
  /** Changes the user's password after checking the current one; their other sessions end. */
  changePassword(who: AccountActor, keepIdHash: string, current: string, next: string): Promise<{ ended: number }>;
  /** The CSRF token of a session (or of a pre-sign-in cookie): an HMAC, so nothing is stored. */
  csrfToken(binding: string): string;
  checkCsrf(binding: string, token: unknown): boolean;
}

export function createDashboardAuthService(
  deps: ServiceDeps & { users: UserService; twoFactor: TwoFactorService },
): DashboardAuthService {
  const { db, clock, config, secretKey } = deps;
  const log = deps.logger.child({ component: 'dashboard' });
  const throttle = new LoginThrottle(() => clock.now());
  // Both sides are compared as salted scrypt hashes of equal length: neither the length nor
  // the content of the configured password shows in the comparison's timing, and each guess
  // costs a scrypt.
  const salt = randomBytes(16);
  const configured = config.dashboard.password;
  let passwordHash: Promise<Buffer> | undefined;
  const hashOfConfigured = (password: string) => (passwordHash ??= scrypt(password, salt, 32));

  const newSession = async (client: ClientInfo, userId: string | null = null): Promise<SignedIn> => {
    const secret = randomBytes(32).toString('base64url');
    const now = clock.now();
    const expiresAt = now + SESSION_TTL_MS;
    await deleteExpiredDashboardRows(db, now);
    await saveDashboardSession(db, {
      id_hash: sha256Hex(secret),
      workspace_id: null,
      created_at: now,
      expires_at: expiresAt,
      user_id: userId,
      client_address: client.address,
      user_agent: client.userAgent?.slice(0, MAX_USER_AGENT) ?? null,
      last_seen_at: now,
    });
    return { secret, expiresAt };
  };

  // The ticket between the password and the code: sealed (AES-GCM with the instance key), so
  // the browser can hold it without being able to make one for another user or extend it.
  const TICKET = 'dashboard-2fa-ticket';
  const makeTicket = (userId: string): SecondFactorNeeded => {
    const expiresAt = clock.now() + SECOND_FACTOR_TTL_MS;
    return { ticket: encryptSecret(secretKey, `${TICKET} ${userId} ${expiresAt}`), expiresAt };
  };
  const openTicket = (ticket: string | undefined): string | undefined => {
    if (!ticket || ticket.length > 500) return undefined;
    try {
      const [purpose, userId, expiresAt] = decryptSecret(secretKey, ticket).split(' ');
      return purpose === TICKET && userId && Number(expiresAt) > clock.now() ? userId : undefined;
    } catch {
      return undefined;
    }
  };
  const viewOf = (
    row: {
      id_hash: string;
      client_address: string | null;
      user_agent: string | null;
      created_at: number;
      last_seen_at: number | null;
      expires_at: number;
    },
    current: string | null,
  ): SessionView => ({
    id: row.id_hash.slice(0, 16),
    current: row.id_hash === current,
    client_address: row.client_address,
    user_agent: row.user_agent,
    created_at: toIso(row.created_at),
    last_seen_at: row.last_seen_at === null ? null : toIso(row.last_seen_at),
    expires_at: toIso(row.expires_at),
  });

  // The client's address, never what it typed: a mistyped password is often a real one.
  type Method = 'password' | 'link' | 'user' | 'invite' | 'totp' | 'recovery_code';
  const refused = (client: ClientInfo, method: Method, message: string): AppError => {
    throttle.fail(client.address);
    log.warn({ client: client.address, method }, 'dashboard sign-in refused');
    return new AppError('unauthorized', message);
  };
  const checkThrottle = (client: ClientInfo, method: Method): void => {
    try {
      throttle.check(client.address);
    } catch (err) {
      log.warn({ client: client.address, method }, 'dashboard sign-in refused: too many failures from this address');
      throw err;
    }
  };
  const signedIn = (client: ClientInfo, method: Method, userId: string | null = null): Promise<SignedIn> => {
    throttle.succeed(client.address);
    log.info({ client: client.address, method, userId }, 'dashboard sign-in');
    return newSession(client, userId);
  };

  const mac = (binding: string): string =>
    createHmac('sha256', secretKey).update(`dashboard-csrf:${binding}`).digest('base64url');

  return {
    passwordEnabled: Boolean(configured),
    usersExist: () => deps.users.any(),

    async createLoginLink() {
      const token = randomBytes(32).toString('base64url');
      const now = clock.now();
      await saveLoginToken(db, { token_hash: sha256Hex(token), created_at: now, expires_at: now + LOGIN_LINK_TTL_MS });
      return { url: `${config.http.publicUrl}/dashboard/login/${token}`, expires_at: toIso(now + LOGIN_LINK_TTL_MS) };
    },

    async signInWithPassword(password, client, email) {
      checkThrottle(client, 'password');
      // Once a user exists, people sign in as themselves; the shared password is retired.
      if (await deps.users.any()) {
        const user = email ? await deps.users.verify(email, password) : undefined;
        if (!user) throw refused(client, 'password', 'Wrong address or password');
        if ((await deps.twoFactor.status(user.id)).enabled) {
          log.info(
            { client: client.address, userId: user.id },
            'dashboard sign-in: password right, asking for the second factor',
          );
          return makeTicket(user.id);
        }
        return signedIn(client, 'user', user.id);
      }
      if (!configured)
        throw new AppError(
          'forbidden',
          'Password sign-in is off (dashboard.password is not set); run `mailsvc dashboard login` for a link',
        );
      const given = await scrypt(password.slice(0, 1024), salt, 32);
      if (!timingSafeEqual(given, await hashOfConfigured(configured)))
        throw refused(client, 'password', 'Wrong password');
      return signedIn(client, 'password');
    },

    async signInWithLink(token, client) {
      checkThrottle(client, 'link');
      if (!/^[A-Za-z0-9_-]{43}$/.test(token) || !(await useLoginToken(db, sha256Hex(token), clock.now()))) {
        throw refused(
          client,
          'link',
          'This sign-in link is not valid: it was already used, has expired or was mistyped. Run `mailsvc dashboard login` for a new one.',
        );
      }
      return signedIn(client, 'link');
    },

    ticketUser: openTicket,

    async signInWithSecondFactor(ticket, code, client) {
      checkThrottle(client, 'totp');
      const userId = openTicket(ticket);
      if (!userId)
        throw new AppError(
          'unauthorized',
          'The sign-in took too long or was not started here: enter your address and password again.',
        );
      const result = await deps.twoFactor.check(userId, code);
      if (!result.ok) throw refused(client, 'totp', 'That code is not right');
      const signed = await signedIn(client, result.method, userId);
      return { ...signed, userId, method: result.method, recoveryCodesLeft: result.recoveryCodesLeft };
    },

    async signInUser(userId, client) {
      if ((await deps.twoFactor.status(userId)).enabled) return makeTicket(userId);
      return signedIn(client, 'invite', userId);
    },

    async session(secret) {
      if (!secret || secret.length > 100) return undefined;
      const now = clock.now();
      const row = await findDashboardSession(db, sha256Hex(secret), now);
      if (!row) return undefined;
      if (row.last_seen_at === null || now - row.last_seen_at >= LAST_SEEN_RESOLUTION_MS)
        await touchDashboardSession(db, row.id_hash, now);
      return { idHash: row.id_hash, workspaceId: row.workspace_id, expiresAt: row.expires_at, userId: row.user_id };
    },

    async signOut(secret) {
      if (secret) await deleteDashboardSession(db, sha256Hex(secret));
    },

    switchWorkspace: (session, workspaceId) => setDashboardSessionWorkspace(db, session.idHash, workspaceId),

    listSessions: async (userId, current) =>
      (await listUserSessions(db, userId, clock.now())).map((row) => viewOf(row, current)),

    async revokeSession(who, sessionId) {
      const row = /^[0-9a-f]{16}$/.test(sessionId)
        ? (await listUserSessions(db, who.userId, clock.now())).find((r) => r.id_hash.startsWith(sessionId))
        : undefined;
      if (!row || !(await deleteUserSession(db, who.userId, row.id_hash)))
        throw new AppError('not_found', 'No such session: it has ended already');
      await deps.durable();
      return { id: sessionId };
    },

    async endOtherSessions(who, keepIdHash) {
      const ended = await deleteUserSessions(db, who.userId, keepIdHash);
      await deps.durable();
      return { ended };
    },

    async endAllSessions(userId) {
      const ended = await deleteUserSessions(db, userId, null);
      await deps.durable();
      return ended;
    },

    async changePassword(who, keepIdHash, current, next) {
      // A session left open is not enough to guess the password it would change.
      const key = `password-change:${who.userId}`;
      throttle.check(key);
      try {
        await deps.users.changePassword(who.userId, current, next);
      } catch (err) {
        if ((err as AppError).field === 'current_password') throttle.fail(key);
        throw err;
      }
      const ended = await deleteUserSessions(db, who.userId, keepIdHash);
      await deps.durable();
      return { ended };
    },

    csrfToken: mac,
    checkCsrf: (binding, token) => typeof token === 'string' && token.length > 0 && safeEqual(mac(binding), token),
  };
}

import { randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { normalizeAddress } from '../messages/addresses.js';
import { toIso } from '../shared/clock.js';
import { sha256Hex } from '../shared/crypto.js';
import { AppError, validationError } from '../shared/errors.js';
import { newId } from '../shared/ids.js';
import {
  changeMembership,
  countUsers,
  findInvite,
  findMembership,
  findUser,
  findUserByEmail,
  listMembers,
  ROLES,
  saveInvite,
  saveMembership,
  saveUser,
  saveUserPassword,
  useInvite,
  type MembershipChange,
  type Role,
  type User,
} from '../store/users.js';
import { parseMailbox, type Address } from '../messages/addresses.js';
import { findWorkspace } from '../store/workspaces.js';
import type { ServiceDeps } from './deps.js';
import type { SendService } from './send/send-email.js';
import { isOneOf } from '../shared/one-of.js';

export { ROLES, type Role } from '../store/users.js';

const scrypt = promisify(scryptCallback) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

const INVITE_TTL_MS = 7 * 24 * 3600_000;
const MIN_PASSWORD = 12;
const MAX_PASSWORD = 1024;

/**
 * What a role may do in a workspace: the one check (`allows`), and the table docs/operations.md
 * shows. `read` is seeing pages and lists; `secrets` seeing what would let someone act as the
 * workspace (webhook secrets, DKIM records to copy are not secret); `send` sending and editing
 * mail, templates, contacts and broadcasts; `manage` keys, domains, webhooks, users and settings.
 */
const PERMISSIONS = ['read', 'secrets', 'send', 'manage'] as const;
export type Permission = (typeof PERMISSIONS)[number];
export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  owner: ['read', 'secrets', 'send', 'manage'],
  admin: ['read', 'secrets', 'send', 'manage'],
  developer: ['read', 'secrets', 'send'],
  viewer: ['read'],
};
export const allows = (role: Role, permission: Permission): boolean => ROLE_PERMISSIONS[role].includes(permission);

/** What each permission covers in the dashboard, for the docs' table (a drift test holds docs/operations.md to it). */
const PERMISSION_MEANS: Readonly<Record<Permission, string>> = {
  read: 'see every page: emails, templates, contacts, broadcasts, domains and their DNS records, key names and prefixes, webhook endpoints and deliveries, the team, the audit log',
  secrets: "see secrets: webhook signing secrets (a key's value is shown only to whoever creates it, once)",
  send: 'send and edit content: templates, contacts, broadcasts and campaigns, suppressions, workflows, inbox threads; cancel emails',
  manage: 'manage API keys, domains, webhooks, receiving routes and the team (invite, change roles, remove)',
};

/** The roles table of docs/operations.md, made from ROLE_PERMISSIONS. */
export function roleTableMarkdown(): string {
  const head = `| Role | ${PERMISSIONS.join(' | ')} |`;
  const rule = `|---|${PERMISSIONS.map(() => '---').join('|')}|`;
  const rows = ROLES.map(
    (role) => `| ${role} | ${PERMISSIONS.map((p) => (allows(role, p) ? 'yes' : '—')).join(' | ')} |`,
  );
  const means = PERMISSIONS.map((p) => `- \`${p}\`: ${PERMISSION_MEANS[p]}.`);
  return [head, rule, ...rows, '', ...means].join('\n');
}

interface UserView {
  id: string;
  email: string;
  role: Role;
  created_at: string;
}

export interface UserService {
  /** Whether any user exists: until then the shared dashboard.password signs in. */
  any(): Promise<boolean>;
  /** A user with a password and a role in a workspace (the first owner: `mailsvc users create --owner`). */
  create(input: { email: string; password: string; workspaceId: string; role: Role }): Promise<UserView>;
  /** A one-time link that makes a user of `email` with `role` once its password is chosen; `by`: the inviter's role (an admin cannot invite an owner). */
  invite(input: { email: string; workspaceId: string; role: Role; by?: Role | undefined }): Promise<InviteResult>;
  /** The invitation a link names, if it can still be used. */
  findInvite(token: string): Promise<{ email: string; role: Role; workspaceId: string } | undefined>;
  /** Accepts an invitation with the password the person chose; the link works once. */
  acceptInvite(token: string, password: string): Promise<{ user: User; workspaceId: string }>;
  /** The user whose address and password these are; undefined otherwise (in about the same time either way). */
  verify(email: string, password: string): Promise<User | undefined>;
  roleOf(userId: string, workspaceId: string): Promise<Role | undefined>;
  /** Checks the current password, then sets the new one (the caller ends the other sessions: dashboard-auth's changePassword). */
  changePassword(userId: string, current: string, next: string): Promise<void>;
  list(workspaceId: string): Promise<UserView[]>;
  /**
   * Gives a member another role. `by` is the role of whoever asks (the CLI acts as an owner):
   * an admin may not make or unmake owners; the last owner may not be demoted.
   */
  setRole(input: { workspaceId: string; email: string; role: Role; by: Role }): Promise<UserView>;
  /** Takes a member out of the workspace and ends their sessions; the same guard rails as setRole. */
  remove(input: { workspaceId: string; email: string; by: Role }): Promise<UserView>;
}

/**
 * An invitation: mailed to the invitee through the server's own send path when the workspace
 * can send (`mailed`), else only the link, for whoever invited to pass on (`mail_error` says why).
 */
interface InviteResult {
  email: string;
  role: Role;
  expires_at: string;
  /** The one-time link: a credential for whoever holds it until used. */
  url: string;
  mailed: boolean;
  /** The queued invitation email's id. */
  email_id: string | null;
  /** Why it was not mailed. */
  mail_error: string | null;
}

const parseRole = (role: string): Role => {
  if (!isOneOf(ROLES, role)) throw validationError('role', `must be one of ${ROLES.join(', ')}`);
  return role;
};

const email = (value: string): string => {
  const address = normalizeAddress(value.trim());
  if (!address) throw validationError('email', `"${value.slice(0, 100)}" is not a valid email address`);
  return address.toLowerCase();
};

const checkPassword = (password: string): void => {
  if (password.length < MIN_PASSWORD) throw validationError('password', `at least ${MIN_PASSWORD} characters`);
  if (password.length > MAX_PASSWORD) throw validationError('password', `at most ${MAX_PASSWORD} characters`);
};

async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('base64')}$${(await scrypt(password, salt, 32)).toString('base64')}`;
}

async function passwordMatches(stored: string, password: string): Promise<boolean> {
  const [kind, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || !salt || !hash) return false;
  const given = await scrypt(password.slice(0, MAX_PASSWORD), Buffer.from(salt, 'base64'), 32);
  const expected = Buffer.from(hash, 'base64');
  return expected.length === given.length && timingSafeEqual(given, expected);
}

/** Only an owner makes, demotes or removes owners. */
function ownersOnly(by: Role, from: Role, to: Role | null): void {
  if (by !== 'owner' && (from === 'owner' || to === 'owner'))
    throw new AppError('forbidden', 'Only an owner can make, demote or remove an owner.');
  if (!allows(by, 'manage')) throw new AppError('forbidden', `Your role (${by}) may not change who is in the team.`);
}

function refused(outcome: MembershipChange, address: string): void {
  if (outcome === 'not_member') throw new AppError('not_found', `${address} is not a member of this workspace`);
  if (outcome === 'last_owner')
    throw new AppError(
      'invalid_state',
      `${address} is the last owner of this workspace: make someone else an owner first.`,
    );
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function createUserService(deps: ServiceDeps & { send: SendService }): UserService {
  const { db, clock, config } = deps;

  /**
   * Mails an invitation from dashboard.mailFrom, else the workspace's default sender (its
   * default_from_email, else noreply@ its first verified domain). Tracking is off: a tracked
   * link would carry the token through the click redirect. A refusal (no verified domain, a
   * limit) is the answer, not an error: the link is still there to pass on.
   */
  async function mailInvite(
    workspaceId: string,
    to: string,
    role: Role,
    url: string,
    expiresAt: number,
  ): Promise<{ emailId: string | null; error: string | null }> {
    const workspace = await findWorkspace(db, workspaceId);
    if (!workspace) return { emailId: null, error: 'no such workspace' };
    try {
      let from: Address;
      if (config.dashboard.mailFrom) from = parseMailbox('dashboard.mailFrom', config.dashboard.mailFrom);
      else {
        try {
          from = await deps.send.defaultSender(workspace);
        } catch {
          return {
            emailId: null,
            error: `the workspace ${workspace.name} has no verified domain to send from, and dashboard.mailFrom is not set`,
          };
        }
      }
      const name = workspace.name;
      const until = toIso(expiresAt).slice(0, 16).replace('T', ' ');
      const text = [
        `You are invited to the workspace ${name} on mailsvc, as ${role}.`,
        '',
        'Open this link to choose your password and join:',
        url,
        '',
        `The link works once, until ${until} UTC. If you did not expect this invitation, ignore this message.`,
      ].join('\n');
      const html = `<p>You are invited to the workspace <strong>${escapeHtml(name)}</strong> on mailsvc, as <strong>${role}</strong>.</p><p><a href="${escapeHtml(url)}">Choose your password and join</a></p><p>The link works once, until ${until} UTC. If you did not expect this invitation, ignore this message.</p>`;
      const outcome = await deps.send.send(workspace, {
        intake: 'dashboard',
        test: false,
        from,
        fromField: config.dashboard.mailFrom ? 'dashboard.mailFrom' : 'from',
        to: [{ name: '', address: to }],
        subject: `You are invited to ${name} on mailsvc`,
        text,
        html,
        type: 'transactional',
        trackOpens: false,
        trackClicks: false,
        tags: ['mailsvc-invitation'],
      });
      return { emailId: outcome.results[0]?.id ?? null, error: null };
    } catch (err) {
      const message = err instanceof AppError ? err.message : 'the message could not be queued';
      deps.logger.warn(
        { workspaceId, err: err instanceof AppError ? undefined : err, reason: message },
        'invitation not mailed',
      );
      return { emailId: null, error: message };
    }
  }
  // An unknown address costs a scrypt too, so timing does not tell which addresses are users.
  const decoy = hashPassword(randomBytes(16).toString('base64'));
  const view = (user: { id: string; email: string }, role: Role, createdAt: number): UserView => ({
    id: user.id,
    email: user.email,
    role,
    created_at: toIso(createdAt),
  });

  return {
    any: async () => (await countUsers(db)) > 0,

    async create(input) {
      checkPassword(input.password);
      const now = clock.now();
      const user: User = {
        id: newId(),
        email: email(input.email),
        password_hash: await hashPassword(input.password),
        created_at: now,
      };
      await saveUser(db, user, {
        user_id: user.id,
        workspace_id: input.workspaceId,
        role: parseRole(input.role),
        created_at: now,
      });
      await deps.durable();
      return view(user, input.role, now);
    },

    async invite(input) {
      const token = randomBytes(32).toString('base64url');
      const now = clock.now();
      const address = email(input.email);
      const role = parseRole(input.role);
      if (input.by) ownersOnly(input.by, 'viewer', role);
      await saveInvite(db, {
        token_hash: sha256Hex(token),
        email: address,
        workspace_id: input.workspaceId,
        role,
        created_at: now,
        expires_at: now + INVITE_TTL_MS,
        used_at: null,
      });
      await deps.durable();
      const url = `${config.http.publicUrl}/dashboard/invite/${token}`;
      const mail = await mailInvite(input.workspaceId, address, role, url, now + INVITE_TTL_MS);
      return {
        email: address,
        role,
        expires_at: toIso(now + INVITE_TTL_MS),
        url,
        mailed: mail.emailId !== null,
        email_id: mail.emailId,
        mail_error: mail.error,
      };
    },

    async findInvite(token) {
      if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
      const invite = await findInvite(db, sha256Hex(token), clock.now());
      return invite && { email: invite.email, role: invite.role, workspaceId: invite.workspace_id };
    },

    async acceptInvite(token, password) {
      checkPassword(password);
      const invite = /^[A-Za-z0-9_-]{43}$/.test(token)
        ? await findInvite(db, sha256Hex(token), clock.now())
        : undefined;
      if (!invite || !(await useInvite(db, invite.token_hash, clock.now()))) {
        throw new AppError(
          'not_found',
          'This invitation is not valid: it was already used, has expired or was mistyped. Ask for a new one.',
        );
      }
      const now = clock.now();
      const existing = await findUserByEmail(db, invite.email);
      if (existing) {
        // Someone with an account joins another workspace: their password stays theirs.
        if (!(await passwordMatches(existing.password_hash, password)))
          throw new AppError('unauthorized', 'This address has an account: enter its password to join');
        await saveMembership(db, {
          user_id: existing.id,
          workspace_id: invite.workspace_id,
          role: invite.role,
          created_at: now,
        });
        await deps.durable();
        return { user: existing, workspaceId: invite.workspace_id };
      }
      const user: User = {
        id: newId(),
        email: invite.email,
        password_hash: await hashPassword(password),
        created_at: now,
      };
      await saveUser(db, user, {
        user_id: user.id,
        workspace_id: invite.workspace_id,
        role: invite.role,
        created_at: now,
      });
      await deps.durable();
      return { user, workspaceId: invite.workspace_id };
    },

    async verify(address, password) {
      const normalized = normalizeAddress(address.trim())?.toLowerCase();
      const user = normalized ? await findUserByEmail(db, normalized) : undefined;
      const ok = await passwordMatches(user?.password_hash ?? (await decoy), password);
      return user && ok ? user : undefined;
    },

    roleOf: async (userId, workspaceId) => (await findMembership(db, userId, workspaceId))?.role,

    async changePassword(userId, current, next) {
      const user = await findUser(db, userId);
      if (!user) throw new AppError('not_found', 'No such user');
      if (!(await passwordMatches(user.password_hash, current)))
        throw validationError('current_password', 'is not your current password');
      checkPassword(next);
      if (next === current) throw validationError('password', 'must differ from the current one');
      await saveUserPassword(db, userId, await hashPassword(next));
      await deps.durable();
    },

    list: async (workspaceId) =>
      (await listMembers(db, workspaceId)).map((m) => view({ id: m.user_id, email: m.email }, m.role, m.created_at)),

    async setRole(input) {
      const role = parseRole(input.role);
      const member = await memberOf(input.workspaceId, input.email);
      if (member.role === role) return view({ id: member.user_id, email: member.email }, role, member.created_at);
      ownersOnly(input.by, member.role, role);
      refused(
        await changeMembership(db, { userId: member.user_id, workspaceId: input.workspaceId, role }),
        member.email,
      );
      await deps.durable();
      return view({ id: member.user_id, email: member.email }, role, member.created_at);
    },

    async remove(input) {
      const member = await memberOf(input.workspaceId, input.email);
      ownersOnly(input.by, member.role, null);
      refused(
        await changeMembership(db, { userId: member.user_id, workspaceId: input.workspaceId, role: null }),
        member.email,
      );
      await deps.durable();
      return view({ id: member.user_id, email: member.email }, member.role, member.created_at);
    },
  };

  async function memberOf(workspaceId: string, address: string) {
    const wanted = email(address);
    const member = (await listMembers(db, workspaceId)).find((m) => m.email === wanted);
    if (!member) throw new AppError('not_found', `${wanted} is not a member of this workspace`);
    return member;
  }
}

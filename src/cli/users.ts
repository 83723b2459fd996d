import type { Command } from 'commander';
import { ROLES, type Role } from '../services/users.js';
import { validationError } from '../shared/errors.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';
import { isOneOf } from '../shared/one-of.js';

const role = (value: string): Role => {
  if (!isOneOf(ROLES, value)) throw validationError('role', `"${value}" is not one of ${ROLES.join(', ')}`);
  return value;
};

/** The password of a new user: MAILSVC_USER_PASSWORD (scripts), else asked at the terminal; never an argument (it would sit in the shell's history and `ps`). */
async function passwordOf(io: CliIo): Promise<string> {
  const fromEnv = io.env.MAILSVC_USER_PASSWORD;
  if (fromEnv) return fromEnv;
  if (!io.ask || !io.stdinIsTTY)
    throw validationError('password', 'set MAILSVC_USER_PASSWORD, or run the command at a terminal to type it');
  return io.ask('Password (12 characters at least): ');
}

/** `mailsvc users`: dashboard users, their roles, invitations. */
export function registerUserCommands(program: Command, io: CliIo): void {
  const cmd = program
    .command('users')
    .description('dashboard users and their roles per workspace (owner, admin, developer, viewer)');

  cmd
    .command('create')
    .description(
      'create a user with a password (MAILSVC_USER_PASSWORD, or typed at the terminal); --owner for the first owner of a fresh install',
    )
    .requiredOption('--email <address>', 'their address: what they sign in with')
    .option('--owner', 'an owner of the workspace (same as --role owner)')
    .option('--role <role>', `one of ${ROLES.join(', ')}`, role)
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (opts: { email: string; owner?: boolean; role?: Role; workspace?: string }, c: Command) => {
      const chosen: Role = opts.owner ? 'owner' : (opts.role ?? 'viewer');
      const password = await passwordOf(io);
      const user = await withRuntime(c, io, async (rt) =>
        rt.services.users.create({
          email: opts.email,
          password,
          workspaceId: await workspaceOf(rt, opts.workspace),
          role: chosen,
        }),
      );
      output(
        c,
        io,
        user,
        () =>
          `Created ${user.email} (${user.role}). Sign in at /dashboard with this address; dashboard.password no longer signs in.`,
      );
    });

  cmd
    .command('invite <email>')
    .description(
      'a one-time link (7 days) that makes a user of EMAIL with --role once they choose a password; mailed to them when the workspace can send (a verified domain), else printed here to pass on',
    )
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, role)
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (email: string, opts: { role: Role; workspace?: string }, c: Command) => {
      const invite = await withRuntime(c, io, async (rt) =>
        rt.services.users.invite({ email, role: opts.role, workspaceId: await workspaceOf(rt, opts.workspace) }),
      );
      // Once mailed, the link is the invitee's alone: not printed, nor in the JSON.
      const shown = invite.mailed ? { ...invite, url: null } : invite;
      output(c, io, shown, () =>
        invite.mailed
          ? `Mailed the invitation to ${invite.email} (${invite.role}, email ${invite.email_id}); the link works once, until ${invite.expires_at}.`
          : `Invitation for ${invite.email} (${invite.role}), valid until ${invite.expires_at}; it works once.\nNot mailed (${invite.mail_error}): send them this link yourself:\n${invite.url}`,
      );
    });

  cmd
    .command('reset-2fa <email>')
    .description(
      'turns off two-factor sign-in of a user who lost their device (they set it up again at their next sign-in if a workspace requires it); their sessions end',
    )
    .action(async (email: string, _opts: unknown, c: Command) => {
      const reset = await withRuntime(c, io, (rt) => rt.services.twoFactor.reset(email));
      output(c, io, { email: reset.email, removed: reset.removed, sessions_ended: reset.sessionsEnded }, () =>
        reset.removed
          ? `Two-factor sign-in of ${reset.email} is off and their recovery codes are void; ${reset.sessionsEnded} session(s) ended. They sign in with their password and can set it up again on their Account page.`
          : `${reset.email} had no two-factor sign-in; ${reset.sessionsEnded} session(s) ended.`,
      );
    });

  cmd
    .command('list')
    .description("the workspace's users and their roles")
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (opts: { workspace?: string }, c: Command) => {
      const users = await withRuntime(c, io, async (rt) =>
        rt.services.users.list(await workspaceOf(rt, opts.workspace)),
      );
      output(c, io, { users }, () =>
        users.length === 0
          ? 'No users: dashboard.password and `mailsvc dashboard login` sign in.'
          : table([['EMAIL', 'ROLE', 'SINCE'], ...users.map((u) => [u.email, u.role, u.created_at])]),
      );
    });

  cmd
    .command('role <email> <role>')
    .description(`give a member another role (${ROLES.join(', ')}); the last owner cannot be demoted`)
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (email: string, chosen: string, opts: { workspace?: string }, c: Command) => {
      const newRole = role(chosen);
      // The CLI is the operator of the machine: an owner's rights.
      const user = await withRuntime(c, io, async (rt) =>
        rt.services.users.setRole({
          email,
          role: newRole,
          workspaceId: await workspaceOf(rt, opts.workspace),
          by: 'owner',
        }),
      );
      output(c, io, user, () => `${user.email} is now ${user.role}.`);
    });

  cmd
    .command('remove <email>')
    .description(
      'take a member out of the workspace and end their dashboard sessions; the last owner cannot be removed',
    )
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (email: string, opts: { workspace?: string }, c: Command) => {
      const user = await withRuntime(c, io, async (rt) =>
        rt.services.users.remove({ email, workspaceId: await workspaceOf(rt, opts.workspace), by: 'owner' }),
      );
      output(c, io, user, () => `${user.email} is no longer a member; their sessions have ended.`);
    });
}

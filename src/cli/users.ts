import type { Command } from 'commander';
import { ROLES, type Role } from '../services/users.js';
import { validationError } from '../shared/errors.js';
import { output, table, withRuntime, workspaceOf, type CliIo } from './io.js';

const role = (value: string): Role => {
  if (!(ROLES as readonly string[]).includes(value)) throw validationError('role', `"${value}" is not one of ${ROLES.join(', ')}`);
  return value as Role;
};

/** The password of a new user: MAILSVC_USER_PASSWORD (scripts), else asked at the terminal; never an argument (it would sit in the shell's history and `ps`). */
async function passwordOf(io: CliIo): Promise<string> {
  const fromEnv = io.env.MAILSVC_USER_PASSWORD;
  if (fromEnv) return fromEnv;
  if (!io.ask || !io.stdinIsTTY) throw validationError('password', 'set MAILSVC_USER_PASSWORD, or run the command at a terminal to type it');
  return io.ask('Password (12 characters at least): ');
}

/** `mailsvc users`: dashboard users, their roles, invitations. */
export function registerUserCommands(program: Command, io: CliIo): void {
  const cmd = program.command('users').description('dashboard users and their roles per workspace (owner, admin, developer, viewer)');

  cmd
    .command('create')
    .description('create a user with a password (MAILSVC_USER_PASSWORD, or typed at the terminal); --owner for the first owner of a fresh install')
    .requiredOption('--email <address>', 'their address: what they sign in with')
    .option('--owner', 'an owner of the workspace (same as --role owner)')
    .option('--role <role>', `one of ${ROLES.join(', ')}`, role)
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (opts: { email: string; owner?: boolean; role?: Role; workspace?: string }, c: Command) => {
      const chosen: Role = opts.owner ? 'owner' : (opts.role ?? 'viewer');
      const password = await passwordOf(io);
      const user = await withRuntime(c, io, async (rt) => rt.services.users.create({ email: opts.email, password, workspaceId: await workspaceOf(rt, opts.workspace), role: chosen }));
      output(c, io, user, () => `Created ${user.email} (${user.role}). Sign in at /dashboard with this address; dashboard.password no longer signs in.`);
    });

  cmd
    .command('invite <email>')
    .description('a one-time link (7 days) that makes a user of EMAIL with --role once they choose a password; printed here, to send them')
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, role)
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (email: string, opts: { role: Role; workspace?: string }, c: Command) => {
      const invite = await withRuntime(c, io, async (rt) => rt.services.users.invite({ email, role: opts.role, workspaceId: await workspaceOf(rt, opts.workspace) }));
      output(c, io, invite, () => `Invitation for ${invite.email} (${invite.role}), valid until ${invite.expires_at}; it works once:\n${invite.url}`);
    });

  cmd
    .command('list')
    .description("the workspace's users and their roles")
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (opts: { workspace?: string }, c: Command) => {
      const users = await withRuntime(c, io, async (rt) => rt.services.users.list(await workspaceOf(rt, opts.workspace)));
      output(c, io, { users }, () => (users.length === 0 ? 'No users: dashboard.password and `mailsvc dashboard login` sign in.' : table([['EMAIL', 'ROLE', 'SINCE'], ...users.map((u) => [u.email, u.role, u.created_at])])));
    });

  cmd
    .command('role <email> <role>')
    .description(`give a member another role (${ROLES.join(', ')}); the last owner cannot be demoted`)
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (email: string, chosen: string, opts: { workspace?: string }, c: Command) => {
      const newRole = role(chosen);
      // The CLI is the operator of the machine: an owner's rights.
      const user = await withRuntime(c, io, async (rt) => rt.services.users.setRole({ email, role: newRole, workspaceId: await workspaceOf(rt, opts.workspace), by: 'owner' }));
      output(c, io, user, () => `${user.email} is now ${user.role}.`);
    });

  cmd
    .command('remove <email>')
    .description('take a member out of the workspace and end their dashboard sessions; the last owner cannot be removed')
    .option('--workspace <id>', 'workspace (default: the default workspace)')
    .action(async (email: string, opts: { workspace?: string }, c: Command) => {
      const user = await withRuntime(c, io, async (rt) => rt.services.users.remove({ email, workspaceId: await workspaceOf(rt, opts.workspace), by: 'owner' }));
      output(c, io, user, () => `${user.email} is no longer a member; their sessions have ended.`);
    });
}

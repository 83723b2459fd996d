import type { Selectable } from 'kysely';
import type { Db } from './db.js';
import type { Role, UserInvitesTable, UsersTable, WorkspaceMembersTable } from './tables/users.js';
import { refuseDuplicate } from './unique-violation.js';

export { ROLES, type Role } from './tables/users.js';

/** A dashboard user: an address and a password hash. */
export type User = Selectable<UsersTable>;
/** A user's role in one workspace. */
export type Membership = Selectable<WorkspaceMembersTable>;
export type UserInvite = Selectable<UserInvitesTable>;

export const countUsers = async (db: Db): Promise<number> => Number((await db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);

export const findUserByEmail = (db: Db, email: string): Promise<User | undefined> => db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();

export const findUser = (db: Db, id: string): Promise<User | undefined> => db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();

/** Saves a user and its first membership together; an address already taken is refused (409). */
export async function saveUser(db: Db, user: User, membership: Membership): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await refuseDuplicate('users', () => trx.insertInto('users').values(user).execute(), `A user with the address ${user.email} already exists`);
    await trx.insertInto('workspace_members').values(membership).execute();
  });
}

/** Gives a user a role in a workspace (or changes it). */
export async function saveMembership(db: Db, m: Membership): Promise<void> {
  await db
    .insertInto('workspace_members')
    .values(m)
    .onConflict((oc) => oc.columns(['user_id', 'workspace_id']).doUpdateSet({ role: m.role }))
    .execute();
}

export const findMembership = (db: Db, userId: string, workspaceId: string): Promise<Membership | undefined> =>
  db.selectFrom('workspace_members').selectAll().where('user_id', '=', userId).where('workspace_id', '=', workspaceId).executeTakeFirst();

/** The members of a workspace with their address, oldest first. */
export const listMembers = (db: Db, workspaceId: string): Promise<Array<Membership & { email: string }>> =>
  db
    .selectFrom('workspace_members')
    .innerJoin('users', 'users.id', 'workspace_members.user_id')
    .select(['workspace_members.user_id', 'workspace_members.workspace_id', 'workspace_members.role', 'workspace_members.created_at', 'users.email'])
    .where('workspace_members.workspace_id', '=', workspaceId)
    .orderBy('workspace_members.created_at')
    .execute();

export const saveInvite = async (db: Db, invite: UserInvite): Promise<void> => {
  await db.insertInto('user_invites').values(invite).execute();
};

export const findInvite = (db: Db, tokenHash: string, now: number): Promise<UserInvite | undefined> =>
  db.selectFrom('user_invites').selectAll().where('token_hash', '=', tokenHash).where('used_at', 'is', null).where('expires_at', '>', now).executeTakeFirst();

/** Uses an invitation once: in one statement, so two browsers cannot both accept it. */
export async function useInvite(db: Db, tokenHash: string, now: number): Promise<boolean> {
  const r = await db.updateTable('user_invites').set({ used_at: now }).where('token_hash', '=', tokenHash).where('used_at', 'is', null).where('expires_at', '>', now).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Why a change of membership was refused, or `ok`. */
export type MembershipChange = 'ok' | 'not_member' | 'last_owner';

const ownersOf = async (db: Db, workspaceId: string): Promise<number> =>
  Number((await db.selectFrom('workspace_members').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).where('role', '=', 'owner').executeTakeFirstOrThrow()).n);

/**
 * Changes a member's role, or removes them (`role` null), unless that would leave the
 * workspace without an owner; counted in the same transaction as the change, so two admins
 * demoting the last two owners at once cannot both succeed. Removal ends the person's
 * dashboard sessions in that transaction too: a removed colleague's open tab stops working at
 * once. (Sessions are the user's, across workspaces: all of them end.)
 */
export async function changeMembership(db: Db, change: { userId: string; workspaceId: string; role: Role | null }): Promise<MembershipChange> {
  return db.transaction().execute(async (trx) => {
    const current = await trx.selectFrom('workspace_members').select('role').where('user_id', '=', change.userId).where('workspace_id', '=', change.workspaceId).executeTakeFirst();
    if (!current) return 'not_member';
    if (current.role === 'owner' && change.role !== 'owner' && (await ownersOf(trx, change.workspaceId)) <= 1) return 'last_owner';
    if (change.role === null) {
      await trx.deleteFrom('workspace_members').where('user_id', '=', change.userId).where('workspace_id', '=', change.workspaceId).execute();
      await endUserSessions(trx, change.userId);
    } else {
      await trx.updateTable('workspace_members').set({ role: change.role }).where('user_id', '=', change.userId).where('workspace_id', '=', change.workspaceId).execute();
    }
    return 'ok';
  });
}

/**
 * Ends every dashboard session of a user. The seam for sign-in's own needs (a password change,
 * "sign out everywhere"): one statement, usable inside another transaction.
 */
export async function endUserSessions(db: Db, userId: string): Promise<number> {
  const r = await db.deleteFrom('dashboard_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

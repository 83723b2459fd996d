import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import type {
  Role,
  UserInvitesTable,
  UsersTable,
  UserTwoFactorTable,
  WorkspaceMembersTable,
  WorkspaceTwoFactorTable,
} from './tables/users.js';
import { refuseDuplicate } from './infra/unique-violation.js';

export { ROLES, type Role } from './tables/users.js';

/** A dashboard user: an address and a password hash. */
export type User = Selectable<UsersTable>;
/** A user's role in one workspace. */
type Membership = Selectable<WorkspaceMembersTable>;
type UserInvite = Selectable<UserInvitesTable>;

export const countUsers = async (db: Db): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

export const findUserByEmail = (db: Db, email: string): Promise<User | undefined> =>
  db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();

export const findUser = (db: Db, id: string): Promise<User | undefined> =>
  db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();

/** Saves a user and its first membership together; an address already taken is refused (409). */
export async function saveUser(db: Db, user: User, membership: Membership): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await refuseDuplicate(
      'users',
      () => trx.insertInto('users').values(user).execute(),
      `A user with the address ${user.email} already exists`,
    );
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
  db
    .selectFrom('workspace_members')
    .selectAll()
    .where('user_id', '=', userId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();

/** The members of a workspace with their address, oldest first. */
export const listMembers = (db: Db, workspaceId: string): Promise<Array<Membership & { email: string }>> =>
  db
    .selectFrom('workspace_members')
    .innerJoin('users', 'users.id', 'workspace_members.user_id')
    .select([
      'workspace_members.user_id',
      'workspace_members.workspace_id',
      'workspace_members.role',
      'workspace_members.created_at',
      'users.email',
    ])
    .where('workspace_members.workspace_id', '=', workspaceId)
    .orderBy('workspace_members.created_at')
    .execute();

export const saveInvite = async (db: Db, invite: UserInvite): Promise<void> => {
  await db.insertInto('user_invites').values(invite).execute();
};

export const findInvite = (db: Db, tokenHash: string, now: number): Promise<UserInvite | undefined> =>
  db
    .selectFrom('user_invites')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();

/** Uses an invitation once: in one statement, so two browsers cannot both accept it. */
export async function useInvite(db: Db, tokenHash: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('user_invites')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Changes a user's password hash. */
export async function saveUserPassword(db: Db, userId: string, passwordHash: string): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute();
}

/** A user's authenticator, confirmed or still being enrolled. */
type TwoFactor = Selectable<UserTwoFactorTable>;

export const findTwoFactor = (db: Db, userId: string): Promise<TwoFactor | undefined> =>
  db.selectFrom('user_two_factor').selectAll().where('user_id', '=', userId).executeTakeFirst();

/** Starts (or starts again) an enrolment: an unconfirmed secret, replacing an earlier unconfirmed one; a confirmed one is kept. */
export async function savePendingTwoFactor(db: Db, userId: string, secretSealed: string, now: number): Promise<void> {
  await db
    .insertInto('user_two_factor')
    .values({ user_id: userId, secret_sealed: secretSealed, created_at: now, confirmed_at: null, last_step: null })
    .onConflict((oc) =>
      oc
        .column('user_id')
        .doUpdateSet({ secret_sealed: secretSealed, created_at: now, last_step: null })
        .where('user_two_factor.confirmed_at', 'is', null),
    )
    .execute();
}

/**
 * Confirms an enrolment and stores its recovery codes, in one transaction. False when the
 * enrolment was confirmed meanwhile (another tab) or replaced.
 */
export async function confirmTwoFactor(
  db: Db,
  userId: string,
  secretSealed: string,
  step: number,
  codeHashes: string[],
  now: number,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable('user_two_factor')
      .set({ confirmed_at: now, last_step: step })
      .where('user_id', '=', userId)
      .where('secret_sealed', '=', secretSealed)
      .where('confirmed_at', 'is', null)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) return false;
    await trx.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
    await trx
      .insertInto('user_recovery_codes')
      .values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash, created_at: now, used_at: null })))
      .execute();
    return true;
  });
}

/** Why a change of membership was refused, or `ok`. */
export type MembershipChange = 'ok' | 'not_member' | 'last_owner';

const ownersOf = async (db: Db, workspaceId: string): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('workspace_members')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', workspaceId)
        .where('role', '=', 'owner')
        .executeTakeFirstOrThrow()
    ).n,
  );

/**
 * Changes a member's role, or removes them (`role` null), unless that would leave the
 * workspace without an owner; counted in the same transaction as the change, so two admins
 * demoting the last two owners at once cannot both succeed. Removal ends the person's
 * dashboard sessions in that transaction too: a removed colleague's open tab stops working at
 * once. (Sessions are the user's, across workspaces: all of them end.)
 */
export async function changeMembership(
  db: Db,
  change: { userId: string; workspaceId: string; role: Role | null },
): Promise<MembershipChange> {
  return db.transaction().execute(async (trx) => {
    const current = await trx
      .selectFrom('workspace_members')
      .select('role')
      .where('user_id', '=', change.userId)
      .where('workspace_id', '=', change.workspaceId)
      .executeTakeFirst();
    if (!current) return 'not_member';
    if (current.role === 'owner' && change.role !== 'owner' && (await ownersOf(trx, change.workspaceId)) <= 1)
      return 'last_owner';
    if (change.role === null) {
      await trx
        .deleteFrom('workspace_members')
        .where('user_id', '=', change.userId)
        .where('workspace_id', '=', change.workspaceId)
        .execute();
      await endUserSessions(trx, change.userId);
    } else {
      await trx
        .updateTable('workspace_members')
        .set({ role: change.role })
        .where('user_id', '=', change.userId)
        .where('workspace_id', '=', change.workspaceId)
        .execute();
    }
    return 'ok';
  });
}

/**
 * Records the time step of an accepted code, only if it is later than the last one: of two
 * requests with the same code (two tabs, two nodes, a replay) exactly one gets true.
 */
export async function useTimeStep(db: Db, userId: string, step: number): Promise<boolean> {
  const r = await db
    .updateTable('user_two_factor')
    .set({ last_step: step })
    .where('user_id', '=', userId)
    .where('confirmed_at', 'is not', null)
    .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', step)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Uses a recovery code once; true when this call used it. */
export async function useRecoveryCode(db: Db, userId: string, codeHash: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable('user_recovery_codes')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function countUnusedRecoveryCodes(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('user_recovery_codes')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Replaces a user's recovery codes (new ones asked for, or none left). */
export async function replaceRecoveryCodes(db: Db, userId: string, codeHashes: string[], now: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
    if (codeHashes.length > 0)
      await trx
        .insertInto('user_recovery_codes')
        .values(codeHashes.map((code_hash) => ({ user_id: userId, code_hash, created_at: now, used_at: null })))
        .execute();
  });
}

/** Removes a user's authenticator and recovery codes; true when there was one. */
export async function removeTwoFactor(db: Db, userId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const r = await trx.deleteFrom('user_two_factor').where('user_id', '=', userId).executeTakeFirst();
    await trx.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
    return Number(r.numDeletedRows) > 0;
  });
}

export const findTwoFactorRequirement = (
  db: Db,
  workspaceId: string,
): Promise<Selectable<WorkspaceTwoFactorTable> | undefined> =>
  db.selectFrom('workspace_two_factor').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();

export async function saveTwoFactorRequirement(
  db: Db,
  workspaceId: string,
  required: { at: number; by: string | null } | null,
): Promise<void> {
  if (!required) {
    await db.deleteFrom('workspace_two_factor').where('workspace_id', '=', workspaceId).execute();
    return;
  }
  await db
    .insertInto('workspace_two_factor')
    .values({ workspace_id: workspaceId, required_at: required.at, required_by: required.by })
    .onConflict((oc) => oc.column('workspace_id').doNothing())
    .execute();
}

/**
 * What the dashboard checks on every request of a signed-in user: whether the workspace
 * requires a second factor and whether the user has a confirmed one.
 */
export async function findTwoFactorGate(
  db: Db,
  userId: string,
  workspaceId: string,
): Promise<{ required: boolean; enrolled: boolean }> {
  const [required, enrolled] = await Promise.all([
    db
      .selectFrom('workspace_two_factor')
      .select('workspace_id')
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst(),
    db
      .selectFrom('user_two_factor')
      .select('user_id')
      .where('user_id', '=', userId)
      .where('confirmed_at', 'is not', null)
      .executeTakeFirst(),
  ]);
  return { required: required !== undefined, enrolled: enrolled !== undefined };
}

/**
 * Ends every dashboard session of a user. The seam for sign-in's own needs (a password change,
 * "sign out everywhere"): one statement, usable inside another transaction.
 */
async function endUserSessions(db: Db, userId: string): Promise<number> {
  const r = await db.deleteFrom('dashboard_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

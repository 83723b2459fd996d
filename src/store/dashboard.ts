import type { Db } from './infra/db.js';
import type { DashboardSession } from './tables.js';

export const saveDashboardSession = async (db: Db, row: DashboardSession): Promise<void> => {
  await db.insertInto('dashboard_sessions').values(row).execute();
};

export const findDashboardSession = (db: Db, idHash: string, now: number): Promise<DashboardSession | undefined> =>
  db
    .selectFrom('dashboard_sessions')
    .selectAll()
    .where('id_hash', '=', idHash)
    .where('expires_at', '>', now)
    .executeTakeFirst();

export const deleteDashboardSession = async (db: Db, idHash: string): Promise<void> => {
  await db.deleteFrom('dashboard_sessions').where('id_hash', '=', idHash).execute();
};

export const setDashboardSessionWorkspace = async (db: Db, idHash: string, workspaceId: string): Promise<void> => {
  await db.updateTable('dashboard_sessions').set({ workspace_id: workspaceId }).where('id_hash', '=', idHash).execute();
};

/** Forgets expired sessions and login links; both are useless once past their expiry. */
export async function deleteExpiredDashboardRows(db: Db, now: number): Promise<void> {
  await db.deleteFrom('dashboard_sessions').where('expires_at', '<=', now).execute();
  await db.deleteFrom('dashboard_login_tokens').where('expires_at', '<=', now).execute();
}

export const saveLoginToken = async (
  db: Db,
  row: { token_hash: string; created_at: number; expires_at: number },
): Promise<void> => {
  await db
    .insertInto('dashboard_login_tokens')
    .values({ ...row, used_at: null })
    .execute();
};

/**
 * Marks a login link used, in one statement so that two nodes (or two tabs) redeeming the
 * same link cannot both succeed. True when this call was the one that used it.
 */
export async function useLoginToken(db: Db, tokenHash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('dashboard_login_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** A user's sessions that have not expired, newest first. */
export const listUserSessions = (db: Db, userId: string, now: number): Promise<DashboardSession[]> =>
  db
    .selectFrom('dashboard_sessions')
    .selectAll()
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .execute();

/** Ends a user's sessions but `keep` (null: every one); returns how many ended. */
export async function deleteUserSessions(db: Db, userId: string, keep: string | null): Promise<number> {
  let q = db.deleteFrom('dashboard_sessions').where('user_id', '=', userId);
  if (keep !== null) q = q.where('id_hash', '!=', keep);
  const r = await q.executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Ends one session of a user; false when it was not theirs or is gone already. */
export async function deleteUserSession(db: Db, userId: string, idHash: string): Promise<boolean> {
  const r = await db
    .deleteFrom('dashboard_sessions')
    .where('user_id', '=', userId)
    .where('id_hash', '=', idHash)
    .executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

/** Notes a session's latest request. */
export async function touchDashboardSession(db: Db, idHash: string, now: number): Promise<void> {
  await db.updateTable('dashboard_sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).execute();
}

import type { Db } from './db.js';
import type { Workspace, WorkspacesTable } from './tables.js';
import type { Updateable } from 'kysely';

export const saveWorkspace = async (db: Db, row: Workspace): Promise<void> => {
  await db.insertInto('workspaces').values(row).execute();
};

export const findWorkspace = (db: Db, id: string): Promise<Workspace | undefined> =>
  db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();

export const listWorkspaces = (db: Db): Promise<Workspace[]> =>
  db.selectFrom('workspaces').selectAll().orderBy('created_at').orderBy('id').execute();

export const updateWorkspace = async (db: Db, id: string, changes: Updateable<WorkspacesTable>): Promise<boolean> => {
  const result = await db.updateTable('workspaces').set(changes).where('id', '=', id).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
};

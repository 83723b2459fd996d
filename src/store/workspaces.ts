import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import type { WorkspacesTable } from './tables/workspaces.js';

export type { Plan } from './tables/workspaces.js';

/** A workspace: every column is kept as it is read. */
export type Workspace = Selectable<WorkspacesTable>;

export const saveWorkspace = async (db: Db, workspace: Workspace): Promise<void> => {
  await db.insertInto('workspaces').values(workspace).execute();
};

export const findWorkspace = (db: Db, id: string): Promise<Workspace | undefined> =>
  db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();

export const listWorkspaces = (db: Db): Promise<Workspace[]> =>
  db.selectFrom('workspaces').selectAll().orderBy('created_at').orderBy('id').execute();

export const updateWorkspace = async (
  db: Db,
  id: string,
  changes: Partial<Omit<Workspace, 'id'>>,
): Promise<boolean> => {
  const result = await db.updateTable('workspaces').set(changes).where('id', '=', id).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
};

import type { Updateable } from 'kysely';
import type { Db } from './db.js';
import { readPage, type ListPage, type PageOf } from './list-page.js';
import type { Template, TemplatesTable } from './tables.js';

export const saveTemplate = async (db: Db, row: Template): Promise<void> => {
  await db.insertInto('templates').values(row).execute();
};

export const findTemplate = (db: Db, workspaceId: string, id: string): Promise<Template | undefined> =>
  db.selectFrom('templates').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();

export const listTemplates = (db: Db, workspaceId: string, page: ListPage): Promise<PageOf<Template>> =>
  readPage(db.selectFrom('templates').selectAll().where('workspace_id', '=', workspaceId), 'id', page);

export const findTemplateByAlias = (db: Db, workspaceId: string, alias: string): Promise<Template | undefined> =>
  db.selectFrom('templates').selectAll().where('workspace_id', '=', workspaceId).where('alias', '=', alias).executeTakeFirst();

export const countTemplates = async (db: Db, workspaceId: string): Promise<number> =>
  Number((await db.selectFrom('templates').select((eb) => eb.fn.countAll<number>().as('n')).where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow()).n);

export const updateTemplate = async (db: Db, workspaceId: string, id: string, changes: Updateable<TemplatesTable>): Promise<boolean> =>
  Number((await db.updateTable('templates').set(changes).where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numUpdatedRows) > 0;

export const removeTemplate = async (db: Db, workspaceId: string, id: string): Promise<boolean> =>
  Number((await db.deleteFrom('templates').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()).numDeletedRows) > 0;

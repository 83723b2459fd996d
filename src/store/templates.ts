import type { Selectable } from 'kysely';
import type { Db } from './infra/db.js';
import { readPage, type ListPage, type PageOf } from './infra/list-page.js';
import { jsonOrNull, rowCodec, type Column, type EntityOf } from './infra/row-codec.js';
import type { TemplatesTable, TemplateVersionsTable } from './tables/templates.js';
import { refuseDuplicate } from './infra/unique-violation.js';

/** A declared variable: its type, and the value used when a send gives none. */
export interface TemplateVariable {
  key: string;
  type: 'string' | 'number';
  fallback_value: string | number | null;
  /** What previews fill in when they are given no value (never sent). */
  sample_value?: string | number | null;
}

/** The version of a template mail is sent with, once published. */
export interface PublishedTemplate {
  subject: string;
  html: string;
  text: string | null;
  from: string | null;
  reply_to: string[] | null;
  variables: TemplateVariable[] | null;
}

const replyToColumn = jsonOrNull<string[]>();
const variablesColumn = jsonOrNull<TemplateVariable[]>();

/** A published version is kept as JSON whose reply_to and variables are JSON text of their own, as the template's columns are. */
const publishedColumn: Column<string | null, PublishedTemplate | null> = {
  decode: (stored) => {
    if (stored === null) return null;
    const p = JSON.parse(stored) as Omit<PublishedTemplate, 'reply_to' | 'variables'> & {
      reply_to: string | null;
      variables: string | null;
    };
    return { ...p, reply_to: replyToColumn.decode(p.reply_to), variables: variablesColumn.decode(p.variables) };
  },
  encode: (p) =>
    p === null
      ? null
      : JSON.stringify({
          ...p,
          reply_to: replyToColumn.encode(p.reply_to),
          variables: variablesColumn.encode(p.variables),
        }),
};

const templateRows = rowCodec<Selectable<TemplatesTable>>()({
  reply_to: replyToColumn,
  variables: variablesColumn,
  published: publishedColumn,
});
/** A template; `published` is the version mail is sent with (null: never published). */
export type Template = EntityOf<typeof templateRows>;

/** Writes a template; an alias another template of the workspace has is `already_exists`. */
const refuseTakenAlias = <T>(alias: string | null | undefined, write: () => Promise<T>): Promise<T> =>
  alias
    ? refuseDuplicate('templates', write, `alias: another template is named ${alias}`, { field: 'alias' })
    : write();

export const saveTemplate = async (db: Db, template: Template): Promise<void> => {
  await refuseTakenAlias(template.alias, () =>
    db.insertInto('templates').values(templateRows.encode(template)).execute(),
  );
};

export const findTemplate = async (db: Db, workspaceId: string, id: string): Promise<Template | undefined> => {
  const row = await db
    .selectFrom('templates')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && templateRows.decode(row);
};

export const listTemplates = async (db: Db, workspaceId: string, page: ListPage): Promise<PageOf<Template>> =>
  templateRows.decodePage(
    await readPage(db.selectFrom('templates').selectAll().where('workspace_id', '=', workspaceId), 'id', page),
  );

export const findTemplateByAlias = async (
  db: Db,
  workspaceId: string,
  alias: string,
): Promise<Template | undefined> => {
  const row = await db
    .selectFrom('templates')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('alias', '=', alias)
    .executeTakeFirst();
  return row && templateRows.decode(row);
};

export const countTemplates = async (db: Db, workspaceId: string): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('templates')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

export const updateTemplate = async (
  db: Db,
  workspaceId: string,
  id: string,
  changes: Partial<Omit<Template, 'id'>>,
): Promise<boolean> => {
  const write = () =>
    db
      .updateTable('templates')
      .set(templateRows.encode(changes))
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .executeTakeFirst();
  return Number((await refuseTakenAlias(changes.alias, write)).numUpdatedRows) > 0;
};

export const removeTemplate = async (db: Db, workspaceId: string, id: string): Promise<boolean> =>
  Number(
    (await db.deleteFrom('templates').where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst())
      .numDeletedRows,
  ) > 0;

const versionRows = rowCodec<Selectable<TemplateVersionsTable>>()({
  reply_to: replyToColumn,
  variables: variablesColumn,
});
/** A published version of a template, as it was published. */
export type TemplateVersion = EntityOf<typeof versionRows>;

/** Writes a new version; a number the template already has is `already_exists` (two publishes at once: one wins). */
export const saveTemplateVersion = async (db: Db, version: TemplateVersion): Promise<void> => {
  await refuseDuplicate(
    'template_versions',
    () => db.insertInto('template_versions').values(versionRows.encode(version)).execute(),
    'version: the template was published at the same moment; publish again',
    { field: 'version' },
  );
};

/** The template's versions, newest first. */
export const listTemplateVersions = async (
  db: Db,
  workspaceId: string,
  templateId: string,
): Promise<TemplateVersion[]> =>
  (
    await db
      .selectFrom('template_versions')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('template_id', '=', templateId)
      .orderBy('version', 'desc')
      .execute()
  ).map((r) => versionRows.decode(r));

export const findTemplateVersion = async (
  db: Db,
  workspaceId: string,
  templateId: string,
  version: number,
): Promise<TemplateVersion | undefined> => {
  const row = await db
    .selectFrom('template_versions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('template_id', '=', templateId)
    .where('version', '=', version)
    .executeTakeFirst();
  return row && versionRows.decode(row);
};

export const lastTemplateVersion = async (db: Db, workspaceId: string, templateId: string): Promise<number> =>
  Number(
    (
      await db
        .selectFrom('template_versions')
        .select((eb) => eb.fn.max<number>('version').as('n'))
        .where('workspace_id', '=', workspaceId)
        .where('template_id', '=', templateId)
        .executeTakeFirst()
    )?.n ?? 0,
  );

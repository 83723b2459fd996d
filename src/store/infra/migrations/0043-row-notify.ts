import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

const TABLES = ['credentials', 'workspaces', 'domains'];

/**
 * PostgreSQL: a change committed to a row every request reads (an API key, a workspace, a
 * sending domain) notifies `mailsvc_rows` with the table's name, whichever node or CLI made
 * it, so that every node's row cache (store/infra/row-cache.ts) drops it. A key's last use, written
 * in the background, is not a change anyone caches. SQLite keeps no such cache.
 */
export const rowNotify = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    await sql`
      create function mailsvc_row_changed() returns trigger language plpgsql as $$
      begin
        if tg_op = 'UPDATE' and tg_table_name = 'credentials' and (to_jsonb(old) - 'last_used_at') = (to_jsonb(new) - 'last_used_at') then
          return null;
        end if;
        perform pg_notify('mailsvc_rows', tg_table_name);
        return null;
      end $$`.execute(db);
    for (const table of TABLES) {
      await sql`create trigger ${sql.id(`${table}_changed`)} after insert or update or delete on ${sql.table(table)} for each row execute function mailsvc_row_changed()`.execute(
        db,
      );
    }
  },
  async down(db: Kysely<any>) {
    if (dialect !== 'postgres') return;
    for (const table of TABLES)
      await sql`drop trigger ${sql.id(`${table}_changed`)} on ${sql.table(table)}`.execute(db);
    await sql`drop function mailsvc_row_changed()`.execute(db);
  },
});

import { sql, type Kysely, type Migration } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Hourly statistics count test mail too, apart (`test` = 1), so that the overview can show a
 * newcomer's test mail while there is no live mail yet; every figure of live mail reads the
 * rows with `test` = 0, as before. The flag joins the primary key: SQLite cannot change a
 * primary key in place, so the table is rebuilt (nothing references it).
 */
export const statsTest = (dialect: Dialect): Migration => ({
  async up(db: Kysely<any>) {
    if (dialect === 'postgres') {
      await sql`alter table stats_hourly add column test integer not null default 0`.execute(db);
      await sql`alter table stats_hourly drop constraint stats_hourly_pk`.execute(db);
      await sql`alter table stats_hourly add constraint stats_hourly_pk primary key (workspace_id, hour, domain_id, destination, metric, test)`.execute(
        db,
      );
      return;
    }
    await db.schema.alterTable('stats_hourly').renameTo('stats_hourly_old').execute();
    await sql`drop index stats_hourly_hour`.execute(db);
    await db.schema
      .createTable('stats_hourly')
      .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
      .addColumn('hour', 'bigint', (c) => c.notNull())
      .addColumn('domain_id', 'text', (c) => c.notNull())
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('metric', 'text', (c) => c.notNull())
      .addColumn('count', 'bigint', (c) => c.notNull())
      .addColumn('test', 'integer', (c) => c.notNull().defaultTo(0))
      .addPrimaryKeyConstraint('stats_hourly_pk', [
        'workspace_id',
        'hour',
        'domain_id',
        'destination',
        'metric',
        'test',
      ])
      .execute();
    await sql`insert into stats_hourly (workspace_id, hour, domain_id, destination, metric, count, test)
      select workspace_id, hour, domain_id, destination, metric, count, 0 from stats_hourly_old`.execute(db);
    await db.schema.dropTable('stats_hourly_old').execute();
    await db.schema.createIndex('stats_hourly_hour').on('stats_hourly').column('hour').execute();
  },
  async down(db: Kysely<any>) {
    await db.deleteFrom('stats_hourly').where('test', '=', 1).execute();
    if (dialect === 'postgres') {
      await sql`alter table stats_hourly drop constraint stats_hourly_pk`.execute(db);
      await sql`alter table stats_hourly add constraint stats_hourly_pk primary key (workspace_id, hour, domain_id, destination, metric)`.execute(
        db,
      );
    }
    await db.schema.alterTable('stats_hourly').dropColumn('test').execute();
  },
});

import { AsyncLocalStorage } from 'node:async_hooks';
import { CompiledQuery, type DatabaseConnection, type Driver, type QueryResult, type TransactionSettings } from 'kysely';
import type { Db } from './db.js';

/**
 * One transaction around a whole use case, without the use case passing a transaction handle
 * down: every query run inside `atomically(db, work)` (by `work` and whatever it awaits, the
 * store's functions included) goes to one connection in one transaction, committed when `work`
 * resolves and rolled back when it throws. A transaction begun inside (`db.transaction()`)
 * becomes a savepoint of it.
 *
 * Why: the audit log's entry must commit with the change it records, or not at all (a change
 * without its record, or a record of a change that was rolled back, is what an audit log must
 * never show). The audit trail (services/audit-trail.ts) runs each audited use case and the
 * append of its entry in one such unit.
 *
 * The transaction begins at the first query, so work done before it (password hashing, DNS)
 * holds no lock. Queries from other requests wait for the connection (SQLite: the one
 * connection; PostgreSQL: a pool connection of their own). Writes the commit batcher would
 * group are run in the unit instead (`inUnit`), so a use case never waits for a batch that
 * waits for its connection.
 */

interface Unit {
  owner: Ambience;
  open: boolean;
  connection?: Promise<DatabaseConnection>;
  savepoints: number;
}

const scope = new AsyncLocalStorage<Unit>();

/** Whether the caller runs inside a unit of `atomically` (the commit batcher asks). */
export const inUnit = (): boolean => scope.getStore()?.open === true;

/**
 * Runs `fn` outside any unit: for timers and flushers shared by every request (the commit
 * batcher's), which would otherwise carry the unit of the request that happened to start them
 * and write other requests' rows into its transaction.
 */
export const outsideUnit = <T>(fn: () => T): T => scope.exit(fn);

/** A connection handed to queries inside a unit: the unit's own, never released by them. */
class Joined implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    readonly unit: Unit,
  ) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.inner.executeQuery<R>(query);
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

/** The driver side of `atomically`: one per store, wrapping its driver. */
export class Ambience {
  private driver: Driver | undefined;

  wrap(inner: Driver): Driver {
    this.driver = inner;
    return new AmbientDriver(inner, this);
  }

  /** The unit's connection, begun at its first query. */
  connectionFor(unit: Unit): Promise<DatabaseConnection> {
    const driver = this.driver!;
    unit.connection ??= (async () => {
      const c = await driver.acquireConnection();
      try {
        await driver.beginTransaction(c, {});
      } catch (err) {
        await driver.releaseConnection(c);
        throw err;
      }
      return c;
    })();
    return unit.connection;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    const outer = scope.getStore();
    if (outer?.open && outer.owner === this) return work();
    const unit: Unit = { owner: this, open: true, savepoints: 0 };
    const driver = this.driver;
    let result: T;
    try {
      result = await scope.run(unit, work);
    } catch (err) {
      unit.open = false;
      const c = await unit.connection?.catch(() => undefined);
      if (c && driver) {
        try {
          await driver.rollbackTransaction(c);
        } finally {
          await driver.releaseConnection(c);
        }
      }
      throw err;
    }
    unit.open = false;
    const c = unit.connection && (await unit.connection);
    if (c && driver) {
      try {
        await driver.commitTransaction(c);
      } catch (err) {
        await driver.rollbackTransaction(c).catch(() => undefined);
        throw err;
      } finally {
        await driver.releaseConnection(c);
      }
    }
    return result;
  }
}

class AmbientDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly ambience: Ambience,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const unit = scope.getStore();
    if (!unit?.open || unit.owner !== this.ambience) return this.inner.acquireConnection();
    return new Joined(await this.ambience.connectionFor(unit), unit);
  }

  async beginTransaction(c: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (!(c instanceof Joined)) return this.inner.beginTransaction(c, settings);
    c.unit.savepoints++;
    await c.inner.executeQuery(CompiledQuery.raw(`savepoint unit_${c.unit.savepoints}`));
  }

  async commitTransaction(c: DatabaseConnection): Promise<void> {
    if (!(c instanceof Joined)) return this.inner.commitTransaction(c);
    await c.inner.executeQuery(CompiledQuery.raw(`release savepoint unit_${c.unit.savepoints--}`));
  }

  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    if (!(c instanceof Joined)) return this.inner.rollbackTransaction(c);
    const name = `unit_${c.unit.savepoints--}`;
    await c.inner.executeQuery(CompiledQuery.raw(`rollback to savepoint ${name}`));
    await c.inner.executeQuery(CompiledQuery.raw(`release savepoint ${name}`));
  }

  async releaseConnection(c: DatabaseConnection): Promise<void> {
    if (!(c instanceof Joined)) return this.inner.releaseConnection(c);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

const ambiences = new WeakMap<Db, Ambience>();

/** Registers the ambience of a store's Kysely instance (db.ts). */
export const registerAmbience = (db: Db, ambience: Ambience): void => {
  ambiences.set(db, ambience);
};

/**
 * Runs `work` as one transaction on `db` (see above); inside another unit of the same store it
 * joins that one. A database opened without an ambience (none in this program) runs `work` as is.
 */
export const atomically = <T>(db: Db, work: () => Promise<T>): Promise<T> => ambiences.get(db)?.run(work) ?? work();

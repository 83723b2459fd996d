import { AsyncLocalStorage } from 'node:async_hooks';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type Kysely,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

/** Any of the store's databases (db.ts's Db; named loosely here, as db.ts builds on this file). */
type Db = Kysely<any>;

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
 * The transaction begins at the first write (reads before it run as they would outside), so
 * work done before it (validation reads, password hashing, DNS) holds no lock. Queries from other requests wait for the connection (SQLite: the one
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

const isRead = (query: CompiledQuery): boolean => query.query.kind === 'SelectQueryNode';

/**
 * A connection handed to queries inside a unit. Until the unit's first write, reads take a
 * connection of their own for the moment they run (nothing of the unit's is uncommitted yet),
 * so a use case that reads, then waits (DNS, hashing), then writes holds no lock while it
 * waits; from the first write on, everything runs on the unit's connection.
 */
class Joined implements DatabaseConnection {
  constructor(
    readonly unit: Unit,
    private readonly ambience: Ambience,
    private readonly driver: Driver,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (!this.unit.connection && isRead(query)) {
      const c = await this.driver.acquireConnection();
      try {
        return await c.executeQuery<R>(query);
      } finally {
        await this.driver.releaseConnection(c);
      }
    }
    return (await this.ambience.connectionFor(this.unit)).executeQuery<R>(query);
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    yield* (await this.ambience.connectionFor(this.unit)).streamQuery<R>(query, chunkSize);
  }

  /** Runs a savepoint statement on the unit's connection (begun by then, or now). */
  async control(statement: string): Promise<void> {
    await (await this.ambience.connectionFor(this.unit)).executeQuery(CompiledQuery.raw(statement));
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
    return new Joined(unit, this.ambience, this.inner);
  }

  async beginTransaction(c: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (!(c instanceof Joined)) return this.inner.beginTransaction(c, settings);
    c.unit.savepoints++;
    await c.control(`savepoint unit_${c.unit.savepoints}`);
  }

  async commitTransaction(c: DatabaseConnection): Promise<void> {
    if (!(c instanceof Joined)) return this.inner.commitTransaction(c);
    await c.control(`release savepoint unit_${c.unit.savepoints--}`);
  }

  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    if (!(c instanceof Joined)) return this.inner.rollbackTransaction(c);
    const name = `unit_${c.unit.savepoints--}`;
    await c.control(`rollback to savepoint ${name}`);
    await c.control(`release savepoint ${name}`);
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

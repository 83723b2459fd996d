import type { DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings } from 'kysely';
import { classifyFault } from '../../shared/errors.js';
import type { Ambience } from './ambient-transaction.js';

/**
 * The store's edge for faults: every error the database driver raises that is a fault of the
 * machine (a dropped or refused connection, a full or failing disk, a busy database) comes out
 * of the store as the catalog's `storage_unavailable` or `storage_full`, with the driver's
 * error as its cause. Everything else (a unique violation, a bug in a query) passes through
 * untouched, so the repositories that look at it still can.
 */
export function faultClassifying(dialect: Dialect, ambience?: Ambience): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    // The unit of work (ambient-transaction.ts) sits outside: its BEGIN, COMMIT and savepoints are classified too.
    createDriver: () => {
      const driver = new FaultClassifyingDriver(dialect.createDriver());
      return ambience ? ambience.wrap(driver) : driver;
    },
  };
}

const rethrow = (err: unknown): never => {
  throw classifyFault(err, true) ?? err;
};

async function guard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    return rethrow(err);
  }
}

class Connection implements DatabaseConnection {
  constructor(readonly inner: DatabaseConnection) {}

  executeQuery<R>(query: Parameters<DatabaseConnection['executeQuery']>[0]): Promise<QueryResult<R>> {
    return guard(() => this.inner.executeQuery<R>(query));
  }

  async *streamQuery<R>(
    query: Parameters<DatabaseConnection['streamQuery']>[0],
    chunkSize?: number,
  ): AsyncIterableIterator<QueryResult<R>> {
    try {
      yield* this.inner.streamQuery<R>(query, chunkSize);
    } catch (err) {
      rethrow(err);
    }
  }
}

const unwrap = (c: DatabaseConnection): DatabaseConnection => (c instanceof Connection ? c.inner : c);

class FaultClassifyingDriver implements Driver {
  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return guard(() => this.inner.init());
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new Connection(await guard(() => this.inner.acquireConnection()));
  }

  beginTransaction(c: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return guard(() => this.inner.beginTransaction(unwrap(c), settings));
  }

  commitTransaction(c: DatabaseConnection): Promise<void> {
    return guard(() => this.inner.commitTransaction(unwrap(c)));
  }

  async rollbackTransaction(c: DatabaseConnection): Promise<void> {
    try {
      await this.inner.rollbackTransaction(unwrap(c));
    } catch (err) {
      // SQLite rolls a transaction back by itself on SQLITE_FULL, SQLITE_IOERR and SQLITE_BUSY;
      // kysely's ROLLBACK then finds none, and its error would hide the fault that caused it.
      if (
        (err as { code?: unknown }).code === 'SQLITE_ERROR' &&
        /no transaction is active/.test((err as Error).message)
      )
        return;
      rethrow(err);
    }
  }

  releaseConnection(c: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(unwrap(c));
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

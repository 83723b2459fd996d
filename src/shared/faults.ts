/**
 * Faults of the machine beneath the program, told apart from bugs: the database unreachable
 * or dropped, the disk full or failing, a database too busy to answer in time. Each is
 * temporary and says nothing about the request, so every surface answers it as a retryable
 * refusal (errors.ts turns a fault into its catalog code), and workers wait it out.
 *
 * Pure: it reads only the error's own `code` and message (better-sqlite3's SqliteError,
 * node-postgres' DatabaseError with a SQLSTATE, Node's system errors, node-postgres' and
 * pg-pool's connection errors that carry no code).
 */

export type FaultKind =
  /** No room left: the disk (ENOSPC, SQLITE_FULL) or the PostgreSQL server's (53100). */
  | 'disk_full'
  /** The disk answered reads or writes with an error (EIO, SQLITE_IOERR, read-only). */
  | 'disk_failing'
  /** The database cannot be reached, or dropped the connection (restart, failover, a proxy). */
  | 'database_unreachable'
  /** The database answered nothing within its timeout, or is locked by another writer. */
  | 'database_busy';

const DISK: Record<string, FaultKind> = {
  ENOSPC: 'disk_full',
  EDQUOT: 'disk_full',
  EIO: 'disk_failing',
  EROFS: 'disk_failing',
};

/** Network errors are the database's only when they come from its driver (an attachment URL's are not). */
const NETWORK: Record<string, FaultKind> = {
  ECONNREFUSED: 'database_unreachable',
  ECONNRESET: 'database_unreachable',
  ECONNABORTED: 'database_unreachable',
  EPIPE: 'database_unreachable',
  ETIMEDOUT: 'database_unreachable',
  EHOSTUNREACH: 'database_unreachable',
  ENETUNREACH: 'database_unreachable',
  ENOTFOUND: 'database_unreachable',
  EAI_AGAIN: 'database_unreachable',
};

/** PostgreSQL SQLSTATEs (Appendix A of its manual) that are the server's state, not the statement's. */
function postgresFault(code: string): FaultKind | null {
  if (code.startsWith('08')) return 'database_unreachable'; // connection exception
  switch (code) {
    case '57P01': // admin_shutdown
    case '57P02': // crash_shutdown
    case '57P03': // cannot_connect_now (starting up, shutting down, recovering)
    case '53300': // too_many_connections
    case '53200': // out_of_memory
      return 'database_unreachable';
    case '53100': // disk_full
      return 'disk_full';
    case '58030': // io_error
      return 'disk_failing';
    case '57014': // query_canceled: the statement timeout
    case '55P03': // lock_not_available: the lock timeout
      return 'database_busy';
    default:
      return null;
  }
}

function sqliteFault(code: string): FaultKind | null {
  if (code === 'SQLITE_FULL') return 'disk_full';
  if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_READONLY')) return 'disk_failing';
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'database_busy';
  if (code.startsWith('SQLITE_CANTOPEN')) return 'database_unreachable';
  return null;
}

// node-postgres and pg-pool raise these without a code.
const CONNECTION_MESSAGES = [
  /^Connection terminated/,
  /is not queryable/,
  /^timeout exceeded when trying to connect/,
  /^Query read timeout/,
  /^Cannot use a pool after calling end/,
  /^Client was closed/,
];

function faultOfOne(err: unknown, fromDatabase: boolean): FaultKind | null {
  if (err === null || typeof err !== 'object') return null;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code.startsWith('SQLITE_')) return sqliteFault(code);
    if (code in DISK) return DISK[code]!;
    if (fromDatabase && code in NETWORK) return NETWORK[code]!;
    // A SQLSTATE, on node-postgres' DatabaseError (it names its class by `severity`).
    if (/^[0-9A-Z]{5}$/.test(code) && 'severity' in err) return postgresFault(code);
  }
  const message = (err as { message?: unknown }).message;
  if (typeof message === 'string' && CONNECTION_MESSAGES.some((re) => re.test(message))) return 'database_unreachable';
  return null;
}

/**
 * The fault an error is, looking through its `cause` chain (a few levels), or null for
 * anything else. `fromDatabase`: the error came out of the database driver, so a network
 * error is the database's (the store's edge says so; elsewhere it may be anyone's).
 */
export function faultOf(err: unknown, fromDatabase = false): FaultKind | null {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current !== null && current !== undefined; depth++) {
    const kind = faultOfOne(current, fromDatabase);
    if (kind) return kind;
    // AggregateError: a connection refused on every address of a host name.
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors)) {
      for (const e of errors) {
        const inner = faultOfOne(e, fromDatabase);
        if (inner) return inner;
      }
    }
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** What a client is told, and how long it should wait, per kind. */
export const FAULT_REPLIES: Record<FaultKind, { message: string; retryAfter: number }> = {
  disk_full: {
    message:
      "The server's storage is full: it accepts no new mail until its operator frees disk space. Nothing accepted before is lost; retry later.",
    retryAfter: 60,
  },
  disk_failing: {
    message:
      "The server's disk failed to read or write: retry later. Its operator should check the disk and the server's log.",
    retryAfter: 30,
  },
  database_unreachable: {
    message:
      "The server's database is unreachable (restarting, failing over, or a dropped connection): retry in a few seconds.",
    retryAfter: 5,
  },
  database_busy: {
    message: "The server's database did not answer in time: retry in a few seconds.",
    retryAfter: 2,
  },
};

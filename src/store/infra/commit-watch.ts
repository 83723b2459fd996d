/**
 * Tells, after each commit, which tables got new rows, so that the workers taking them sleep
 * until rows arrive instead of polling for them: every path that writes a row (a send, an
 * event's webhook deliveries, a workflow trigger) wakes its worker, whoever wrote it. It reads
 * the statements a connection runs: an INSERT inside a transaction is told when that
 * transaction commits (never when it rolls back); outside one, once it ran.
 */
export type CommitListener = (tables: ReadonlySet<string>) => void;

const INSERT = /^\s*insert\s+into\s+"?([a-z_][a-z0-9_]*)"?/i;
const BEGIN = /^\s*(begin|start\s+transaction)\b/i;
const COMMIT = /^\s*commit\b/i;
const ROLLBACK = /^\s*rollback\s*$/i;

export class CommitWatch {
  private readonly listeners: CommitListener[] = [];

  onCommit(listener: CommitListener): void {
    this.listeners.push(listener);
  }

  /**
   * The watch of one connection: call it with each statement before it runs; it returns a
   * function to call once the statement has run, or null when there is nothing to tell.
   */
  connection(): (sqlText: string) => (() => void) | null {
    let inTransaction = false;
    let tables = new Set<string>();
    return (sqlText) => {
      if (BEGIN.test(sqlText)) {
        inTransaction = true;
        tables = new Set();
        return null;
      }
      if (ROLLBACK.test(sqlText)) {
        inTransaction = false;
        tables = new Set();
        return null;
      }
      if (COMMIT.test(sqlText)) {
        inTransaction = false;
        const committed = tables;
        tables = new Set();
        return committed.size > 0 ? () => this.emit(committed) : null;
      }
      const table = INSERT.exec(sqlText)?.[1];
      if (!table) return null;
      if (inTransaction) {
        tables.add(table);
        return null;
      }
      return () => this.emit(new Set([table]));
    };
  }

  private emit(tables: ReadonlySet<string>): void {
    if (this.listeners.length === 0) return;
    for (const listener of this.listeners) listener(tables);
  }
}

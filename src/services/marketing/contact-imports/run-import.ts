import { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Clock } from '../../../shared/clock.js';
import { classifyFault, isAppError, validationError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { FieldType } from '../../../shared/typed-fields.js';
import { saveMembers } from '../../../store/audiences.js';
import {
  advanceContactImport,
  finishContactImport,
  readContactImportFile,
  type ContactImport,
  type RowError,
} from '../../../store/contact-imports.js';
import { listAllContactProperties } from '../../../store/contact-properties.js';
import type { Db } from '../../../store/infra/db.js';
import type { ImportOutcome, SubscriberInput, SubscriberService } from '../subscribers.js';
import type { TopicService } from '../topics.js';
import { csvParser, inputOf, layoutOf, optionsOfImport, type Layout } from './read-contacts-csv.js';

/** Rows per transaction: large enough to amortise a commit, small enough to keep one short. */
const BATCH_ROWS = 500;
/** Per-row errors kept on an import (all of them are counted in `failed`). */
const MAX_REPORTED_ERRORS = 1000;

export interface RunImportDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  subscribers: Pick<SubscriberService, 'importBatch'>;
  topics: Pick<TopicService, 'choose'>;
}

/** Who holds the import while it runs (a node's kernel, or the CLI), and how it is told to stop. */
interface ImportLease {
  owner: string;
  /** Each committed batch extends the lease by this much. */
  leaseMs: number;
  /** True once the holder is stopping: the import stops before its next batch, its lease given back by the holder. */
  stopping(): boolean;
  onProgress?: ((rows: number, bytesRead: number) => void) | undefined;
}

/** How a run ended: finished (completed or failed, the file deleted); stopped by its holder; or lost to another node (its lease had run out). */
type ImportEnd = 'completed' | 'failed' | 'stopped' | 'lost';

const STOPPED = new Error('stopping');
const LOST = new Error('the import is held by another node');

type Counts = Pick<ContactImport, 'total' | 'created' | 'updated' | 'skipped' | 'failed'>;

/**
 * Runs one import held under a lease: its file read from the database (any node can), the rows
 * up to its cursor skipped, then batches of BATCH_ROWS, each one transaction that writes the
 * subscribers and moves the cursor with the counts, so a node that dies costs at most the batch
 * it was writing and the node that takes over writes every row once. A file that cannot be
 * read as CSV fails the import with the rows before the fault kept.
 */
export async function runImport(deps: RunImportDeps, row: ContactImport, lease: ImportLease): Promise<ImportEnd> {
  const { db, clock } = deps;
  const options = optionsOfImport(row);
  const counts: Counts = {
    total: Number(row.total),
    created: Number(row.created),
    updated: Number(row.updated),
    skipped: Number(row.skipped),
    failed: Number(row.failed),
  };
  const errors: RowError[] = [...row.errors];
  const addError = (e: RowError) => {
    counts.failed++;
    if (errors.length < MAX_REPORTED_ERRORS) errors.push(e);
  };
  // Rows refused while read come before those the batch refused: reported in file order.
  const sortedErrors = () => errors.sort((a, b) => a.row - b.row);
  let bytesRead = 0;
  const file = Readable.from(
    (async function* () {
      for await (const chunk of readContactImportFile(db, row.id)) {
        bytesRead += chunk.length;
        yield chunk;
      }
    })(),
  );
  const parser = await csvParser();
  file.pipe(parser);
  file.on('error', (err) => parser.destroy(err));

  /** Writes a batch with the import's progress in its transaction; the counts move only once it committed. */
  const writeBatch = async (rows: Array<{ input: SubscriberInput; row: number; line: number }>, cursor: number) => {
    if (lease.stopping()) throw STOPPED;
    let next: { counts: Counts; errors: RowError[] } | undefined;
    const write = () =>
      deps.subscribers.importBatch(
        row.workspace_id,
        rows.map((r) => r.input),
        {
          onConflict: options.on_conflict ?? 'upsert',
          after: async (trx: Db, written, outcomes: readonly ImportOutcome[]) => {
            const ids = written.map((w) => w.id);
            for (const s of options.segments ?? []) await saveMembers(trx, s.id, ids, clock.now());
            if (options.topics?.length)
              for (const id of new Set(ids)) await deps.topics.choose(row.workspace_id, id, options.topics, trx);
            next = progressAfter(counts, errors, rows, outcomes);
            const now = clock.now();
            if (
              !(await advanceContactImport(
                trx,
                row.id,
                lease.owner,
                { ...next.counts, errors: next.errors, cursor_row: cursor, updated_at: now },
                now + lease.leaseMs,
              ))
            )
              throw LOST;
          },
        },
      );
    // A contact created by the API at the same moment breaks the batch's insert: once more reads it as known.
    await write().catch((err: unknown) => {
      if (err === LOST || classifyFault(err)) throw err;
      return write();
    });
    Object.assign(counts, next!.counts);
    errors.splice(0, errors.length, ...next!.errors);
    lease.onProgress?.(counts.total, bytesRead);
    // The file comes from the database, not the disk: on SQLite nothing here waits for I/O, so
    // without a turn of the event loop a whole import would run before the next request is served.
    await nextTurn();
  };

  try {
    const declared = new Map(
      (await listAllContactProperties(db, row.workspace_id)).map((p) => [p.key, p.type as FieldType]),
    );
    let layout: Layout | undefined;
    let seen = 0;
    let batch: Array<{ input: SubscriberInput; row: number; line: number }> = [];
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      if (!layout) {
        layout = layoutOf(record, options, declared);
        continue;
      }
      // Rows up to the cursor were committed by whoever held the import before.
      if (++seen <= row.cursor_row) continue;
      counts.total = seen;
      try {
        batch.push({ input: inputOf(record, layout), row: seen, line: info.lines });
      } catch (err) {
        addError({ row: seen, line: info.lines, reason: (err as Error).message });
      }
      if (batch.length >= BATCH_ROWS) {
        await writeBatch(batch, seen);
        batch = [];
      }
    }
    if (!layout)
      throw validationError('file', 'the file is empty: a CSV with a header row (one column named email) is expected');
    await writeBatch(batch, seen);
    const now = clock.now();
    return (await finishContactImport(db, row.id, lease.owner, {
      status: 'completed',
      completed_at: now,
      updated_at: now,
    }))
      ? 'completed'
      : 'lost';
  } catch (err) {
    if (err === STOPPED) return 'stopped';
    if (err === LOST) return 'lost';
    // The database or the disk away: the import waits for its holder (or its lease) to try again.
    if (classifyFault(err)) throw err;
    const reason = isAppError(err) ? err.message : `not a readable CSV: ${(err as Error).message}`;
    deps.logger.warn({ importId: row.id, err: reason }, 'contact import failed');
    const now = clock.now();
    const finished = await finishContactImport(db, row.id, lease.owner, {
      ...counts,
      errors: sortedErrors(),
      status: 'failed',
      failure: reason,
      completed_at: now,
      updated_at: now,
    });
    return finished ? 'failed' : 'lost';
  } finally {
    file.destroy();
  }
}

/** The counts and errors once a batch's outcomes are in (computed in its transaction, kept only if it commits). */
function progressAfter(
  counts: Counts,
  errors: RowError[],
  rows: Array<{ row: number; line: number }>,
  outcomes: readonly ImportOutcome[],
): { counts: Counts; errors: RowError[] } {
  const next = { ...counts };
  const nextErrors = [...errors];
  outcomes.forEach((o, i) => {
    if (o.outcome !== 'failed') {
      next[o.outcome]++;
      return;
    }
    next.failed++;
    if (nextErrors.length < MAX_REPORTED_ERRORS)
      nextErrors.push({ row: rows[i]!.row, line: rows[i]!.line, reason: o.reason });
  });
  return { counts: next, errors: nextErrors.sort((a, b) => a.row - b.row) };
}

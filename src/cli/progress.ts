/**
 * Progress of long CLI work (imports, copies, queuing), on stderr so stdout keeps only the
 * command's result. On a terminal one line is redrawn in place: a bar, counts, rate and time
 * left. Elsewhere (CI logs, pipes, files) a plain line is written every few seconds and one
 * at the end, since carriage returns would pile up there.
 */

interface ProgressSink {
  write(text: string): void;
  /** Redraw in place (a terminal); plain lines otherwise. */
  isTTY: boolean;
  /** Terminal width, for the bar. */
  columns?: number | undefined;
}

interface ProgressOptions {
  /** What is being done, e.g. `suppressions import`. */
  label: string;
  /** Items expected; null when unknown (no bar, no percentage). */
  total: number | null;
  /** What is counted, e.g. `entries`. */
  unit?: string;
  sink: ProgressSink;
  /** Milliseconds; injectable so tests need no timers. */
  now?: () => number;
  /** Least time between plain lines (default 2 s). */
  lineIntervalMs?: number;
  /** Least time between terminal redraws (default 100 ms). */
  redrawIntervalMs?: number;
}

export interface Progress {
  /** `n` more items done. */
  tick(n?: number): void;
  /** Sets the count of items done. */
  update(done: number, total?: number | null): void;
  /** Writes the final state (with a newline on a terminal); later calls do nothing. */
  finish(): void;
  /** Like finish, for work that failed: the line says where it stopped, not that it is done. */
  fail(): void;
}

const formatCount = (n: number): string => n.toLocaleString('en-US');

function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function createProgress(options: ProgressOptions): Progress {
  const { label, sink } = options;
  const unit = options.unit ? ` ${options.unit}` : '';
  const now = options.now ?? Date.now;
  const lineInterval = options.lineIntervalMs ?? 2000;
  const redrawInterval = options.redrawIntervalMs ?? 100;
  const startedAt = now();
  let total = options.total;
  let done = 0;
  let lastWriteAt = -Infinity;
  let finished = false;

  const rate = (at: number): number => {
    const seconds = (at - startedAt) / 1000;
    return seconds > 0 ? done / seconds : 0;
  };

  /** `1,500 of 10,000 entries (15%), 750/s` */
  const summary = (at: number): string => {
    const r = rate(at);
    const counts =
      total === null
        ? `${formatCount(done)}${unit}`
        : `${formatCount(done)} of ${formatCount(total)}${unit} (${total === 0 ? 100 : Math.floor((done / total) * 100)}%)`;
    return `${counts}, ${formatCount(Math.round(r))}/s`;
  };

  let ending = 'done in';
  const plainLine = (at: number, final: boolean): string =>
    `${label}: ${summary(at)}${final ? `, ${ending} ${formatDuration((at - startedAt) / 1000)}` : ''}\n`;

  const ttyLine = (at: number, final: boolean): string => {
    const r = rate(at);
    const tail = final
      ? ` ${ending} ${formatDuration((at - startedAt) / 1000)}`
      : total !== null && r > 0
        ? ` eta ${formatDuration((total - done) / r)}`
        : '';
    const text = `${summary(at)}${tail}`;
    let bar = '';
    if (total !== null) {
      const width = Math.max(10, Math.min(40, (sink.columns ?? 80) - label.length - text.length - 6));
      const filled = total === 0 ? width : Math.min(width, Math.floor((done / total) * width));
      bar = ` [${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`;
    }
    // \r and "erase line": the new state replaces the old on the same line.
    return `\r\x1b[2K${label}${bar} ${text}`;
  };

  const write = (final: boolean) => {
    const at = now();
    if (!final && at - lastWriteAt < (sink.isTTY ? redrawInterval : lineInterval)) return;
    lastWriteAt = at;
    if (sink.isTTY) {
      sink.write(ttyLine(at, final) + (final ? '\n' : ''));
    } else {
      sink.write(plainLine(at, final));
    }
  };

  return {
    tick(n = 1) {
      if (finished) return;
      done += n;
      write(false);
    },
    update(value, newTotal) {
      if (finished) return;
      done = value;
      if (newTotal !== undefined) total = newTotal;
      write(false);
    },
    finish() {
      if (finished) return;
      finished = true;
      write(true);
    },
    fail() {
      if (finished) return;
      finished = true;
      ending = 'stopped after';
      write(true);
    },
  };
}

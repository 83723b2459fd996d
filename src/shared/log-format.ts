import { styleText } from 'node:util';
import type { DestinationStream } from 'pino';

/**
 * pino's JSON lines as a person at a terminal reads them: local time to the second, the level
 * in colour, the message, then the fields as `key=value`; an error's stack below its line.
 * Machines (journald, log shippers) keep getting JSON: this is only for `log.format` pretty.
 */

type Color = Parameters<typeof styleText>[0];

const LEVELS: Record<number, [string, Color]> = {
  10: ['TRACE', 'gray'],
  20: ['DEBUG', 'gray'],
  30: ['INFO ', 'green'],
  40: ['WARN ', 'yellow'],
  50: ['ERROR', 'red'],
  60: ['FATAL', 'magenta'],
};

/** pino's bookkeeping, the same on every line. */
const HIDDEN = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname', 'err']);

const two = (n: number) => String(n).padStart(2, '0');
const clock = (ms: number) => {
  const d = new Date(ms);
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
};

/** A field value on one line: bare when it has no spaces or quotes, JSON otherwise. */
const value = (v: unknown): string => {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
};

/** One JSON log line, formatted; a line that is not pino's JSON comes back as it was. */
function formatLogLine(line: string, color: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof entry !== 'object' || entry === null) return line;
  const paint = (style: Color, text: string) => (color ? styleText(style, text) : text);
  const [name, style] = LEVELS[entry.level as number] ?? [String(entry.level), 'white'];
  const fields = Object.entries(entry)
    .filter(([k, v]) => !HIDDEN.has(k) && v !== undefined)
    .map(([k, v]) => `${paint('gray', `${k}=`)}${value(v)}`);
  const head = [
    paint('gray', clock(typeof entry.time === 'number' ? entry.time : Date.now())),
    paint(style, name),
    String(entry.msg ?? ''),
    ...fields,
  ].join(' ');
  const err = entry.err as { stack?: unknown; message?: unknown } | undefined;
  const detail = err ? String(err.stack ?? err.message ?? JSON.stringify(err)) : '';
  return detail ? `${head}\n${detail.replace(/^/gm, '    ')}` : head;
}

/** A pino destination that writes formatted lines through `write`. */
export function prettyDestination(write: (text: string) => void, color: boolean): DestinationStream {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line) write(`${formatLogLine(line, color)}\n`);
    },
  };
}

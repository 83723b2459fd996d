import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Runs a command on a pseudo-terminal, as a person at a terminal would: python3's pty module
 * forks it with the pty as its stdin, stdout and stderr, then relays the terminal's output to
 * our pipe and our writes to the terminal's input. SIGTERM is passed on to the command.
 */
const RELAY = `
import os, pty, select, signal, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvpe(sys.argv[1], sys.argv[1:], os.environ)
signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))
watch = [fd, 0]
while True:
    try:
        ready, _, _ = select.select(watch, [], [])
    except InterruptedError:
        continue
    if fd in ready:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        os.write(1, data)
    if 0 in ready:
        data = os.read(0, 65536)
        if data:
            os.write(fd, data)
        else:
            watch = [fd]
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
`;

export interface PtyProcess {
  child: ChildProcess;
  /** Everything the terminal showed so far, without carriage returns. */
  output(): string;
  /** Resolves with the output once its text (without terminal escapes) matches `pattern`; rejects on exit or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Types a line at the terminal. */
  type(line: string): void;
  exited: Promise<number | null>;
}

export function spawnOnPty(command: string, args: string[], env: Record<string, string>, cwd: string): PtyProcess {
  const child = spawn('python3', ['-c', RELAY, command, ...args], { cwd, env, stdio: ['pipe', 'pipe', 'inherit'] });
  let text = '';
  const waiters = new Set<() => void>();
  child.stdout.on('data', (d: Buffer) => {
    text += d.toString('utf8').replace(/\r/g, '');
    for (const w of waiters) w();
  });
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    output: () => text,
    type: (line) => child.stdin.write(`${line}\n`),
    exited,
    waitFor(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(plain(text))) {
            cleanup();
            resolve(text);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out waiting for ${pattern} in:\n${text}`));
        }, timeoutMs);
        const onExit = () => {
          // The last output may arrive with the exit.
          setImmediate(() => {
            if (pattern.test(plain(text))) return resolve(text);
            cleanup();
            reject(new Error(`exited before ${pattern}:\n${text}`));
          });
        };
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
          child.off('close', onExit);
        };
        waiters.add(check);
        child.on('close', onExit);
        check();
      });
    },
  };
}

/** Terminal escapes (colours, cursor moves) removed, for assertions about the text. */
export const plain = (text: string): string => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');

import { connect, type Socket } from 'node:net';

export interface SmtpSession {
  /** The first reply: the greeting (220) or a refusal (421). */
  greeting: string;
  /** Sends one command line and resolves with the (last line of the) reply. */
  command(line: string): Promise<string>;
  /** Resolves once the server has closed the connection. */
  closed: Promise<void>;
  close(): void;
}

/** A raw SMTP client on loopback, one command at a time, for tests that count commands and connections. */
export async function openSmtpSession(port: number, timeoutMs = 10_000): Promise<SmtpSession> {
  const socket: Socket = connect(port, '127.0.0.1');
  let buffer = '';
  const replies: string[] = [];
  let waiting: ((line: string) => void) | null = null;
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  socket.on('data', (d) => {
    buffer += d.toString('latin1');
    let idx;
    while ((idx = buffer.indexOf('\r\n')) >= 0) {
      const line = buffer.slice(0, idx);
      buffer = buffer.slice(idx + 2);
      // The last line of a reply has a space after the code.
      if (!/^\d{3} /.test(line)) continue;
      if (waiting) {
        const w = waiting;
        waiting = null;
        w(line);
      } else replies.push(line);
    }
  });
  const next = () =>
    new Promise<string>((resolve, reject) => {
      const queued = replies.shift();
      if (queued !== undefined) return resolve(queued);
      const timer = setTimeout(() => reject(new Error(`no SMTP reply in ${timeoutMs} ms`)), timeoutMs);
      void closed.then(() => {
        clearTimeout(timer);
        reject(new Error('connection closed without a reply'));
      });
      waiting = (line) => {
        clearTimeout(timer);
        resolve(line);
      };
    });
  const greeting = await next();
  return {
    greeting,
    command(line) {
      const reply = next();
      socket.write(`${line}\r\n`);
      return reply;
    },
    closed,
    close: () => socket.destroy(),
  };
}

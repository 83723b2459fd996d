import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body exactly as received, for signature checks. */
  body: string;
  json: any;
  receivedAt: number;
}

export interface Reply {
  status: number;
  body?: string;
  /** Keep the request open until this promise settles (a slow endpoint). */
  holdUntil?: Promise<unknown>;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:PORT` */
  url: string;
  received: ReceivedWebhook[];
  /** TCP connections accepted so far (a refused delivery must not open one). */
  connections(): number;
  /** Requests held open (replies with holdUntil) right now, and the most ever held at once. */
  inFlight(): number;
  maxInFlight(): number;
  /** Decides each reply; the default answers 200 "ok". */
  reply(fn: (req: ReceivedWebhook, index: number) => Reply): void;
  /** Waits (bounded) until `count` requests matching `where` have arrived. */
  waitFor(count: number, where?: (r: ReceivedWebhook) => boolean, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 that records every webhook it gets. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let decide: (req: ReceivedWebhook, index: number) => Reply = () => ({ status: 200, body: 'ok' });
  let inFlight = 0;
  let maxInFlight = 0;
  const waiters = new Set<() => void>();

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const entry: ReceivedWebhook = { path: req.url ?? '', headers: req.headers, body, json, receivedAt: Date.now() };
      const index = received.push(entry) - 1;
      for (const w of waiters) w();
      const reply = decide(entry, index);
      const answer = () => {
        if (!res.destroyed) res.writeHead(reply.status, { 'content-type': 'text/plain' }).end(reply.body ?? '');
      };
      if (!reply.holdUntil) return answer();
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      void reply.holdUntil.finally(() => {
        inFlight--;
        answer();
      });
    });
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    received,
    connections: () => connections,
    inFlight: () => inFlight,
    maxInFlight: () => maxInFlight,
    reply(fn) {
      decide = fn;
    },
    waitFor(count, where = () => true, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const matching = received.filter(where);
          if (matching.length >= count) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(matching);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver: ${received.filter(where).length} of ${count} webhooks after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Polls `probe` until it returns a value that is not undefined (bounded). */
export async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

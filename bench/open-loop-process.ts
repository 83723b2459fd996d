/**
 * An open-loop HTTP load generator (the wrk2 model), run as its own process: request i is due
 * at t0 + i / rate whatever happened to the ones before, on as many connections as it takes
 * (keep-alive, up to 1,000), and its latency counts from when it was due, not from when it
 * went out. A closed-loop tool (wrk, autocannon without a rate) waits for an answer before
 * the next request, so a slow server is sent less and its queueing never shows.
 *
 * Usage: node --import tsx bench/open-loop-process.ts '{"url","method","headers","body","rate","seconds"}'
 * Prints one JSON line: due, completed, non2xx, errors, seconds, achieved (req/s), p50, p99,
 * p999, max (ms).
 */
import { Agent, request } from 'node:http';

interface Options {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string;
  rate: number;
  seconds: number;
}

const options = JSON.parse(process.argv[2]!) as Options;
const agent = new Agent({ keepAlive: true, maxSockets: 1000 });
const url = new URL(options.url);
const body = Buffer.from(options.body);
const total = Math.round(options.rate * options.seconds);
const latencies: number[] = [];
let completed = 0;
let non2xx = 0;
let errors = 0;
let sent = 0;
let lastDone = 0;

const t0 = performance.now();
const fire = (dueAt: number) => {
  const req = request(
    {
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: options.method,
      agent,
      headers: { ...options.headers, 'content-length': body.length },
    },
    (res) => {
      res.resume();
      res.on('end', () => {
        const now = performance.now();
        latencies.push(now - dueAt);
        completed++;
        lastDone = now;
        if (res.statusCode! < 200 || res.statusCode! >= 300) non2xx++;
      });
    },
  );
  req.on('error', () => {
    errors++;
    completed++;
  });
  req.end(body);
};

// A 1 ms tick sends every request that has come due (several per tick at high rates).
await new Promise<void>((resolve) => {
  const tick = setInterval(() => {
    const now = performance.now();
    while (sent < total && t0 + (sent * 1000) / options.rate <= now) {
      fire(t0 + (sent * 1000) / options.rate);
      sent++;
    }
    if (sent >= total) {
      clearInterval(tick);
      resolve();
    }
  }, 1);
});
// Answers still on their way: at most 60 s more.
const deadline = performance.now() + 60_000;
while (completed < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
agent.destroy();

latencies.sort((a, b) => a - b);
const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
const seconds = ((lastDone || performance.now()) - t0) / 1000;
process.stdout.write(
  `${JSON.stringify({ due: total, completed, non2xx, errors, lost: total - completed, seconds, achieved: (completed - errors) / seconds, p50: at(0.5), p99: at(0.99), p999: at(0.999), max: latencies[latencies.length - 1] ?? NaN })}\n`,
);

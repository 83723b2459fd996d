/**
 * A TLS-capable SMTP load generator, run as its own process, so that the product and Postfix
 * are driven by the same client (Postfix's smtp-source cannot speak TLS). `sessions` clients
 * run at once; each sends its share of `messages`, all on one connection (`reuse`) or one
 * message per connection, with STARTTLS when `starttls` and AUTH PLAIN when `auth` is given.
 * Built on nodemailer's SMTP connection, the client our users' applications use.
 *
 * Usage: node --import tsx bench/smtp-load-process.ts '{"port","messages","sessions","reuse","starttls","auth","size","from","to"}'
 * Prints one JSON line: accepted, failed, seconds, firstError.
 */
import SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';

interface Options {
  port: number;
  messages: number;
  sessions: number;
  reuse: boolean;
  starttls: boolean;
  auth?: { user: string; pass: string };
  size: number;
  from: string;
  to: string;
}

const options = JSON.parse(process.argv[2]!) as Options;
const filler = 'Thank you for your order; it ships within two business days. '.repeat(Math.ceil(options.size / 62));
const message = (n: number) =>
  Buffer.from(
    [
      `From: <${options.from}>`,
      `To: <${options.to}>`,
      `Subject: load ${n}`,
      `Message-ID: <load-${process.pid}-${n}@bench.example>`,
      'Content-Type: text/plain; charset=utf-8',
      '',
      ...filler.slice(0, options.size).match(/.{1,76}/g)!,
      '',
    ].join('\r\n'),
  );

const call = <T>(f: (cb: (err: Error | null, value?: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => f((err, value) => (err ? reject(err) : resolve(value as T))));

async function open(): Promise<SMTPConnection> {
  const connection = new SMTPConnection({
    host: '127.0.0.1',
    port: options.port,
    secure: false,
    ignoreTLS: !options.starttls,
    requireTLS: options.starttls,
    tls: { rejectUnauthorized: false },
    name: 'load.bench.example',
    connectionTimeout: 30_000,
    socketTimeout: 60_000,
  });
  // An error before the greeting (refused, TLS failed) comes as an event, not to connect's callback.
  let failed: (err: Error) => void = () => {};
  connection.on('error', (err: Error) => failed(err));
  await new Promise<void>((resolve, reject) => {
    failed = reject;
    connection.connect(() => resolve());
  });
  if (options.auth)
    await call<void>((cb) =>
      connection.login({ user: options.auth!.user, pass: options.auth!.pass }, (err) => cb(err ?? null)),
    );
  return connection;
}

let next = 0;
let accepted = 0;
let failed = 0;
let firstError: string | null = null;
const fail = (err: unknown) => {
  failed++;
  firstError ??= err instanceof Error ? err.message : String(err);
};

async function session(): Promise<void> {
  let connection: SMTPConnection | null = null;
  while (next < options.messages) {
    const n = next++;
    try {
      connection ??= await open();
      await call((cb) => connection!.send({ from: options.from, to: [options.to] }, message(n), cb));
      accepted++;
    } catch (err) {
      fail(err);
      connection?.close();
      connection = null;
      continue;
    }
    if (!options.reuse) {
      connection.quit();
      connection = null;
    }
  }
  connection?.quit();
}

const t0 = performance.now();
await Promise.all(Array.from({ length: options.sessions }, () => session()));
process.stdout.write(`${JSON.stringify({ accepted, failed, seconds: (performance.now() - t0) / 1000, firstError })}\n`);

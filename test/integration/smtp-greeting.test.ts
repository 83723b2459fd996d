import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it, mock } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { SMTPServer } from 'smtp-server';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * The submission listeners greet at once: no timer stands between accepting a connection and
 * its 220 (smtp-server's fixed 100 ms early-talker wait is not used there). setTimeout is
 * mocked while a client connects, so a greeting that waits for any timer never comes; the
 * wait for it is bounded by turns of the event loop and real time, not by a timer. The same
 * check against a plain smtp-server shows that the check sees such a delay.
 */

/** Resolves with what the server sent first, or null when nothing came within ~2 s of real time. */
async function firstReply(socket: Socket): Promise<string | null> {
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  const deadline = performance.now() + 2000;
  for (let turn = 0; turn < 1_000_000 && performance.now() < deadline; turn++) {
    if (received.includes('\r\n')) return received;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return received.includes('\r\n') ? received : null;
}

describe('SMTP greeting without the early-talker delay', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ smtp: { submission: { implicitTls: true } } });
  });
  after(async () => {
    mock.timers.reset();
    await server.close();
  });

  it('the STARTTLS submission port greets without waiting for a timer', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const socket = connect(server.smtp!.starttls, '127.0.0.1');
    try {
      const greeting = await firstReply(socket);
      assert.ok(greeting, 'greeted with no timer fired');
      assert.match(greeting, /^220 /);
    } finally {
      socket.destroy();
      mock.timers.reset();
    }
  });

  it('the implicit-TLS submission port greets without waiting for a timer', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const socket = tlsConnect({ port: server.smtp!.implicitTls!, host: '127.0.0.1', rejectUnauthorized: false });
    try {
      const greeting = await firstReply(socket);
      assert.ok(greeting, 'greeted with no timer fired');
      assert.match(greeting, /^220 /);
    } finally {
      socket.destroy();
      mock.timers.reset();
    }
  });
});

// Its own suite, with no mailsvc server running: ticking the mocked clock also runs the timers
// a running server set meanwhile (its pollers, the PostgreSQL pool's), and with a server on
// PostgreSQL running the plain server's timer was never run by the tick (every time, on Node
// 20.20); alone, it always is.
describe('SMTP greeting: the control', () => {
  after(() => mock.timers.reset());

  it('(control) a plain smtp-server greets only after its timer: the check above would see a delay', async () => {
    const plain = new SMTPServer({ authOptional: true, disableReverseLookup: true, logger: false });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const port = (plain.server.address() as { port: number }).port;
    mock.timers.enable({ apis: ['setTimeout'] });
    const socket = connect(port, '127.0.0.1');
    try {
      // The server must have taken the connection (and set its timer) before the clock moves:
      // on a loaded machine that can take longer than firstReply's window.
      const deadline = performance.now() + 10_000;
      while (plain.connections.size === 0 && performance.now() < deadline)
        await new Promise((resolve) => setImmediate(resolve));
      assert.equal(plain.connections.size, 1, 'the server accepted the connection');
      assert.equal(await firstReply(socket), null, 'no greeting while the timer has not fired');
      mock.timers.tick(100);
      const greeting = await firstReply(socket);
      assert.ok(greeting, 'greeted once 100 ms passed');
      assert.match(greeting, /^220 /);
    } finally {
      socket.destroy();
      mock.timers.reset();
      await new Promise<void>((resolve) => plain.close(() => resolve()));
    }
  });
});

import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createSmtpClient } from '../../src/delivery/smtp-client.js';
import { createLogger } from '../../src/shared/logger.js';

/**
 * A scripted MX on loopback that refuses the recipient and then drops the connection when the
 * client resets the session (RSET), without a reply: a server restarting, or a connection
 * limit reached. nodemailer never calls back a RSET whose connection closed, so a delivery
 * that waited for it held its destination's slot for good.
 */
function startDroppingMx(): Promise<{ server: Server; port: number; sessions: () => number }> {
  let sessions = 0;
  const server = createServer((socket: Socket) => {
    sessions++;
    let buffer = '';
    socket.write('220 mx.test ESMTP\r\n');
    socket.on('error', () => {});
    socket.on('data', (d) => {
      buffer += d.toString('latin1');
      let idx;
      while ((idx = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, idx).toUpperCase();
        buffer = buffer.slice(idx + 2);
        if (line.startsWith('EHLO')) socket.write('250 mx.test\r\n');
        else if (line.startsWith('MAIL FROM')) socket.write('250 2.1.0 Ok\r\n');
        else if (line.startsWith('RCPT TO')) socket.write('550 5.1.1 No such user\r\n');
        else if (line.startsWith('RSET')) socket.destroy();
        else if (line.startsWith('QUIT')) socket.end('221 2.0.0 Bye\r\n');
        else socket.write('502 5.5.2 Not implemented\r\n');
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as { port: number }).port, sessions: () => sessions }),
    ),
  );
}

describe('SMTP client: a connection that drops during RSET', () => {
  let mx: Awaited<ReturnType<typeof startDroppingMx>>;
  before(async () => {
    mx = await startDroppingMx();
  });
  after(() => new Promise<void>((resolve) => mx.server.close(() => resolve())));

  it('returns the refusal, and the next message goes out on a fresh connection', async () => {
    const client = createSmtpClient({ name: 'mta.mailsvc.test', timeoutMs: 60_000, logger: createLogger('silent') });
    const target = { host: 'mx.test', address: '127.0.0.1', port: mx.port, tls: 'opportunistic' as const };
    const message = Buffer.from('From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: hi\r\n\r\nhello\r\n');
    const send = () =>
      client.send(target, { from: 'bounce@sender.test', to: ['b@rcpt.test'], size: message.length }, message);
    const outcome = (p: Promise<unknown>) =>
      Promise.race([p, new Promise((r) => setTimeout(() => r('still waiting after 5 s'), 5000))]);
    try {
      const first = await outcome(send());
      assert.deepEqual(first, {
        kind: 'replied',
        tls: false,
        replies: [{ recipient: 'b@rcpt.test', accepted: false, code: 550, response: '550 5.1.1 No such user' }],
      });
      const second = await outcome(send());
      assert.equal((second as { kind: string }).kind, 'replied');
      assert.equal(mx.sessions(), 2, 'the dropped connection was not used again');
    } finally {
      await client.close(true);
    }
  });
});

/**
 * A scripted MX on loopback that refuses one recipient at RCPT TO, accepts the other, and
 * answers DATA or the message as the case says. nodemailer's error for a refused DATA or
 * message does not say which recipients were refused earlier; the client reads that from the
 * envelope it handed to nodemailer (which nodemailer fills in), so the refused recipient keeps
 * its own 550 instead of the later reply, which may be only a deferral.
 */
function startRefusingMx(script: {
  pipelining: boolean;
  data: string;
  message?: string;
  closeAfter?: 'data';
}): Promise<{ server: Server; port: number }> {
  const server = createServer((socket: Socket) => {
    let buffer = '';
    let inData = false;
    socket.write('220 mx.test ESMTP\r\n');
    socket.on('error', () => {});
    socket.on('data', (d) => {
      buffer += d.toString('latin1');
      let idx;
      while ((idx = buffer.indexOf('\r\n')) >= 0) {
        const raw = buffer.slice(0, idx);
        const line = raw.toUpperCase();
        buffer = buffer.slice(idx + 2);
        if (inData) {
          if (raw === '.') {
            inData = false;
            socket.write(`${script.message ?? '250 2.0.0 Ok'}\r\n`);
          }
        } else if (line.startsWith('EHLO'))
          socket.write(script.pipelining ? '250-mx.test\r\n250 PIPELINING\r\n' : '250 mx.test\r\n');
        else if (line.startsWith('MAIL FROM')) socket.write('250 2.1.0 Ok\r\n');
        else if (line.startsWith('RCPT TO:<UNKNOWN@')) socket.write('550 5.1.1 No such user\r\n');
        else if (line.startsWith('RCPT TO')) socket.write('250 2.1.5 Ok\r\n');
        else if (line.startsWith('DATA')) {
          socket.write(`${script.data}\r\n`);
          if (script.closeAfter === 'data') socket.destroy();
          else if (script.data.startsWith('354')) inData = true;
        } else if (line.startsWith('RSET')) socket.write('250 2.0.0 Ok\r\n');
        else if (line.startsWith('QUIT')) socket.end('221 2.0.0 Bye\r\n');
        else socket.write('502 5.5.2 Not implemented\r\n');
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port })),
  );
}

describe('SMTP client: a recipient refused at RCPT TO keeps its reply when the transaction fails later', () => {
  const cases = [
    {
      name: 'DATA refused (no pipelining)',
      script: { pipelining: false, data: '451 4.3.0 Try again later' },
      later: { code: 451, response: '451 4.3.0 Try again later' },
    },
    {
      name: 'DATA refused (pipelining)',
      script: { pipelining: true, data: '451 4.3.0 Try again later' },
      later: { code: 451, response: '451 4.3.0 Try again later' },
    },
    {
      name: 'the message refused after DATA',
      script: { pipelining: true, data: '354 Go ahead', message: '554 5.7.1 Rejected as spam' },
      later: { code: 554, response: '554 5.7.1 Rejected as spam' },
    },
    {
      name: 'DATA answered with 421 and the connection closed',
      script: { pipelining: false, data: '421 4.3.2 Shutting down', closeAfter: 'data' as const },
      later: { code: 421, response: '421 4.3.2 Shutting down' },
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const mx = await startRefusingMx(c.script);
      const client = createSmtpClient({ name: 'mta.mailsvc.test', timeoutMs: 10_000, logger: createLogger('silent') });
      const message = Buffer.from('From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: hi\r\n\r\nhello\r\n');
      try {
        const result = await client.send(
          { host: 'mx.test', address: '127.0.0.1', port: mx.port, tls: 'opportunistic' },
          { from: 'bounce@sender.test', to: ['unknown@rcpt.test', 'b@rcpt.test'], size: message.length },
          message,
        );
        assert.deepEqual(result, {
          kind: 'replied',
          tls: false,
          replies: [
            { recipient: 'unknown@rcpt.test', accepted: false, code: 550, response: '550 5.1.1 No such user' },
            { recipient: 'b@rcpt.test', accepted: false, ...c.later },
          ],
        });
      } finally {
        await client.close(true);
        await new Promise<void>((resolve) => mx.server.close(() => resolve()));
      }
    });
  }
});

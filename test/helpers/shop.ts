import assert from 'node:assert/strict';
import { eventually, routeDomain } from './delivery.js';
import { startDnsServer, type TestDns } from './dns-server.js';
import { addVerifiedDomain } from './domains.js';
import { request, show } from './http.js';
import { startMxServer, type TestMx } from './mx-server.js';
import { manualClock, startTestServer, type TestServer } from './server.js';

/**
 * A shop for the marketing tests: the real server with its own clock, shop.example verified,
 * and dest.test routed to a loopback MX. Links in mail name http://mail.shop.example, which
 * `local` turns into this server's address.
 */
export interface Shop {
  dns: TestDns;
  mx: TestMx;
  server: TestServer;
  key: string;
  clock: ReturnType<typeof manualClock>;
  post(path: string, body: unknown): ReturnType<typeof request>;
  /** Sends a broadcast (a minute later: they are limited to 5 a minute), waits until it is sent; returns who received it. */
  broadcast(body: Record<string, unknown>): Promise<string[]>;
  /** The one-click unsubscribe URL of the first message to `to`, on this server. */
  unsubscribeLink(to: string): string;
  local(text: string): string;
  close(): Promise<void>;
}

export async function startShop(overrides: Record<string, unknown> = {}): Promise<Shop> {
  const clock = manualClock();
  const dns = await startDnsServer();
  const mx = await startMxServer();
  const server = await startTestServer(
    {
      delivery: { dnsServers: [dns.server], port: mx.port, pollInterval: 50, signingThreads: 0 },
      http: { publicUrl: 'http://mail.shop.example' },
      ...overrides,
    },
    { clock },
  );
  const key = await server.key();
  await addVerifiedDomain(server, dns, 'shop.example');
  routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
  const post = (path: string, body: unknown) => request(server.httpUrl, 'POST', path, { key, body });
  const local = (text: string) => text.replaceAll('http://mail.shop.example', server.httpUrl);
  return {
    dns,
    mx,
    server,
    key,
    clock,
    post,
    local,
    async broadcast(body) {
      clock.advance(60_000);
      const before = mx.messages.length;
      const res = await post('/v1/broadcasts', {
        from: 'Shop <news@shop.example>',
        html: '<p>News</p>',
        send: true,
        ...body,
      });
      assert.equal(res.status, 201, show(res));
      await eventually(
        async () =>
          (await request(server.httpUrl, 'GET', `/v1/broadcasts/${res.body.id}`, { key })).body.status === 'sent',
        20_000,
        `${String(body.subject)} sent`,
      );
      return mx.messages
        .slice(before)
        .flatMap((m) => m.to)
        .sort();
    },
    unsubscribeLink(to) {
      const head = mx.messages
        .find((m) => m.to.includes(to))!
        .raw.toString('latin1')
        .split('\r\n\r\n')[0]!
        .replace(/\r\n[ \t]+/g, ' ');
      return local(/^List-Unsubscribe: <([^>]+)>/im.exec(head)![1]!);
    },
    async close() {
      await server.close();
      await mx.close();
      await dns.close();
    },
  };
}

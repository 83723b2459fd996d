import type { PolicyFetcher } from '../../src/delivery/mta-sts.js';
import type { Clock } from '../../src/shared/clock.js';
import { routeDomain } from './delivery.js';
import { startDnsServer, type TestDns } from './dns-server.js';
import { addVerifiedDomain } from './domains.js';
import { startMxServer, type TestMx } from './mx-server.js';
import { deepMerge, startTestServer, type TestServer } from './server.js';

export interface DeliveringServer {
  server: TestServer;
  /** The loopback DNS the server resolves with: `dest.test` routed to the MX, each sender's records published. */
  dns: TestDns;
  /** The recipients' MX on loopback. */
  mx: TestMx;
  /** Stops the server, then the MX and the DNS. */
  close(): Promise<void>;
}

export interface DeliveringServerOptions {
  /** Settings of `delivery` beyond the fixture's (loopback DNS and MX, hostname mta.mailsvc.test). */
  delivery?: Record<string, unknown>;
  /** The rest of the config (the shape of the config file). */
  config?: Record<string, unknown>;
  /** The MX's options: hooks that answer 4xx/5xx or slowly. */
  mx?: Parameters<typeof startMxServer>[0];
  /** Sending domains added and verified through the DNS (default sender.test). */
  senders?: string[];
  clock?: Clock;
  mtaStsFetcher?: PolicyFetcher;
}

/**
 * The in-process server delivering for real: a loopback DNS server and a recipients' MX
 * (smtp-server) on loopback, DKIM keys published under dkim.mailsvc.test, the senders verified
 * and `dest.test` routed to the MX. The one place the delivering config is written.
 */
export async function startDeliveringServer(options: DeliveringServerOptions = {}): Promise<DeliveringServer> {
  const dns = await startDnsServer();
  let mx: TestMx | undefined;
  let server: TestServer | undefined;
  try {
    mx = await startMxServer(options.mx);
    const config = deepMerge(
      {
        delivery: {
          enabled: true,
          dnsServers: [dns.server],
          port: mx.port,
          hostname: 'mta.mailsvc.test',
          ...options.delivery,
        },
        dkim: { host: 'dkim.mailsvc.test' },
      },
      options.config ?? {},
    );
    server = await startTestServer(config, {
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.mtaStsFetcher ? { mtaStsFetcher: options.mtaStsFetcher } : {}),
    });
    for (const sender of options.senders ?? ['sender.test']) await addVerifiedDomain(server, dns, sender);
    routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
  } catch (err) {
    await server?.close();
    await mx?.close();
    await dns.close();
    throw err;
  }
  const [s, m] = [server, mx];
  return {
    server: s,
    dns,
    mx: m,
    async close() {
      await s.close();
      await m.close();
      await dns.close();
    },
  };
}

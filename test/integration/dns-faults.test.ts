import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emailState, eventually, routeDomain } from '../helpers/delivery.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * A recipient's DNS that is broken for a while: SERVFAIL, or no answer at all (the resolver
 * times out). Neither is the recipient's last word: the message is deferred with the reason and
 * delivered once DNS answers, never bounced, and the server goes on with everything else.
 */
describe('DNS faults defer, with the reason', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let key: string;

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    server = await startTestServer({
      delivery: {
        enabled: true,
        dnsServers: [dns.server],
        port: mx.port,
        hostname: 'mta.mailsvc.test',
        retrySchedule: [1],
        pollInterval: 50,
        signingThreads: 1,
      },
      dkim: { host: 'dkim.mailsvc.test' },
    });
    await addVerifiedDomain(server, dns, 'sender.test');
    for (const domain of ['servfail.test', 'silent.test', 'fine.test'])
      routeDomain(dns, domain, [{ name: `mx.${domain}`, preference: 10, a: ['127.0.0.1'] }]);
    key = await server.key();
  });
  after(async () => {
    await server.close();
    await mx.close();
    await dns.close();
  });

  const send = async (to: string) => {
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: { from: 'hello@sender.test', to, subject: 'Receipt', html: '<p>Thanks</p>' },
    });
    assert.equal(res.status, 200, show(res));
    return res.body.id as string;
  };
  const deferredWith = (id: string, reason: RegExp) =>
    eventually(
      async () => {
        const state = await emailState(server.runtime.store.db, id);
        return state.attempts.some((a) => reason.test(a.response ?? '')) ? state : undefined;
      },
      30_000,
      `a deferral of ${id} matching ${reason}`,
    );

  for (const [how, domain, reason] of [
    ['servfail', 'servfail.test', /MX look-up for servfail\.test failed: ESERVFAIL/],
    ['silent', 'silent.test', /MX look-up for silent\.test failed: ETIMEOUT/],
  ] as const) {
    it(`${how}: deferred with the reason, not bounced; delivered once DNS answers; other mail unaffected`, async () => {
      dns.fail(domain, how);
      const id = await send(`ann@${domain}`);
      await send('bob@fine.test');
      const state = await deferredWith(id, reason);
      assert.ok(['queued', 'sending', 'deferred'].includes(state.email.status), state.email.status);
      assert.ok(
        state.attempts.every((a) => a.outcome === 'deferred'),
        JSON.stringify(state.attempts.map((a) => a.outcome)),
      );
      assert.ok(!state.events.some((e) => e.type === 'email.bounced'));
      await eventually(
        async () => mx.messages.some((m) => m.to.includes('bob@fine.test')),
        120_000,
        'the other message',
      );
      dns.fail(domain, null);
      await eventually(
        async () => mx.messages.some((m) => m.to.includes(`ann@${domain}`)),
        30_000,
        `delivery to ${domain} once DNS answers`,
      );
      await eventually(
        async () => (await emailState(server.runtime.store.db, id)).email.status === 'delivered',
        15_000,
        `${id} recorded as delivered`,
      );
    });
  }
});

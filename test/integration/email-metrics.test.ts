import assert from 'node:assert/strict';
import { rollUpStats } from '../../src/tasks/roll-up-stats.js';
import { after, before, describe, it } from 'node:test';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { Resend } from 'resend';
import { eventually, routeDomain } from '../helpers/delivery.js';
import type { TestDns } from '../helpers/dns-server.js';
import { request, show } from '../helpers/http.js';
import type { TestMx } from '../helpers/mx-server.js';
import type { TestServer } from '../helpers/server.js';

/**
 * `GET /v1/emails/metrics` through the Resend SDK's `emails.metrics`, after real deliveries
 * to a loopback MX (accepted, hard and soft bounces), a tracked open, and the hourly roll-up.
 */

describe('email metrics', () => {
  let dns: TestDns;
  let mx: TestMx;
  let server: TestServer;
  let rig: DeliveringServer;
  let key: string;
  let resend: Resend;
  let domainId: string;

  before(async () => {
    ({ server, dns, mx } = rig = await startDeliveringServer({
      mx: {
        hooks: {
          onRcpt: (address) =>
            address.startsWith('gone')
              ? { code: 550, text: '5.1.1 User unknown' }
              : address.startsWith('spam')
                ? { code: 550, text: '5.7.1 Message rejected as spam' }
                : undefined,
        },
      },
      delivery: { pollInterval: 50, signingThreads: 0 },
      senders: ['shop.example', 'other.example'],
    }));
    domainId = (await server.runtime.services.domains.get(server.workspaceId, 'shop.example')).id;
    // Gmail's MX in the test's DNS is the loopback MX too: it shows as its own destination class.
    routeDomain(dns, 'gmail.com', [{ name: 'gmail-smtp-in.l.google.com', preference: 5, a: ['127.0.0.1'] }]);
    key = await server.key();
    resend = new Resend(key, { baseUrl: `${server.httpUrl}/v1` });

    const send = async (from: string, to: string, type = 'transactional') => {
      const res = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: { from, to, subject: 'Hi', html: '<p>Hello <a href="https://shop.example/x">x</a></p>', type },
      });
      assert.equal(res.status, 200, show(res));
      return res.body.id as string;
    };
    const ids = await Promise.all([
      send('a@shop.example', 'one@dest.test', 'marketing'),
      send('a@shop.example', 'two@gmail.com'),
      send('a@shop.example', 'gone@gmail.com'),
      send('a@shop.example', 'spam@dest.test'),
      send('b@other.example', 'three@dest.test'),
    ]);
    // Test mail (a test key): counted apart, never in the live figures.
    const testKey = await server.key({ test: true });
    for (const to of ['t1@dest.test', 'bounced@simulator.mailsvc.dev']) {
      const res = await request(server.httpUrl, 'POST', '/v1/emails', {
        key: testKey,
        body: { from: 'a@shop.example', to, subject: 'Test', text: 'x' },
      });
      assert.equal(res.status, 200, show(res));
      ids.push(res.body.id);
    }
    await eventually(
      async () =>
        (await Promise.all(ids.map((id) => server.runtime.services.emails.get(server.workspaceId, id)))).every(
          (e) => e.status === 'delivered' || e.status === 'bounced',
        ),
      120_000,
      'every email answered',
    );
    // The marketing message carries an open pixel: open it twice (one unique open).
    const message = mx.messages.find((m) => m.to.includes('one@dest.test'))!;
    const pixel = /src=3D"([^"]+\/t\/o\/[^"]+)"|src="([^"]+\/t\/o\/[^"]+)"/.exec(
      message.raw.toString('latin1').replace(/=\r\n/g, ''),
    );
    assert.ok(pixel, 'an open pixel in the marketing message');
    const url = (pixel[1] ?? pixel[2])!.replace(/=3D/g, '=').replace(/^https?:\/\/[^/]+/, server.httpUrl);
    for (let i = 0; i < 2; i++) assert.equal((await fetch(url)).status, 200);
    await rollUpStats(server.runtime.deps);
  });
  after(() => rig?.close());

  it('totals the workspace over the default range, counts and rates', async () => {
    const { data, error } = await resend.emails.metrics();
    assert.equal(error, null, JSON.stringify(error));
    assert.equal(data.object, 'metrics');
    assert.equal(data.granularity, 'daily');
    const t = data.totals;
    assert.equal(t.sent, 3);
    assert.equal(t.delivered, 3);
    assert.equal(t.bounced, 2);
    assert.equal(t.bounced_permanent, 1);
    assert.equal(t.bounced_transient, 1);
    assert.equal(t.opened, 2);
    assert.equal(t.unique_opened, 1);
    assert.equal(t.delivery_rate, 1);
    assert.equal(t.bounce_rate, 0.4);
    assert.equal(t.open_rate, 0.3333);
    assert.equal(data.data, undefined, 'no dimensions: totals only');
  });

  it('breaks down by period and sending domain, and filters by domain', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const { data, error } = await resend.emails.metrics({
      dimensions: ['period', 'domain'],
      metrics: ['sent', 'bounced', 'bounce_rate'],
      granularity: 'daily',
    });
    assert.equal(error, null, JSON.stringify(error));
    assert.deepEqual(data.metrics, ['sent', 'bounced', 'bounce_rate']);
    const rows = data.data!.filter((r) => r.period === today);
    const shop = rows.find((r) => r.domain_name === 'shop.example')!;
    assert.deepEqual(
      { ...shop },
      { period: today, domain_id: domainId, domain_name: 'shop.example', sent: 2, bounced: 2, bounce_rate: 0.5 },
    );
    const other = rows.find((r) => r.domain_name === 'other.example')!;
    assert.equal(other.sent, 1);

    const only = await resend.emails.metrics({ domainId: [domainId], metrics: ['sent'] });
    assert.deepEqual(only.data!.totals, { sent: 2 });
    const hourly = await resend.emails.metrics({
      dimensions: ['period'],
      granularity: 'hourly',
      metrics: ['delivered'],
      startDate: today,
    });
    assert.equal(
      hourly.data!.data!.reduce((s, r) => s + (r.delivered ?? 0), 0),
      3,
    );
    assert.ok(hourly.data!.data!.every((r) => /^\d{4}-\d{2}-\d{2}T\d{2}:00:00\.000Z$/.test(r.period!)));
  });

  it('keeps test mail apart: out of the live figures, in a series of its own', async () => {
    const sum = (buckets: Array<{ counts: Record<string, number> }>, metric: string) =>
      buckets.reduce((n, b) => n + b.counts[metric]!, 0);
    const live = await server.runtime.services.emailMetrics.series(server.workspaceId, 'hour', 48);
    const test = await server.runtime.services.emailMetrics.series(server.workspaceId, 'hour', 48, true);
    assert.deepEqual([sum(live, 'sent'), sum(live, 'bounced')], [3, 2]);
    assert.deepEqual([sum(test, 'sent'), sum(test, 'delivered'), sum(test, 'bounced')], [1, 1, 1]);
  });

  it('counts attempts per destination class', async () => {
    const destinations = await server.runtime.services.emailMetrics.destinations(server.workspaceId, 7);
    assert.deepEqual(
      {
        delivered: destinations.gmail.delivered,
        bounced: destinations.gmail.bounced,
        rate: destinations.gmail.bounce_rate,
      },
      { delivered: 1, bounced: 1, rate: 0.5 },
    );
    assert.deepEqual(
      { delivered: destinations.other.delivered, bounced: destinations.other.bounced },
      { delivered: 2, bounced: 1 },
    );
  });

  it('rolling up again counts nothing twice', async () => {
    await rollUpStats(server.runtime.deps);
    await rollUpStats(server.runtime.deps);
    const { data } = await resend.emails.metrics({ metrics: ['sent', 'bounced'] });
    assert.deepEqual(data!.totals, { sent: 3, bounced: 2 });
  });

  it('answers 400 for what it cannot count, in the versioned envelope', async () => {
    for (const [query, field] of [
      ['metrics=unsubscribed', /metrics: unsubscribed is not counted/],
      ['metrics=nonsense', /metrics: unknown metric/],
      ['dimensions=email', /dimensions: "email" is not supported/],
      ['email_id=abc', /email_id: filtering by email/],
      ['timezone=Mars%2FOlympus', /timezone: "Mars\/Olympus" is not an IANA time zone/],
      ['start_date=yesterday', /start_date: must be an ISO 8601/],
      ['start_date=2026-02-01&end_date=2026-01-01', /start_date: must be before end_date/],
      ['granularity=hourly&start_date=2025-01-01&end_date=2025-03-01', /granularity: hourly covers at most 31 days/],
      ['granularity=yearly', /granularity/],
      ['domain_id=00000000-0000-0000-0000-000000000000', /domain_id: no domain/],
    ] as const) {
      const res = await request(server.httpUrl, 'GET', `/v1/emails/metrics?${query}`, { key });
      assert.equal(res.status, 400, `${query}: ${show(res)}`);
      assert.match(`${res.body.error.message}`, field, query);
    }
  });

  it('buckets days in the requested time zone', async () => {
    const { data, error } = await resend.emails.metrics({
      dimensions: ['period'],
      metrics: ['sent'],
      timezone: 'Pacific/Kiritimati',
    });
    assert.equal(error, null, JSON.stringify(error));
    const total = data.data!.reduce((s, r) => s + (r.sent ?? 0), 0);
    assert.equal(total, 3);
    assert.equal((data as unknown as { timezone: string }).timezone, 'Pacific/Kiritimati');
  });
});

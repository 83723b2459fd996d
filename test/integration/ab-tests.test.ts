import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { groupCuts, groupOf } from '../../src/campaigns/ab-group.js';
import { chooseWinners } from '../../src/campaigns/choose-winners.js';
import { eventually, routeDomain } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startMxServer, type TestMx } from '../helpers/mx-server.js';
import { ok, resendClient } from '../helpers/resend.js';
import { DashboardClient } from '../helpers/dashboard.js';
import { testPostgresUrl } from '../helpers/postgres.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/**
 * An A/B broadcast to 300 contacts on the loopback MX: each variant goes to its share of the
 * test group, the holdout gets nothing, people click through the tracked links (more on B;
 * machines click A far more, and do not count), the server restarts while the test waits for
 * its winner (a row with a due time), the winner is chosen by people's click rate once the
 * test's time is up and goes to the rest, and every count adds up.
 */

const CONTACTS = 300;
const CHROME_UA =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

describe('A/B tests with a holdout', () => {
  let dns: TestDns;
  let mx: TestMx;
  let first: TestServer;
  let server: TestServer;
  /** On PostgreSQL, a second node beside the restarted one: the winner is still chosen and sent once. */
  let other: TestServer | undefined;
  let key: string;
  let segmentId: string;
  let smallSegmentId: string;
  const contacts = new Map<string, string>();
  // Real time, moved ahead by the test: the server's clock decides delivery times, the test's
  // duration and the winner's due time. It runs on between jumps, or every request would fall
  // in one second of the API's per-second rate limit.
  let ahead = 0;
  const clock = { now: () => Date.now() + ahead, advance: (ms: number) => void (ahead += ms) };

  const overrides = (dns: TestDns, mx: TestMx) => ({
    delivery: {
      dnsServers: [dns.server],
      port: mx.port,
      pollInterval: 50,
      signingThreads: 0,
      concurrency: 50,
      defaultDomainLimit: { concurrency: 20, perMinute: 100_000 },
    },
    http: { publicUrl: 'http://mail.shop.example' },
    dashboard: { password: 'ab-test-dashboard' },
  });

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    first = server = await startTestServer(overrides(dns, mx), { clock });
    key = await server.key();
    await addVerifiedDomain(server, dns, 'shop.example');
    routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    const { services } = server.runtime;
    const segment = await services.audiences.create(server.workspaceId, 'Spring list');
    const small = await services.audiences.create(server.workspaceId, 'Small list');
    segmentId = segment.id;
    smallSegmentId = small.id;
    for (let i = 0; i < CONTACTS; i++) {
      const { subscriber } = await services.subscribers.upsert(server.workspaceId, {
        email: `c${String(i).padStart(3, '0')}@dest.test`,
      });
      contacts.set(subscriber.email, subscriber.id);
    }
    await services.audiences.addMembers(server.workspaceId, segmentId, { subscriberIds: [...contacts.values()] });
    await services.audiences.addMembers(server.workspaceId, smallSegmentId, {
      emails: ['c000@dest.test', 'c001@dest.test', 'c002@dest.test', 'c003@dest.test'],
    });
  });
  after(async () => {
    await other?.close();
    if (server !== first) await server?.close();
    await first?.close();
    await mx?.close();
    await dns?.close();
  });

  const post = (path: string, body: unknown) => request(server.httpUrl, 'POST', path, { key, body });
  const get = (path: string) => request(server.httpUrl, 'GET', path, { key });
  const statusOf = async (id: string) => (await get(`/v1/campaigns/${id}`)).body.status as string;
  const base = {
    from: 'Shop <news@shop.example>',
    subject: 'Spring is here',
    html: '<html><body><p>Hello {{{FIRST_NAME|there}}}</p><a href="https://shop.example/spring">See the collection</a></body></html>',
  };

  it('refuses a bad test with a 400 naming the field: every limit at, under and over', async () => {
    const variants = [{ subject: 'A' }, { subject: 'B' }];
    const test = { variants, test_percentage: 40, test_duration: '2 hours' };
    const cases: Array<[Record<string, unknown>, number, RegExp?]> = [
      [{ ...test, variants: [{ subject: 'A' }] }, 400, /^variants: an A\/B test has 2 to 5 variants, got 1/],
      [{ ...test, variants: [{ subject: 'A' }, { subject: 'B' }] }, 201],
      [{ ...test, variants: ['A', 'B', 'C', 'D', 'E'].map((subject) => ({ subject })) }, 201],
      [
        { ...test, variants: ['A', 'B', 'C', 'D', 'E', 'F'].map((subject) => ({ subject })) },
        400,
        /^variants: an A\/B test has 2 to 5 variants, got 6/,
      ],
      [{ ...test, test_percentage: 0 }, 400, /^test_percentage: must be a whole number from 1 to 100/],
      [{ ...test, test_percentage: 1 }, 201],
      [{ ...test, test_percentage: 100 }, 201],
      [{ ...test, test_percentage: 101 }, 400, /^test_percentage/],
      [{ ...test, test_percentage: 12.5 }, 400, /^test_percentage: must be a whole number/],
      [{ ...test, test_percentage: undefined }, 400, /^test_percentage: is required with variants/],
      [{ ...test, holdout_percentage: -1 }, 400, /^holdout_percentage: must be a whole number from 0 to 50/],
      [{ ...test, holdout_percentage: 50, test_percentage: 50 }, 201],
      [{ ...test, holdout_percentage: 51 }, 400, /^holdout_percentage/],
      [
        { ...test, holdout_percentage: 20, test_percentage: 81 },
        400,
        /^test_percentage: and holdout_percentage add up to 101: at most 100/,
      ],
      [{ holdout_percentage: 10 }, 201],
      [{ test_percentage: 10 }, 400, /^test_percentage: applies only to an A\/B test/],
      [{ ...test, test_duration: '59 seconds' }, 400, /^test_duration: must be at least 1 minute/],
      [{ ...test, test_duration: '1 minute' }, 201],
      [{ ...test, test_duration: '30 days' }, 201],
      [{ ...test, test_duration: '31 days' }, 400, /^test_duration: must be at most 30 days/],
      [{ ...test, test_duration: 'soon' }, 400, /^test_duration: "soon" is not a duration/],
      [{ ...test, test_duration: undefined }, 400, /^test_duration: is required with variants/],
      [
        { ...test, winner_metric: 'open_rate' },
        400,
        /^winner_metric: must be one of human_open_rate, human_click_rate/,
      ],
      [{ ...test, winner_metric: 'human_open_rate' }, 201],
      [
        { ...test, variants: [{ subject: 'Spring is here' }, {}] },
        400,
        /^variants\[1\]: sends the same message as variant A/,
      ],
      [
        { ...test, variants: [{ subject: 'A' }, { subject: 'B\r\nBcc: x@evil.example' }] },
        400,
        /^variants\[1\]\.subject/,
      ],
      [
        { ...test, variants: [{ subject: 'A' }, { html: '<p>B</p>', template_id: 'x' }] },
        400,
        /^variants\[1\]\.template_id: cannot be combined with html/,
      ],
      [
        { ...test, variants: [{ subject: 'A' }, { template_id: '01930000-0000-7000-8000-000000000000' }] },
        400,
        /^variants\[1\]\.template_id: template .* not found/,
      ],
      [{ ...test, variants: [{ subject: 'A' }, { subjekt: 'typo' }] }, 400, /variants/],
      [
        { ...test, variants: [{ subject: 'A' }, { name: 'x'.repeat(101) }] },
        400,
        /^variants\[1\]\.name: must be one line of at most 100 characters/,
      ],
      [{ ...test, test_percentage: '40' }, 400, /test_percentage/],
    ];
    for (const [fields, status, message] of cases) {
      const res = await post('/v1/broadcasts', { ...base, segment_id: segmentId, ...fields });
      assert.equal(res.status, status, `${JSON.stringify(fields)}: ${show(res)}`);
      if (message) {
        assert.equal(res.body.error.code, 'validation_error');
        assert.match(res.body.error.message, message, JSON.stringify(fields));
      }
    }
  });

  let broadcastId: string;
  /** Each contact's group, as the server draws it (a hash of the campaign and the contact). */
  const groups = new Map<string, string>();

  it('sends each variant to its share of the test group and nothing to the holdout; the rest waits', async () => {
    const created = await post('/v1/broadcasts', {
      ...base,
      name: 'Spring A/B',
      segment_id: segmentId,
      send: true,
      variants: [
        { name: 'Plain', subject: 'Spring is here, {{{FIRST_NAME|friend}}}' },
        {
          name: 'Urgent',
          subject: 'Only this week: spring',
          from_name: 'Shop Deals',
          html: '<html><body><p>Hurry</p><a href="https://shop.example/spring?b">Shop now</a></body></html>',
        },
      ],
      test_percentage: 40,
      holdout_percentage: 10,
      winner_metric: 'human_click_rate',
      test_duration: '2 hours',
    });
    assert.equal(created.status, 201, show(created));
    broadcastId = created.body.id;
    assert.deepEqual(
      [
        created.body.test_percentage,
        created.body.holdout_percentage,
        created.body.winner_metric,
        created.body.test_duration,
        created.body.winner,
      ],
      [40, 10, 'human_click_rate', '2 hours', null],
    );

    // The groups are cut at exact counts by rank of the stable hash: the same cut the queuer made.
    const split = { holdoutPercentage: 10, testPercentage: 40, variants: ['A', 'B'] };
    const cuts = groupCuts(broadcastId, contacts.values(), split);
    for (const [email, id] of contacts) {
      const g = groupOf(broadcastId, id, split, cuts);
      groups.set(email, g.kind === 'test' ? g.variant : g.kind);
    }
    const count = (group: string) => [...groups.values()].filter((g) => g === group).length;
    assert.deepEqual([count('holdout'), count('A'), count('B')], [30, 60, 60], '10%, 20% and 20% of 300, exactly');

    await eventually(
      async () => (await statusOf(broadcastId)) === 'testing',
      120_000,
      'the variants queued, the test waiting',
    );
    await mx.waitFor(count('A') + count('B'), 30_000);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(mx.messages.length, count('A') + count('B'), 'the test group only');
    for (const m of mx.messages) {
      const to = m.to[0]!;
      const parsed = await simpleParser(m.raw);
      const expected = groups.get(to) === 'A' ? /^Spring is here, friend$/ : /^Only this week: spring$/;
      assert.match(parsed.subject!, expected, `${to} is in ${groups.get(to)}`);
      if (groups.get(to) === 'B') assert.equal(parsed.from?.value[0]?.name, 'Shop Deals');
    }
    const view = (await get(`/v1/broadcasts/${broadcastId}`)).body;
    assert.equal(view.status, 'queued', "Resend's status while the test runs");
    assert.ok(view.winner_due_at, 'the winner is due at a time kept in the database');
    assert.deepEqual(
      view.variants.map((v: { id: string; name: string; stats: { sent: number } }) => [v.id, v.name, v.stats.sent]),
      [
        ['A', 'Plain', count('A')],
        ['B', 'Urgent', count('B')],
      ],
    );
    assert.equal(view.counts.held_out, count('holdout'));
  });

  it('people click B more; machines click A far more and are not counted', async () => {
    clock.advance(60_000);
    const trackedLink = async (to: string) => {
      const html = String((await simpleParser(mx.messages.find((m) => m.to.includes(to))!.raw)).html);
      return /href="(http:\/\/mail\.shop\.example\/t\/c\/[^"]+)"/
        .exec(html)![1]!
        .replace('http://mail.shop.example', server.httpUrl);
    };
    const members = (group: string) => [...groups].filter(([, g]) => g === group).map(([email]) => email);
    const people = async (emails: string[]) => {
      for (const to of emails)
        assert.equal(
          (await fetch(await trackedLink(to), { redirect: 'manual', headers: { 'user-agent': CHROME_UA } })).status,
          302,
        );
    };
    await people(members('A').slice(0, 3));
    await people(members('B').slice(0, 10));
    // A link checker probes every A message, twice.
    for (const to of members('A')) {
      const link = await trackedLink(to);
      for (let i = 0; i < 2; i++) assert.equal((await fetch(link, { method: 'HEAD', redirect: 'manual' })).status, 302);
    }
    const view = (await get(`/v1/broadcasts/${broadcastId}`)).body;
    const [a, b] = view.variants as Array<{
      stats: Record<'sent' | 'clicked' | 'human_clicked' | 'human_click_rate', number>;
    }>;
    assert.equal(a!.stats.clicked, members('A').length, 'every A message was clicked, by machines');
    assert.equal(a!.stats.human_clicked, 3);
    assert.equal(b!.stats.human_clicked, 10);
    assert.equal(b!.stats.clicked, 10);
    assert.ok(a!.stats.human_click_rate < b!.stats.human_click_rate);
  });

  it('survives a restart: the wait for the winner is a row, acted on by the next server (and, on PostgreSQL, a second node)', async () => {
    await server.stop();
    const again = { ...overrides(dns, mx), database: first.config.database, dataDir: first.dir };
    server = await startTestServer(again, { clock });
    if (testPostgresUrl()) other = await startTestServer(again, { clock });
    key = await server.key();
    assert.equal(await statusOf(broadcastId), 'testing');
    clock.advance(60 * 60_000);
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(await statusOf(broadcastId), 'testing', 'an hour in, the two-hour test still runs');
  });

  it('when the test is over, the variant more people clicked goes to the rest; counts add up', async () => {
    const tested = mx.messages.length;
    clock.advance(60 * 60_000);
    const done = await eventually(
      async () => {
        const b = (await get(`/v1/broadcasts/${broadcastId}`)).body;
        return b.status === 'sent' ? b : undefined;
      },
      120_000,
      'the winner sent to the rest',
    );
    assert.equal(done.winner.variant, 'B');
    assert.equal(done.winner.chosen_by, 'metric');

    const rest = [...groups].filter(([, g]) => g === 'rest').map(([email]) => email);
    assert.equal(mx.messages.length, tested + rest.length);
    const received = new Map<string, number>();
    for (const m of mx.messages) received.set(m.to[0]!, (received.get(m.to[0]!) ?? 0) + 1);
    for (const [email, group] of groups)
      assert.equal(received.get(email) ?? 0, group === 'holdout' ? 0 : 1, `${email} (${group})`);
    for (const m of mx.messages.slice(tested))
      assert.equal((await simpleParser(m.raw)).subject, 'Only this week: spring', 'the rest gets the winner');

    // Every count adds up: the variants' test sends, the winner's sends and the holdout are the list.
    const [a, b] = done.variants as Array<{
      stats: Record<'sent' | 'clicked' | 'human_clicked' | 'human_click_rate', number>;
    }>;
    assert.equal(a!.stats.sent + b!.stats.sent + done.winner.stats.sent + done.counts.held_out, CONTACTS);
    assert.equal(done.recipients, CONTACTS);
    assert.equal(done.counts.delivered, CONTACTS - done.counts.held_out);
    assert.equal(done.counts.queued, CONTACTS - done.counts.held_out);
    assert.equal(done.winner.stats.delivered, rest.length);
    assert.equal(done.counts.clicked, done.counts.human_clicked + done.counts.machine_clicked);
    const holdouts = await server.runtime.store.db
      .selectFrom('campaign_holdouts')
      .select('subscriber_id')
      .where('campaign_id', '=', broadcastId)
      .execute();
    assert.deepEqual(
      holdouts.map((h) => h.subscriber_id).sort(),
      [...groups]
        .filter(([, g]) => g === 'holdout')
        .map(([email]) => contacts.get(email)!)
        .sort(),
      'the holdout is listed, to compare with who got the campaign',
    );

    // Events carry the variant; the SPEC's campaign shows the same test.
    const restEmail = await server.runtime.store.db
      .selectFrom('emails')
      .select(['id', 'variant', 'ab_phase'])
      .where('campaign_id', '=', broadcastId)
      .where('ab_phase', '=', 'winner')
      .limit(1)
      .executeTakeFirstOrThrow();
    assert.deepEqual([restEmail.variant, restEmail.ab_phase], ['B', 'winner']);
    const events = (await get(`/v1/emails/${restEmail.id}/events`)).body.events as Array<{
      type: string;
      data: { variant: string };
    }>;
    assert.equal(events.find((e) => e.type === 'email.delivered')!.data.variant, 'B');
    const campaign = (await get(`/v1/campaigns/${broadcastId}`)).body;
    assert.deepEqual(
      [campaign.winner.variant, campaign.variants.length, campaign.counts.held_out],
      ['B', 2, done.counts.held_out],
    );
    // The Resend SDK reads the broadcast as ever, our fields beside Resend's.
    const sdk = ok(await resendClient(server, key).broadcasts.get(broadcastId), 'broadcasts.get') as unknown as {
      status: string;
      winner: { variant: string };
    };
    assert.deepEqual([sdk.status, sdk.winner.variant], ['sent', 'B']);
    // The dashboard shows the variants side by side, the winner and how it was chosen.
    const dashboard = new DashboardClient(server.httpUrl);
    assert.equal((await dashboard.signIn('ab-test-dashboard')).status, 303);
    const campaignPage = (await dashboard.get(`/dashboard/campaigns/${broadcastId}`)).text;
    assert.match(
      campaignPage,
      /<h2>A\/B test<\/h2><p class="muted">40% of the recipients in the test, split evenly; 10% held out\. Variant B won \(the better click rate of people\)/,
    );
    assert.match(campaignPage, /<span class="muted">held out<\/span><b>\d+<\/b>/);
  });

  it('a winner chosen by hand goes at once; once chosen, never again', async () => {
    const before = mx.messages.length;
    const created = await post('/v1/broadcasts', {
      ...base,
      segment_id: smallSegmentId,
      send: true,
      variants: [{ subject: 'Small A' }, { subject: 'Small B' }],
      test_percentage: 50,
      test_duration: '1 day',
    });
    assert.equal(created.status, 201, show(created));
    const id = created.body.id;
    const tooEarly = await post(`/v1/broadcasts/${id}/winner`, { variant: 'A' });
    assert.ok(tooEarly.status === 409 || tooEarly.status === 200, show(tooEarly));
    if (tooEarly.status === 409) {
      assert.match(tooEarly.body.error.message, /a winner is chosen once the variants are sent/);
      await eventually(async () => (await statusOf(id)) === 'testing', 120_000, 'the small test waiting');
      assert.equal((await post(`/v1/broadcasts/${id}/winner`, { variant: 'Z' })).status, 400);
      assert.equal((await post(`/v1/broadcasts/${id}/winner`, {})).status, 400);
      const chosen = await post(`/v1/broadcasts/${id}/winner`, { variant: 'b' });
      assert.equal(chosen.status, 200, show(chosen));
      assert.deepEqual([chosen.body.winner.variant, chosen.body.winner.chosen_by], ['B', 'manual']);
    }
    const again = await post(`/v1/broadcasts/${id}/winner`, { variant: 'A' });
    assert.equal(again.status, 409, show(again));
    assert.match(again.body.error.message, /has its winner already: variant [AB]/);
    await eventually(async () => (await statusOf(id)) === 'sent', 120_000, 'the small broadcast sent');
    assert.equal(mx.messages.length - before, 4, 'each of the four once');
    // The task finds nothing left to decide: a test is decided once.
    assert.equal(await chooseWinners(server.runtime.deps), 0);
    assert.equal((await post(`/v1/broadcasts/${broadcastId}/winner`, { variant: 'A' })).status, 409);
    const plain = await post('/v1/broadcasts', { ...base, segment_id: smallSegmentId });
    assert.match(
      (await post(`/v1/broadcasts/${plain.body.id}/winner`, { variant: 'A' })).body.error.message,
      /has no A\/B test/,
    );
  });

  it('a draft keeps its variants when other fields change, drops them with variants: null, and a copy keeps them', async () => {
    const draft = await post('/v1/broadcasts', {
      ...base,
      segment_id: smallSegmentId,
      variants: [{ subject: 'X' }, { subject: 'Y' }],
      test_percentage: 30,
      test_duration: '90 minutes',
    });
    assert.equal(draft.status, 201, show(draft));
    const renamed = await request(server.httpUrl, 'PATCH', `/v1/broadcasts/${draft.body.id}`, {
      key,
      body: { name: 'Renamed', test_percentage: 60 },
    });
    assert.equal(renamed.status, 200, show(renamed));
    const read = (await get(`/v1/broadcasts/${draft.body.id}`)).body;
    assert.deepEqual(
      [read.name, read.test_percentage, read.test_duration, read.variants.map((v: { subject: string }) => v.subject)],
      ['Renamed', 60, '90 minutes', ['X', 'Y']],
    );
    const copy = (await post(`/v1/broadcasts/${draft.body.id}/duplicate`, {})).body;
    assert.deepEqual(
      (await get(`/v1/broadcasts/${copy.id}`)).body.variants.map((v: { subject: string }) => v.subject),
      ['X', 'Y'],
    );
    const dropped = await request(server.httpUrl, 'PATCH', `/v1/broadcasts/${draft.body.id}`, {
      key,
      body: { variants: null },
    });
    assert.equal(dropped.status, 200, show(dropped));
    const plain = (await get(`/v1/broadcasts/${draft.body.id}`)).body;
    assert.deepEqual(
      [plain.variants, plain.test_percentage, plain.test_duration, plain.name],
      [undefined, null, null, 'Renamed'],
    );
    const stray = await request(server.httpUrl, 'PATCH', `/v1/broadcasts/${draft.body.id}`, {
      key,
      body: { test_percentage: 30 },
    });
    assert.equal(stray.status, 400, show(stray));
    assert.match(stray.body.error.message, /^test_percentage: applies only to an A\/B test/);
  });

  it('a copy of a sent A/B broadcast draws its own exact groups, not the cuts of the one it copies', async () => {
    const copy = await post(`/v1/broadcasts/${broadcastId}/duplicate`, {});
    assert.equal(copy.status, 201, show(copy));
    const sent = await post(`/v1/broadcasts/${copy.body.id}/send`, {});
    assert.equal(sent.status, 200, show(sent));
    await eventually(async () => (await statusOf(copy.body.id)) === 'testing', 30_000, 'the copy queued its variants');
    const view = (await get(`/v1/broadcasts/${copy.body.id}`)).body;
    assert.deepEqual(
      [view.counts.held_out, view.variants.map((v: { stats: { sent: number } }) => v.stats.sent)],
      [30, [60, 60]],
      '10%, 20% and 20% of 300, exactly, cut for the copy',
    );
  });
});

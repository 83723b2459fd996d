import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe("GET /v1/emails filters: to, q, tag, created_after/before, campaign_id, subscriber_id (the dashboard's search)", () => {
  let server: TestServer;
  let key: string;
  const ids = new Map<string, string>();
  before(async () => {
    server = await startTestServer();
    // A test key may send from a domain that is only added.
    await server.runtime.services.domains.add(server.workspaceId, { domain: 'shop.test' });
    key = await server.key({ test: true });
    for (const to of ['Alice.Smith@example.org', 'bob@example.org', 'percent%sign@example.org']) {
      const tags = to.startsWith('bob')
        ? [
            { name: 'plan', value: 'pro' },
            { name: 'quote"d', value: 'x' },
          ]
        : [{ name: 'plan_b', value: 'free' }];
      const res = await request(server.httpUrl, 'POST', '/v1/emails', {
        key,
        body: { from: 'Shop <hi@shop.test>', to, subject: `Order for ${to}`, text: 'x', tags },
      });
      assert.equal(res.status, 200, show(res));
      ids.set(to, res.body.id);
    }
  });
  after(() => server.close());

  const search = async (to: string) => {
    const res = await request(server.httpUrl, 'GET', `/v1/emails?to=${encodeURIComponent(to)}`, { key });
    assert.equal(res.status, 200, show(res));
    return (res.body.data as Array<{ to: string[] }>).map((e) => e.to[0]);
  };

  it('matches part of an address without regard to case', async () => {
    assert.deepEqual(await search('alice.smith'), ['Alice.Smith@example.org']);
    assert.deepEqual((await search('EXAMPLE.ORG')).length, 3);
    assert.deepEqual(await search('nobody'), []);
  });

  it('takes % and _ literally', async () => {
    assert.deepEqual(await search('%'), ['percent%sign@example.org']);
    assert.deepEqual(await search('_'), []);
  });

  const list = async (query: string) => {
    const res = await request(server.httpUrl, 'GET', `/v1/emails?${query}`, { key });
    assert.equal(res.status, 200, show(res));
    return (res.body.data as Array<{ to: string[] }>).map((e) => e.to[0]).sort();
  };

  it('searches subject, From and To without regard to case, or an id exactly (q)', async () => {
    assert.deepEqual(await list('q=ORDER%20FOR%20BOB'), ['bob@example.org']);
    assert.deepEqual((await list('q=shop')).length, 3, 'the From address');
    assert.deepEqual(await list(`q=${ids.get('Alice.Smith@example.org')!.toUpperCase()}`), ['Alice.Smith@example.org']);
    assert.deepEqual(await list('q=_'), [], 'wildcards taken literally');
    assert.deepEqual(await list(`q=${'a'.repeat(320)}`), [], 'at the limit');
    const over = await request(server.httpUrl, 'GET', `/v1/emails?q=${'a'.repeat(321)}`, { key });
    assert.equal(over.status, 400, show(over));
    assert.match(over.body.error.message, /^q: must be one text of at most 320 characters/);
  });

  it('filters by a tag, or a tag name with any value (tag)', async () => {
    assert.deepEqual(await list('tag=plan'), ['bob@example.org'], 'plan, not plan_b');
    assert.deepEqual(await list('tag=plan:pro'), ['bob@example.org']);
    assert.deepEqual(await list('tag=plan:free'), []);
    assert.deepEqual(await list('tag=plan_b'), ['Alice.Smith@example.org', 'percent%sign@example.org']);
    assert.deepEqual(await list(`tag=${encodeURIComponent('quote"d')}`), ['bob@example.org'], 'a quote in a tag');
    assert.deepEqual(await list(`tag=${'t'.repeat(256)}`), [], 'at the limit');
    const over = await request(server.httpUrl, 'GET', `/v1/emails?tag=${'t'.repeat(257)}`, { key });
    assert.equal(over.status, 400, show(over));
    assert.match(over.body.error.message, /^tag: must be one text of at most 256 characters/);
  });

  it('filters by creation time, a date or a date and time (created_after, created_before)', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    assert.equal((await list(`created_after=${today}`)).length, 3);
    assert.deepEqual(await list(`created_after=${tomorrow}`), []);
    assert.deepEqual(await list(`created_before=${today}`), []);
    assert.equal(
      (await list(`created_before=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).length,
      3,
    );
    for (const bad of ['yesterday', '2024-13-45', '2024-06-01T25:00:00Z']) {
      const res = await request(server.httpUrl, 'GET', `/v1/emails?created_after=${bad}`, { key });
      assert.equal(res.status, 400, `${bad}: ${show(res)}`);
      assert.match(res.body.error.message, /^created_after: must be an ISO 8601 date/);
    }
  });

  it('filters by campaign and subscriber, and refuses ids that are not ids', async () => {
    assert.deepEqual(await list('campaign_id=00000000-0000-7000-8000-000000000000'), []);
    assert.deepEqual(await list('subscriber_id=00000000-0000-7000-8000-000000000000'), []);
    const bad = await request(server.httpUrl, 'GET', '/v1/emails?campaign_id=nope', { key });
    assert.equal(bad.status, 400, show(bad));
    assert.match(bad.body.error.message, /^campaign_id: must be an id/);
  });

  it("takes Resend's spelling canceled for the status cancelled", async () => {
    const one = ids.get('bob@example.org')!;
    const res = await request(server.httpUrl, 'POST', '/v1/emails', {
      key,
      body: {
        from: 'hi@shop.test',
        to: 'later@example.org',
        subject: 'later',
        text: 'x',
        scheduled_at: new Date(Date.now() + 3600_000).toISOString(),
      },
    });
    assert.equal((await request(server.httpUrl, 'POST', `/v1/emails/${res.body.id}/cancel`, { key })).status, 200);
    assert.deepEqual(await list('status=canceled'), ['later@example.org']);
    assert.deepEqual(await list('status=cancelled'), ['later@example.org']);
    const shown = await request(server.httpUrl, 'GET', `/v1/emails/${res.body.id}`, { key });
    assert.deepEqual(
      [shown.body.status, shown.body.last_event],
      ['cancelled', 'canceled'],
      "mailsvc's status, Resend's last_event",
    );
    assert.ok(one);
  });

  it('refuses an overlong search with 400', async () => {
    const res = await request(server.httpUrl, 'GET', `/v1/emails?to=${'a'.repeat(400)}`, { key });
    assert.equal(res.status, 400, show(res));
    assert.equal(res.body.error.code, 'validation_error');
  });
});

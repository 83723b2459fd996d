import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Resend } from 'resend';
import { failed, ok } from '../helpers/resend.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { countSelection } from '../../src/store/subscribers.js';

/**
 * Segments with conditions on contact properties: every contact meeting them is a member, in
 * the segment's contact list and count, in a contact's segments, and among a broadcast's
 * recipients. Conditions are ours (the SDK's segments.create sends a name), set with
 * POST/PATCH /segments; the rest is driven with the unchanged SDK.
 */
describe('segments with conditions on contact properties', () => {
  let server: TestServer;
  let resend: Resend;
  let key: string;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.httpUrl}${path}`, {
      method,
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: res.status,
      body: (await res.json()) as Record<string, unknown> & { id: string; message: string; member_count: number },
    };
  };
  const emailsOf = async (segmentId: string) =>
    ok(await resend.contacts.list({ segmentId, limit: 100 }), 'contacts.list by segment')
      .data.map((c) => c.email)
      .sort();
  const recipients = (segmentId: string) =>
    countSelection(
      server.runtime.store.db,
      { workspaceId: server.workspaceId, tags: [], audienceId: segmentId, topicId: null },
      server.runtime.deps.dialect,
    );

  before(async () => {
    server = await startTestServer();
    key = await server.key();
    resend = new Resend(key, { baseUrl: server.httpUrl });
    // One value of another type, written before its property was declared: it never matches.
    ok(await resend.contacts.create({ email: 'legacy@customer.test', properties: { seats: 'lots' } }), 'legacy');
    ok(await resend.contactProperties.create({ key: 'seats', type: 'number' }), 'seats');
    ok(await resend.contactProperties.create({ key: 'plan', type: 'string' }), 'plan');
    ok(await resend.contactProperties.create({ key: 'vip', type: 'boolean' as 'string' }), 'vip');
    ok(await resend.contactProperties.create({ key: 'renews', type: 'date' as 'string' }), 'renews');
    const people: Array<[string, Record<string, string | number | boolean>]> = [
      ['ann@customer.test', { seats: 10, plan: 'pro', vip: true, renews: '2027-01-15' }],
      ['bob@customer.test', { seats: 5, plan: 'free', vip: false, renews: '2027-09-01' }],
      ['cy@customer.test', { seats: 4, plan: 'pro' }],
      ['dee@customer.test', {}],
    ];
    for (const [email, properties] of people) {
      // The SDK's property type allows strings and numbers; ours takes the declared types.
      ok(
        await resend.contacts.create({ email, properties: properties as Record<string, string> }),
        `contacts.create ${email}`,
      );
    }
  });
  after(async () => server?.close());

  it('a number condition at, under and over its bound; members listed, counted, and a broadcast goes to them', async () => {
    const created = await call('POST', '/segments', {
      name: 'Big teams',
      conditions: [{ property: 'seats', operator: 'gte', value: 5 }],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.conditions, [{ property: 'seats', operator: 'gte', value: 5 }]);
    assert.equal(created.body.member_count, 2);
    // 10 and 5 (at the bound) are in, 4 (under) and a non-number are not.
    assert.deepEqual(await emailsOf(created.body.id), ['ann@customer.test', 'bob@customer.test']);
    assert.equal(await recipients(created.body.id), 2);
    assert.equal(ok(await resend.segments.get(created.body.id), 'segments.get').id, created.body.id);

    // gt excludes the bound.
    ok(await resend.segments.update(created.body.id, { name: 'Bigger teams' }), 'segments.update keeps conditions');
    const gt = await call('PATCH', `/segments/${created.body.id}`, {
      conditions: [{ property: 'seats', operator: 'gt', value: 5 }],
    });
    assert.equal(gt.status, 200);
    assert.equal(gt.body.name, 'Bigger teams');
    assert.deepEqual(await emailsOf(created.body.id), ['ann@customer.test']);

    // A contact added by hand stays a member without meeting the conditions.
    ok(
      await resend.contacts.segments.add({ email: 'dee@customer.test', segmentId: created.body.id }),
      'contacts.segments.add',
    );
    assert.deepEqual(await emailsOf(created.body.id), ['ann@customer.test', 'dee@customer.test']);
    assert.equal(await recipients(created.body.id), 2);

    // The contact's own segments list the ones it meets.
    const annSegments = ok(
      await resend.contacts.segments.list({ email: 'ann@customer.test' }),
      'contacts.segments.list',
    );
    assert.ok(annSegments.data.some((s) => s.id === created.body.id));
    const cySegments = ok(
      await resend.contacts.segments.list({ email: 'cy@customer.test' }),
      'contacts.segments.list cy',
    );
    assert.ok(!cySegments.data.some((s) => s.id === created.body.id));

    // A property changing moves a contact in or out at once.
    ok(await resend.contacts.update({ email: 'cy@customer.test', properties: { seats: 6 } }), 'contacts.update');
    assert.deepEqual(await emailsOf(created.body.id), ['ann@customer.test', 'cy@customer.test', 'dee@customer.test']);

    // Removing the conditions leaves the hand-added members.
    const cleared = await call('PATCH', `/segments/${created.body.id}`, { conditions: null });
    assert.equal(cleared.body.conditions, null);
    assert.deepEqual(await emailsOf(created.body.id), ['dee@customer.test']);
  });

  it('string, boolean and date conditions, exists and not_exists, all of them together', async () => {
    const make = async (conditions: unknown[]) => {
      const r = await call('POST', '/segments', { name: 'c', conditions });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return emailsOf(r.body.id);
    };
    assert.deepEqual(await make([{ property: 'plan', operator: 'eq', value: 'pro' }]), [
      'ann@customer.test',
      'cy@customer.test',
    ]);
    assert.deepEqual(await make([{ property: 'plan', operator: 'neq', value: 'pro' }]), ['bob@customer.test']);
    assert.deepEqual(await make([{ property: 'vip', operator: 'eq', value: true }]), ['ann@customer.test']);
    assert.deepEqual(await make([{ property: 'vip', operator: 'eq', value: false }]), ['bob@customer.test']);
    assert.deepEqual(await make([{ property: 'renews', operator: 'lt', value: '2027-06-01' }]), ['ann@customer.test']);
    assert.deepEqual(await make([{ property: 'vip', operator: 'exists' }]), ['ann@customer.test', 'bob@customer.test']);
    assert.deepEqual(await make([{ property: 'plan', operator: 'not_exists' }]), [
      'dee@customer.test',
      'legacy@customer.test',
    ]);
    assert.deepEqual(
      await make([
        { property: 'plan', operator: 'eq', value: 'pro' },
        { property: 'seats', operator: 'lte', value: 6 },
      ]),
      ['cy@customer.test'],
    );
  });

  it('refuses conditions that cannot hold, in the envelope; 20 conditions at most', async () => {
    const bad = async (conditions: unknown, field: RegExp) => {
      const r = await call('POST', '/segments', { name: 'bad', conditions });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.match(r.body.message, field);
    };
    await bad([{ property: 'shoe_size', operator: 'eq', value: 1 }], /declared contact property/);
    await bad([{ property: 'seats', operator: 'eq', value: 'ten' }], /must be a number/);
    await bad([{ property: 'vip', operator: 'gt', value: true }], /boolean/);
    await bad([{ property: 'seats', operator: 'like', value: 1 }], /one of eq, neq/);
    await bad([{ property: 'seats', operator: 'exists', value: 1 }], /takes no value/);
    await bad([{ property: 'renews', operator: 'lt', value: 'soon' }], /date/);
    const one = { property: 'seats', operator: 'gte', value: 0 };
    const twenty = await call('POST', '/segments', {
      name: 'twenty',
      conditions: Array.from({ length: 20 }, () => one),
    });
    assert.equal(twenty.status, 201);
    await bad(
      Array.from({ length: 21 }, () => one),
      /at most 20/,
    );
    failed(await resend.segments.create({ name: '' }), 400, 'validation_error');
  });
});

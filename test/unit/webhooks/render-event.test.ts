import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderData, renderEnvelope, type EventToRender } from '../../../src/webhooks/render-event.js';

const delivered: EventToRender = {
  id: 'evt_abc',
  type: 'email.delivered',
  created_at: Date.UTC(2025, 0, 2, 3, 4, 5),
  data: {
    email_id: '0190a4b2-0000-7000-8000-000000000001',
    message_id: '<m1@example.com>',
    to: 'bob@example.org',
    subject: 'Hello',
    campaign_id: 'c1',
    subscriber_id: 's1',
    tags: ['welcome'],
    metadata: { order: 42 },
    timestamp: '2025-01-02T03:04:05.000Z',
    smtp: { code: 250, response: '250 2.0.0 OK', mx_host: 'mx.example.org' },
  },
};

describe('webhook payloads', () => {
  it('envelope: id, type, created_at (ISO), data', () => {
    const env = renderEnvelope('v1', delivered);
    assert.deepEqual(Object.keys(env), ['id', 'type', 'created_at', 'data']);
    assert.equal(env.id, 'evt_abc');
    assert.equal(env.created_at, '2025-01-02T03:04:05.000Z');
  });

  const resendFields = {
    created_at: '2025-01-02T03:04:05.000Z',
    from: null,
    message_id: '<m1@example.com>',
    broadcast_id: 'c1',
    tags: { welcome: '' },
    variant: null,
  };

  it("versioned email.delivered: email_id, to, subject, and Resend's created_at, from, message_id, broadcast_id, tags", () => {
    assert.deepEqual(renderData('v1', delivered), {
      email_id: delivered.data.email_id,
      to: ['bob@example.org'],
      subject: 'Hello',
      ...resendFields,
    });
    const tagged = {
      ...delivered,
      data: { ...delivered.data, from: 'Shop <news@shop.example>', tags: ['category:welcome', 'vip'] },
    };
    assert.deepEqual(renderData('v1', tagged).tags, { category: 'welcome', vip: '' });
    assert.equal(renderData('v1', tagged).from, 'Shop <news@shop.example>');
  });

  it('legacy email.delivered: email_id, message_id, recipient, campaign_id, timestamp, metadata{subscriber_id, tags}', () => {
    assert.deepEqual(renderData('legacy', delivered), {
      email_id: delivered.data.email_id,
      message_id: '<m1@example.com>',
      recipient: 'bob@example.org',
      campaign_id: 'c1',
      timestamp: '2025-01-02T03:04:05.000Z',
      metadata: { order: 42, subscriber_id: 's1', tags: ['welcome'] },
    });
  });

  it('fields an event did not record are null, and legacy timestamp defaults to the event time', () => {
    const bare = { ...delivered, type: 'email.bounced', data: { email_id: 'e', to: ['a@x.org', 'b@x.org'] } };
    assert.deepEqual(renderData('v1', bare), {
      email_id: 'e',
      to: ['a@x.org', 'b@x.org'],
      subject: null,
      created_at: '2025-01-02T03:04:05.000Z',
      from: null,
      message_id: null,
      broadcast_id: null,
      tags: {},
      variant: null,
      bounce: null,
      smtp: null,
      mx_host: null,
    });
    const legacy = renderData('legacy', bare);
    assert.equal(legacy.recipient, 'a@x.org');
    assert.equal(legacy.timestamp, '2025-01-02T03:04:05.000Z');
    assert.deepEqual(legacy.metadata, { subscriber_id: null, tags: [] });
  });

  it('type-specific fields travel on both surfaces', () => {
    const clicked = {
      ...delivered,
      type: 'email.clicked',
      data: {
        ...delivered.data,
        url: 'https://example.org/x',
        user_agent: 'UA/1',
        classification: 'scanner',
        is_machine: true,
        classified_by: 'head_request',
      },
    };
    for (const surface of ['v1', 'legacy'] as const) {
      const data = renderData(surface, clicked);
      assert.equal(data.url, 'https://example.org/x');
      assert.equal(data.user_agent, 'UA/1');
      assert.equal(data.classification, 'scanner');
      assert.equal(data.is_machine, true);
      assert.equal('classified_by' in data, false, 'the rule that decided stays in the event');
      assert.equal('smtp' in data, false);
    }
    const variant = { ...clicked, data: { ...clicked.data, variant: 'B' } };
    assert.equal(renderData('v1', variant).variant, 'B', "an A/B test's variant, on the versioned surface");
    assert.equal('variant' in renderData('legacy', variant), false, "the legacy payload keeps the SPEC's fields");
    const delayed = {
      ...delivered,
      type: 'email.delivery_delayed',
      data: { ...delivered.data, attempt: 2, next_attempt_at: '2025-01-02T03:09:05.000Z' },
    };
    assert.deepEqual(renderData('v1', delayed), {
      email_id: delivered.data.email_id,
      to: ['bob@example.org'],
      subject: 'Hello',
      ...resendFields,
      smtp: delivered.data.smtp,
      mx_host: null,
      attempt: 2,
      next_attempt_at: '2025-01-02T03:09:05.000Z',
    });
    const suppressed = {
      ...delivered,
      type: 'email.suppressed',
      data: { ...delivered.data, suppression: { email: 'bob@example.org', reason: 'hard_bounce', scope: 'all' } },
    };
    assert.deepEqual(renderData('legacy', suppressed).suppression, {
      email: 'bob@example.org',
      reason: 'hard_bounce',
      scope: 'all',
    });
  });

  it('subscriber and campaign events carry their own fields; unknown types pass through', () => {
    const sub = {
      ...delivered,
      type: 'subscriber.created',
      data: { subscriber_id: 's1', email: 'a@x.org', status: 'subscribed', secret_internal: 1 },
    };
    assert.deepEqual(renderData('legacy', sub), {
      subscriber_id: 's1',
      email: 'a@x.org',
      status: 'subscribed',
      first_name: null,
      last_name: null,
      tags: null,
      metadata: null,
    });
    assert.deepEqual(
      renderData('v1', { ...delivered, type: 'campaign.sent', data: { campaign_id: 'c', name: 'N', recipients: 3 } }),
      { campaign_id: 'c', name: 'N', recipients: 3 },
    );
    assert.deepEqual(renderData('v1', { ...delivered, type: 'future.thing', data: { a: 1 } }), { a: 1 });
  });

  it('workflow events carry the run on both surfaces', () => {
    const data = {
      workflow_id: 'w1',
      workflow_name: 'Welcome',
      run_id: 'r1',
      subscriber_id: 's1',
      email: 'a@x.org',
      trigger_event: 'user.created',
      status: 'completed',
      started_at: 'x',
      completed_at: 'y',
      error: null,
      test: false,
      internal: 1,
    };
    for (const type of ['workflow.started', 'workflow.completed', 'workflow.failed']) {
      const { internal: _, ...expected } = data;
      assert.deepEqual(renderData('v1', { ...delivered, type, data }), expected);
      assert.deepEqual(renderData('legacy', { ...delivered, type, data }), expected);
    }
  });

  it("email.received carries the same fields on both surfaces, Resend's first, not the email common fields", () => {
    const received = {
      ...delivered,
      type: 'email.received',
      data: {
        email_id: 'r1',
        from: 'a@x.org',
        to: ['support@acme.test'],
        subject: 'Hi',
        text: 'hello',
        in_reply_to_email_id: 'e1',
      },
    };
    const v1 = renderData('v1', received);
    assert.deepEqual(renderData('legacy', received), v1);
    assert.deepEqual(Object.keys(v1).slice(0, 11), [
      'email_id',
      'created_at',
      'from',
      'to',
      'cc',
      'bcc',
      'reply_to',
      'received_for',
      'subject',
      'message_id',
      'attachments',
    ]);
    assert.equal(v1.text, 'hello');
    assert.equal(v1.in_reply_to_email_id, 'e1');
    assert.equal(v1.cc, null, 'a field the event did not record is null');
    assert.equal('recipient' in v1, false);
  });
});

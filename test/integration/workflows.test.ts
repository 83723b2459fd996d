import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Resend } from 'resend';
import { Webhook } from 'standardwebhooks';
import { routeDomain, eventually } from '../helpers/delivery.js';
import { startDeliveringServer, type DeliveringServer } from '../helpers/delivering-server.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startMxServer, type ReceivedMessage, type TestMx } from '../helpers/mx-server.js';
import { runRetention } from '../../src/tasks/retention.js';
import { newId } from '../../src/shared/ids.js';
import { saveWorkflowTrigger, triggerContactKey } from '../../src/store/workflow-triggers.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Workflows end to end on a real server: events through the API start runs, steps wait,
 * branch and send through the loopback MX, and workflow.* webhooks arrive signed.
 */
describe('workflows', () => {
  let server: TestServer;
  let rig: DeliveringServer | undefined;
  let dns: TestDns;
  let mx: TestMx;
  let receiver: WebhookReceiver;
  let key: string;
  let secret: string;
  let templateId: string;

  const api = (method: string, path: string, body?: unknown) => request(server.httpUrl, method, path, { key, body });
  const ok = async (method: string, path: string, body: unknown, status: number) => {
    const res = await api(method, path, body);
    assert.equal(res.status, status, show(res));
    return res.body;
  };
  const template = async (name: string, subject: string, html: string): Promise<string> =>
    (await ok('POST', '/v1/templates', { name, subject, html }, 201)).id;
  const create = (body: Record<string, unknown>) => ok('POST', '/v1/automations', { status: 'enabled', ...body }, 201);
  const sendEvent = (event: string, email: string, payload: Record<string, unknown> = {}) =>
    ok('POST', '/v1/events/send', { event, email, payload }, 202);
  const runsOf = async (workflowId: string) =>
    (await ok('GET', `/v1/automations/${workflowId}/runs`, undefined, 200)).data as any[];
  const runOf = (workflowId: string, runId: string) =>
    ok('GET', `/v1/automations/${workflowId}/runs/${runId}`, undefined, 200);
  const finished = (workflowId: string, count: number) =>
    eventually(
      async () => {
        const runs = await runsOf(workflowId);
        return runs.length >= count && runs.every((r) => r.status !== 'running') ? runs : undefined;
      },
      30_000,
      `${count} finished run(s)`,
    );
  const mailTo = (address: string) => mx.messages.filter((m) => m.to.includes(address));
  const subjectOf = (m: ReceivedMessage) => /^Subject: (.*)$/m.exec(m.raw.toString())?.[1];

  before(async () => {
    receiver = await startWebhookReceiver();
    rig = await startDeliveringServer({
      delivery: { pollInterval: 50, mtaSts: false, signingThreads: 0 },
      config: {
        webhooks: { allowPrivateNetworks: true, pollInterval: 20 },
        // Temporary failures are retried after a second here.
        workflows: { pollInterval: 50, retrySchedule: [1, 1, 1, 1, 1] },
      },
      senders: ['shop.test'],
    });
    ({ server, dns, mx } = rig);
    key = await server.key();
    const hook = await ok(
      'POST',
      '/v1/webhooks',
      {
        url: `${receiver.url}/hooks`,
        events: ['workflow.started', 'workflow.completed', 'workflow.failed', 'email.delivered'],
      },
      201,
    );
    secret = hook.secret;
    templateId = await template(
      'Welcome',
      'Welcome, {{contact.first_name}}',
      '<p>Your plan: {{plan}}</p><p><a href="{{unsubscribe_url}}">Unsubscribe</a></p>',
    );
  });
  after(async () => {
    await rig?.close();
    await receiver?.close();
  });

  it('an event sent through the API starts a run; the delay waits, then the email arrives at the MX; workflow.started and workflow.completed arrive signed', async () => {
    await ok('POST', '/v1/subscribers', { email: 'ada@dest.test', first_name: 'Ada' }, 201);
    const workflow = await create({
      name: 'Welcome series',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'user.signed_up' } },
        { key: 'wait', type: 'delay', config: { duration: '2 seconds' } },
        {
          key: 'welcome',
          type: 'send_email',
          config: {
            template: { id: templateId, variables: { plan: { var: 'event.plan' } } },
            from: 'Shop <hello@shop.test>',
          },
        },
      ],
      connections: [
        { from: 'start', to: 'wait' },
        { from: 'wait', to: 'welcome' },
      ],
    });
    assert.equal(workflow.status, 'enabled');
    const sent = await sendEvent('user.signed_up', 'ada@dest.test', { plan: 'pro' });
    assert.equal(sent.object, 'event');
    assert.equal(sent.event, 'user.signed_up');

    const [run] = await eventually(
      async () => {
        const runs = await runsOf(workflow.id);
        return runs.length === 1 && runs[0].current_step === 'wait' ? runs : undefined;
      },
      10_000,
      'the run to wait at the delay',
    );
    assert.equal(run.status, 'running');
    assert.ok(run.next_at, 'a waiting run says when it continues');
    const waiting = await runOf(workflow.id, run.id);
    assert.deepEqual(
      waiting.steps.map((s: any) => [s.key, s.status]),
      [
        ['start', 'completed'],
        ['wait', 'waiting'],
      ],
    );
    assert.equal(mailTo('ada@dest.test').length, 0, 'nothing is sent during the delay');

    const [done] = await finished(workflow.id, 1);
    assert.equal(done.status, 'completed');
    const detail = await runOf(workflow.id, run.id);
    assert.deepEqual(
      detail.steps.map((s: any) => [s.key, s.type, s.status]),
      [
        ['start', 'trigger', 'completed'],
        ['wait', 'delay', 'completed'],
        ['welcome', 'send_email', 'completed'],
      ],
    );
    const emailId = detail.steps[2].output.email_id;
    assert.ok(emailId);
    // The delay lasted (at least) its duration.
    assert.ok(Date.parse(detail.steps[1].completed_at) - Date.parse(detail.steps[1].started_at) >= 2000);

    await eventually(async () => mailTo('ada@dest.test').length === 1, 120_000, 'the email at the MX');
    const [message] = mailTo('ada@dest.test');
    const raw = message!.raw.toString();
    assert.equal(subjectOf(message!), 'Welcome, Ada');
    assert.match(raw, /Your plan: pro/);
    assert.match(raw, /^List-Unsubscribe-Post: List-Unsubscribe=One-Click/m, 'one-click unsubscribe');

    const email = await ok('GET', `/v1/emails/${emailId}`, undefined, 200);
    assert.equal(email.metadata.workflow_id, workflow.id);
    assert.equal(email.metadata.workflow_run_id, run.id);
    const metrics = (await request(server.httpUrl, 'GET', '/metrics')).text;
    assert.match(
      metrics,
      /^mailsvc_emails_accepted_total\{intake="workflow",type="marketing"\} [1-9]/m,
      'counted as workflow mail',
    );

    const hooks = await receiver.waitFor(
      3,
      (r) =>
        ['workflow.started', 'workflow.completed'].includes(r.json?.type) ||
        (r.json?.type === 'email.delivered' && r.json.data.email_id === emailId),
    );
    const verified = hooks.map(
      (h) => new Webhook(secret).verify(h.body, h.headers as Record<string, string>) as { type: string; data: any },
    );
    const started = verified.find((v) => v.type === 'workflow.started')!;
    const completed = verified.find((v) => v.type === 'workflow.completed')!;
    assert.deepEqual(
      {
        workflow_id: started.data.workflow_id,
        run_id: started.data.run_id,
        status: started.data.status,
        email: started.data.email,
        trigger_event: started.data.trigger_event,
      },
      {
        workflow_id: workflow.id,
        run_id: run.id,
        status: 'running',
        email: 'ada@dest.test',
        trigger_event: 'user.signed_up',
      },
    );
    assert.equal(completed.data.status, 'completed');
    assert.equal(completed.data.run_id, run.id);
    assert.ok(completed.data.completed_at);
  });

  it('a condition branches both ways on the event payload and the contact', async () => {
    const pro = await template('Pro', 'Welcome to Pro', '<p>pro</p>');
    const free = await template('Free', 'Welcome to Free', '<p>free</p>');
    const workflow = await create({
      name: 'Plan-based welcome',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'plan.chosen' } },
        {
          key: 'is_pro',
          type: 'condition',
          config: {
            type: 'and',
            rules: [
              { type: 'rule', field: 'event.plan', operator: 'eq', value: 'pro' },
              { type: 'rule', field: 'contact.email', operator: 'ends_with', value: '@dest.test' },
            ],
          },
        },
        { key: 'send_pro', type: 'send_email', config: { template: { id: pro }, from: 'hello@shop.test' } },
        { key: 'send_free', type: 'send_email', config: { template: { id: free }, from: 'hello@shop.test' } },
      ],
      connections: [
        { from: 'start', to: 'is_pro' },
        { from: 'is_pro', to: 'send_pro', type: 'condition_met' },
        { from: 'is_pro', to: 'send_free', type: 'condition_not_met' },
      ],
    });
    await sendEvent('plan.chosen', 'payer@dest.test', { plan: 'pro' });
    await sendEvent('plan.chosen', 'saver@dest.test', { plan: 'free' });
    const runs = await finished(workflow.id, 2);
    for (const run of runs) {
      const detail = await runOf(workflow.id, run.id);
      const branch = detail.steps.find((s: any) => s.key === 'is_pro');
      assert.equal(branch.output.result, run.email === 'payer@dest.test');
      assert.deepEqual(
        detail.steps.map((s: any) => s.key),
        ['start', 'is_pro', run.email === 'payer@dest.test' ? 'send_pro' : 'send_free'],
      );
    }
    await eventually(
      async () => mailTo('payer@dest.test').length === 1 && mailTo('saver@dest.test').length === 1,
      120_000,
      'both emails',
    );
    assert.equal(subjectOf(mailTo('payer@dest.test')[0]!), 'Welcome to Pro');
    assert.equal(subjectOf(mailTo('saver@dest.test')[0]!), 'Welcome to Free');
  });

  it('wait_for_event continues on the event (its filter applied) and on its timeout', async () => {
    const thanks = await template('Thanks', 'Thanks for paying {{wait_amount}}', '<p>thanks</p>');
    const reminder = await template('Reminder', 'Your cart is waiting', '<p>come back</p>');
    const workflow = await create({
      name: 'Cart recovery',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'cart.created' } },
        {
          key: 'paid',
          type: 'wait_for_event',
          config: {
            event_name: 'cart.paid',
            timeout: '3 seconds',
            filter_rule: { type: 'rule', field: 'event.amount', operator: 'gt', value: 0 },
          },
        },
        {
          key: 'thanks',
          type: 'send_email',
          config: {
            template: { id: thanks, variables: { wait_amount: { var: 'wait_events.cart.paid.amount' } } },
            from: 'hello@shop.test',
          },
        },
        { key: 'remind', type: 'send_email', config: { template: { id: reminder }, from: 'hello@shop.test' } },
      ],
      connections: [
        { from: 'start', to: 'paid' },
        { from: 'paid', to: 'thanks', type: 'event_received' },
        { from: 'paid', to: 'remind', type: 'timeout' },
      ],
    });
    await sendEvent('cart.created', 'buyer@dest.test');
    await sendEvent('cart.created', 'browser@dest.test');
    // Paid at once: both events are queued before the runner looks (written as the API writes
    // them, in one transaction). The payment is acted on after the run that waits for it started.
    await server.runtime.store.db.transaction().execute(async (trx) => {
      const now = Date.now();
      for (const [event, payload, at] of [
        ['cart.created', {}, now],
        ['cart.paid', { amount: 9 }, now + 1],
      ] as const) {
        await saveWorkflowTrigger(trx, {
          id: newId(),
          workspace_id: server.workspaceId,
          event_name: event,
          event_id: null,
          subscriber_id: null,
          email: 'quick@dest.test',
          contact_key: triggerContactKey(server.workspaceId, 'quick@dest.test'),
          payload,
          test: false,
          created_at: at,
          lease_owner: null,
          lease_until: null,
        });
      }
    });
    await eventually(
      async () => {
        const runs = await runsOf(workflow.id);
        return runs.length === 3 && runs.filter((r) => r.current_step === 'paid').length === 2 ? runs : undefined;
      },
      10_000,
      'two runs waiting',
    );
    // Filtered out (amount 0), then the one that counts.
    await sendEvent('cart.paid', 'buyer@dest.test', { amount: 0 });
    await sendEvent('cart.paid', 'buyer@dest.test', { amount: 25 });
    const runs = await finished(workflow.id, 3);
    const byEmail = new Map(runs.map((r) => [r.email, r]));
    const quick = await runOf(workflow.id, byEmail.get('quick@dest.test').id);
    assert.deepEqual(
      quick.steps.map((s: any) => s.key),
      ['start', 'paid', 'thanks'],
    );
    const paid = await runOf(workflow.id, byEmail.get('buyer@dest.test').id);
    assert.deepEqual(
      paid.steps.map((s: any) => s.key),
      ['start', 'paid', 'thanks'],
    );
    assert.deepEqual(paid.steps[1].output, { event: 'cart.paid', payload: { amount: 25 } });
    const timedOut = await runOf(workflow.id, byEmail.get('browser@dest.test').id);
    assert.deepEqual(
      timedOut.steps.map((s: any) => s.key),
      ['start', 'paid', 'remind'],
    );
    assert.deepEqual(timedOut.steps[1].output, { timed_out: true });
    await eventually(
      async () =>
        mailTo('buyer@dest.test').length === 1 &&
        mailTo('browser@dest.test').length === 1 &&
        mailTo('quick@dest.test').length === 1,
      120_000,
      'the three emails',
    );
    assert.equal(subjectOf(mailTo('buyer@dest.test')[0]!), 'Thanks for paying 25');
    assert.equal(subjectOf(mailTo('quick@dest.test')[0]!), 'Thanks for paying 9');
    assert.equal(subjectOf(mailTo('browser@dest.test')[0]!), 'Your cart is waiting');
  });

  it("an unsubscribed or suppressed contact's run skips the send and goes on", async () => {
    const sub = await ok('POST', '/v1/subscribers', { email: 'gone@dest.test' }, 201);
    await ok('PATCH', `/v1/subscribers/${sub.id}`, { status: 'unsubscribed' }, 200);
    await ok('POST', '/v1/suppressions', { email: 'blocked@dest.test', reason: 'manual' }, 201);
    const workflow = await create({
      name: 'Respectful',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'nudge' } },
        { key: 'mail', type: 'send_email', config: { template: { id: templateId }, from: 'hello@shop.test' } },
        { key: 'tag', type: 'contact_update', config: { properties: { nudged: true } } },
      ],
      connections: [
        { from: 'start', to: 'mail' },
        { from: 'mail', to: 'tag' },
      ],
    });
    await sendEvent('nudge', 'gone@dest.test');
    await sendEvent('nudge', 'blocked@dest.test');
    const runs = await finished(workflow.id, 2);
    for (const run of runs) {
      assert.equal(run.status, 'completed');
      const detail = await runOf(workflow.id, run.id);
      const mail = detail.steps.find((s: any) => s.key === 'mail');
      assert.equal(mail.status, 'skipped');
      assert.equal(mail.output.reason, run.email === 'gone@dest.test' ? 'unsubscribed' : 'suppressed');
      assert.equal(
        detail.steps.find((s: any) => s.key === 'tag').status,
        'completed',
        'the steps after a skipped send still run',
      );
    }
    const emails = await server.runtime.store.db
      .selectFrom('emails')
      .select('id')
      .where('to_addresses', 'like', '%gone@dest.test%')
      .execute();
    assert.equal(emails.length, 0, 'no email was even created');
    assert.equal(mailTo('gone@dest.test').length + mailTo('blocked@dest.test').length, 0);
  });

  it('platform events about a subscriber start runs: subscriber.created adds to a segment and updates the contact; subscriber.unsubscribed too', async () => {
    const segment = await ok('POST', '/v1/audiences', { name: 'Newcomers' }, 201);
    const onboarding = await create({
      name: 'Onboarding',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'subscriber.created' } },
        { key: 'segment', type: 'add_to_segment', config: { segment_id: segment.id } },
        {
          key: 'mark',
          type: 'contact_update',
          config: { first_name: { var: 'event.email' }, properties: { source: 'onboarding' } },
        },
      ],
      connections: [
        { from: 'start', to: 'segment' },
        { from: 'segment', to: 'mark' },
      ],
    });
    const churn = await create({
      name: 'Churn',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'subscriber.unsubscribed' } },
        { key: 'mark', type: 'contact_update', config: { properties: { churned: true, source: null } } },
      ],
      connections: [{ from: 'start', to: 'mark' }],
    });
    const sub = await ok('POST', '/v1/subscribers', { email: 'newbie@dest.test' }, 201);
    await finished(onboarding.id, 1);
    const members = await ok('GET', `/v1/audiences/${segment.id}/members`, undefined, 200);
    assert.deepEqual(
      members.subscribers.map((m: any) => m.email),
      ['newbie@dest.test'],
    );
    let contact = await ok('GET', `/v1/subscribers/${sub.id}`, undefined, 200);
    assert.equal(contact.first_name, 'newbie@dest.test');
    assert.deepEqual(contact.metadata, { source: 'onboarding' });
    // The run's own contact_update emitted subscriber.updated; that starts nothing here.
    await ok('PATCH', `/v1/subscribers/${sub.id}`, { status: 'unsubscribed' }, 200);
    await finished(churn.id, 1);
    contact = await ok('GET', `/v1/subscribers/${sub.id}`, undefined, 200);
    assert.deepEqual(contact.metadata, { churned: true });
    assert.equal((await runsOf(onboarding.id)).length, 1);
  });

  it('a contact is in one run of a workflow at a time, unless the workflow allows re-entry', async () => {
    const steps = [
      { key: 'start', type: 'trigger', config: { event_name: 'ping' } },
      { key: 'pause', type: 'delay', config: { duration: '1 second' } },
    ];
    const once = await create({ name: 'Once at a time', steps, connections: [{ from: 'start', to: 'pause' }] });
    const again = await ok('POST', `/v1/automations/${once.id}/duplicate`, undefined, 201);
    assert.equal(again.status, 'draft');
    assert.equal(again.name, 'Once at a time (copy)');
    await ok('PATCH', `/v1/automations/${again.id}`, { status: 'enabled', allow_reentry: true }, 200);
    await sendEvent('ping', 'twice@dest.test');
    await sendEvent('ping', 'twice@dest.test');
    await finished(once.id, 1);
    await finished(again.id, 2);
    assert.equal((await runsOf(once.id)).length, 1, 'the second ping came while the contact was in the run');
    assert.equal((await runsOf(again.id)).length, 2);
    // Once the run is over, the contact may enter again.
    await sendEvent('ping', 'twice@dest.test');
    await finished(once.id, 2);
  });

  it('one-click unsubscribe from a workflow email skips the sends after it in the same run', async () => {
    const workflow = await create({
      name: 'Drip',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'drip.start' } },
        {
          key: 'first',
          type: 'send_email',
          config: { template: { id: templateId }, from: 'hello@shop.test', subject: 'First' },
        },
        {
          key: 'until_unsubscribed',
          type: 'wait_for_event',
          config: { event_name: 'subscriber.unsubscribed', timeout: '30 seconds' },
        },
        {
          key: 'second',
          type: 'send_email',
          config: { template: { id: templateId }, from: 'hello@shop.test', subject: 'Second' },
        },
      ],
      connections: [
        { from: 'start', to: 'first' },
        { from: 'first', to: 'until_unsubscribed' },
        { from: 'until_unsubscribed', to: 'second', type: 'event_received' },
      ],
    });
    await sendEvent('drip.start', 'leaver@dest.test');
    await eventually(async () => mailTo('leaver@dest.test').length === 1, 120_000, 'the first email');
    const head = mailTo('leaver@dest.test')[0]!
      .raw.toString()
      .replace(/\r\n[ \t]+/g, ' ');
    const header = /^List-Unsubscribe: <([^>]+)>/m.exec(head)![1]!;
    const res = await request(server.httpUrl, 'POST', new URL(header).pathname, {
      raw: 'List-Unsubscribe=One-Click',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(res.status, 200, show(res));
    const [run] = await finished(workflow.id, 1);
    const detail = await runOf(workflow.id, run.id);
    assert.deepEqual(
      detail.steps.map((s: any) => [s.key, s.status]),
      [
        ['start', 'completed'],
        ['first', 'completed'],
        ['until_unsubscribed', 'completed'],
        ['second', 'skipped'],
      ],
    );
    assert.equal(detail.steps[3].output.reason, 'unsubscribed');
    assert.equal(mailTo('leaver@dest.test').length, 1);
  });

  it('stop cancels every run in progress; one run can be cancelled; a finished one cannot', async () => {
    const workflow = await create({
      name: 'Long wait',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'long.wait' } },
        { key: 'pause', type: 'delay', config: { duration: '1 day' } },
        { key: 'mail', type: 'send_email', config: { template: { id: templateId }, from: 'hello@shop.test' } },
      ],
      connections: [
        { from: 'start', to: 'pause' },
        { from: 'pause', to: 'mail' },
      ],
    });
    for (const who of ['w1', 'w2', 'w3']) await sendEvent('long.wait', `${who}@dest.test`);
    const waiting = await eventually(
      async () => {
        const runs = await runsOf(workflow.id);
        return runs.length === 3 && runs.every((r) => r.current_step === 'pause') ? runs : undefined;
      },
      10_000,
      'three waiting runs',
    );
    const one = await ok('POST', `/v1/automations/${workflow.id}/runs/${waiting[0].id}/cancel`, undefined, 200);
    assert.equal(one.status, 'cancelled');
    assert.deepEqual(
      one.steps.map((s: any) => [s.key, s.status]),
      [
        ['start', 'completed'],
        ['pause', 'skipped'],
      ],
    );
    // Cancelling again is fine; the others still run.
    assert.equal(
      (await ok('POST', `/v1/automations/${workflow.id}/runs/${waiting[0].id}/cancel`, undefined, 200)).status,
      'cancelled',
    );
    const stopped = await ok('POST', `/v1/automations/${workflow.id}/stop`, undefined, 200);
    assert.deepEqual(stopped, { object: 'automation', id: workflow.id, status: 'disabled', cancelled_runs: 2 });
    const runs = await runsOf(workflow.id);
    assert.deepEqual(
      runs.map((r) => r.status),
      ['cancelled', 'cancelled', 'cancelled'],
    );
    // Disabled: an event starts nothing.
    await sendEvent('long.wait', 'w4@dest.test');
    await eventually(
      async () => (await server.runtime.store.db.selectFrom('workflow_triggers').select('id').execute()).length === 0,
      120_000,
      'the event consumed',
    );
    assert.equal((await runsOf(workflow.id)).length, 3);
    const filtered = await ok('GET', `/v1/automations/${workflow.id}/runs?status=running,failed`, undefined, 200);
    assert.equal(filtered.data.length, 0);

    const instant = await create({
      name: 'Done at once',
      steps: [{ key: 's', type: 'trigger', config: { event_name: 'done.at.once' } }],
      connections: [],
    });
    await sendEvent('done.at.once', 'w5@dest.test');
    const [done] = await finished(instant.id, 1);
    const refused = await api('POST', `/v1/automations/${instant.id}/runs/${done.id}/cancel`);
    assert.equal(refused.status, 409, show(refused));
    assert.equal(refused.body.error.code, 'invalid_state');
  });

  it('definitions are validated when saved, every limit at, under and over it', async () => {
    const trigger = { key: 'start', type: 'trigger', config: { event_name: 'limits' } };
    const mail = { key: 'mail', type: 'send_email', config: { template: { id: templateId }, from: 'hello@shop.test' } };
    const refused = async (body: Record<string, unknown>, field: string, message?: RegExp) => {
      const res = await api('POST', '/v1/automations', { name: 'x', steps: [trigger], connections: [], ...body });
      assert.equal(res.status, 400, show(res));
      assert.equal(res.body.error.code, 'validation_error');
      assert.ok(res.body.error.message.startsWith(`${field}:`), show(res));
      if (message) assert.match(res.body.error.message, message);
    };
    const accepted = async (body: Record<string, unknown>) =>
      ok('POST', '/v1/automations', { name: 'x', steps: [trigger], connections: [], ...body }, 201);

    await accepted({ name: 'n'.repeat(200) });
    await refused({ name: 'n'.repeat(201) }, 'name');
    await refused({ name: '' }, 'name');

    // A chain of delays: at most 100 steps.
    const chain = (n: number) => ({
      steps: [
        trigger,
        ...Array.from({ length: n - 1 }, (_, i) => ({ key: `d${i}`, type: 'delay', config: { duration: '1 minute' } })),
      ],
      connections: Array.from({ length: n - 1 }, (_, i) => ({ from: i === 0 ? 'start' : `d${i - 1}`, to: `d${i}` })),
    });
    await accepted(chain(99));
    await accepted(chain(100));
    await refused(chain(101), 'steps', /at most 100 steps/);

    const delay = (duration: string) => ({
      steps: [trigger, { key: 'd', type: 'delay', config: { duration } }],
      connections: [{ from: 'start', to: 'd' }],
    });
    await accepted(delay('29 days 23 hours 59 minutes 59 seconds'));
    await accepted(delay('30 days'));
    await refused(delay('30 days 1 second'), 'steps[1].config.duration', /at most 30 days/);
    await refused(delay('0 seconds'), 'steps[1].config.duration', /at least 1 second/);
    await refused(delay('soon'), 'steps[1].config.duration');
    await accepted({
      steps: [trigger, { key: 'w', type: 'wait_for_event', config: { event_name: 'x', timeout: '30 days' } }],
      connections: [{ from: 'start', to: 'w' }],
    });
    await refused(
      {
        steps: [trigger, { key: 'w', type: 'wait_for_event', config: { event_name: 'x', timeout: '31 days' } }],
        connections: [{ from: 'start', to: 'w' }],
      },
      'steps[1].config.timeout',
    );

    await accepted({ steps: [{ ...trigger, key: 'k'.repeat(100) }] });
    await refused({ steps: [{ ...trigger, key: 'k'.repeat(101) }] }, 'steps[0].key');
    await accepted({ steps: [{ ...trigger, config: { event_name: 'e'.repeat(200) } }] });
    await refused({ steps: [{ ...trigger, config: { event_name: 'e'.repeat(201) } }] }, 'steps[0].config.event_name');

    await refused(
      { steps: [trigger, mail], connections: [{ from: 'start', to: 'nowhere' }] },
      'connections[0].to',
      /no step "nowhere"/,
    );
    await refused({ steps: [trigger, mail], connections: [] }, 'steps[1]', /cannot be reached/);
    await refused({ steps: [trigger, { ...trigger, key: 'again' }] }, 'steps', /exactly one/);
    await refused({ steps: [mail] }, 'steps', /needs one trigger/);
    const loop = (between: Record<string, unknown>) => ({
      steps: [trigger, mail, between],
      connections: [
        { from: 'start', to: 'mail' },
        { from: 'mail', to: 'b' },
        { from: 'b', to: 'mail' },
      ],
    });
    await refused(
      loop({ key: 'b', type: 'contact_update', config: { properties: { looped: true } } }),
      'connections',
      /loop mail -> b -> mail has no delay/,
    );
    await accepted(loop({ key: 'b', type: 'delay', config: { duration: '1 day' } }));
    const branch = {
      key: 'b',
      type: 'condition',
      config: { type: 'rule', field: 'event.plan', operator: 'eq', value: 'pro' },
    };
    await refused(
      {
        steps: [trigger, branch],
        connections: [
          { from: 'start', to: 'b' },
          { from: 'b', to: 'start', type: 'condition_met' },
        ],
      },
      'connections[1].to',
      /trigger/,
    );
    await refused(
      {
        steps: [trigger, branch, mail],
        connections: [
          { from: 'start', to: 'b' },
          { from: 'b', to: 'mail' },
        ],
      },
      'connections[1].type',
      /condition_met or condition_not_met/,
    );
    await refused(
      {
        steps: [trigger, { ...branch, config: { type: 'rule', field: 'plan', operator: 'eq', value: 'pro' } }],
        connections: [{ from: 'start', to: 'b' }],
      },
      'steps[1].config.field',
      /contact/,
    );
    await refused(
      {
        steps: [trigger, { ...branch, config: { type: 'rule', field: 'event.n', operator: 'gt', value: 'ten' } }],
        connections: [{ from: 'start', to: 'b' }],
      },
      'steps[1].config.value',
      /number/,
    );
    await refused({ steps: [trigger, { key: 'x', type: 'teleport', config: {} }], connections: [] }, 'steps[1].type');

    await refused(
      {
        steps: [trigger, { ...mail, config: { template: { id: '019a0000-0000-7000-8000-000000000000' } } }],
        connections: [{ from: 'start', to: 'mail' }],
      },
      'steps[1].config.template.id',
      /not found/,
    );
    await refused(
      {
        steps: [trigger, { ...mail, config: { ...mail.config, from: 'hello@elsewhere.test' } }],
        connections: [{ from: 'start', to: 'mail' }],
      },
      'steps[1].config.from',
      /not a domain of this workspace/,
    );
    await refused(
      {
        steps: [
          trigger,
          { key: 's', type: 'add_to_segment', config: { segment_id: '019a0000-0000-7000-8000-000000000000' } },
        ],
        connections: [{ from: 'start', to: 's' }],
      },
      'steps[1].config.segment_id',
      /not found/,
    );
    await refused(
      { steps: [{ ...trigger, config: { event_name: 'email.delivered' } }] },
      'steps[0].config.event_name',
      /cannot start/,
    );
    await accepted({ steps: [{ ...trigger, config: { event_name: 'email.clicked' } }] });

    const created = await accepted({});
    const patch = async (body: Record<string, unknown>) => api('PATCH', `/v1/automations/${created.id}`, body);
    assert.equal((await patch({ steps: [trigger] })).status, 400);
    assert.equal((await patch({ status: 'enabled' })).status, 200);
    const back = await patch({ status: 'draft' });
    assert.equal(back.status, 400, show(back));
    assert.equal((await patch({ status: 'paused' })).status, 400);
    const missing = await api('GET', '/v1/automations/019a0000-0000-7000-8000-000000000000');
    assert.equal(missing.status, 404, show(missing));
    assert.equal((await api('GET', `/v1/automations/${created.id}/runs?status=sleeping`)).status, 400);
    assert.equal((await api('GET', '/v1/automations?after=nope')).status, 400);
  });

  it('events are validated: one contact, a known contact id, a custom name, payload and name limits', async () => {
    const send = (body: Record<string, unknown>) => api('POST', '/v1/events/send', body);
    const expect = async (body: Record<string, unknown>, status: number, field?: string) => {
      const res = await send(body);
      assert.equal(res.status, status, show(res));
      if (field) assert.ok(res.body.error.message.startsWith(`${field}:`), show(res));
    };
    await expect({ event: 'e'.repeat(200), email: 'limits@dest.test' }, 202);
    await expect({ event: 'e'.repeat(201), email: 'limits@dest.test' }, 400, 'event');
    await expect({ event: 'bad name', email: 'limits@dest.test' }, 400, 'event');
    await expect({ event: 'subscriber.created', email: 'limits@dest.test' }, 400, 'event');
    await expect(
      { event: 'x', email: 'limits@dest.test', contact_id: '019a0000-0000-7000-8000-000000000000' },
      400,
      'contact_id',
    );
    await expect({ event: 'x' }, 400, 'contact_id');
    await expect({ event: 'x', email: 'not an address' }, 400, 'email');
    await expect({ event: 'x', contact_id: '019a0000-0000-7000-8000-000000000000' }, 404);
    await expect({ event: 'x', email: 'limits@dest.test', payload: [] }, 400, 'payload');
    // The payload's JSON at 32 KiB is taken; one byte more is not.
    const sized = (bytes: number) => ({ blob: 'p'.repeat(bytes - JSON.stringify({ blob: '' }).length) });
    assert.equal(JSON.stringify(sized(32 * 1024)).length, 32 * 1024);
    await expect({ event: 'x', email: 'limits@dest.test', payload: sized(32 * 1024 - 1) }, 202);
    await expect({ event: 'x', email: 'limits@dest.test', payload: sized(32 * 1024) }, 202);
    await expect({ event: 'x', email: 'limits@dest.test', payload: sized(32 * 1024 + 1) }, 400, 'payload');
  });

  it("serves the Resend SDK's automations and events calls: create, get, list, update, events.send, runs, duplicate, stop, remove", async () => {
    const resend = new Resend(key, { baseUrl: `${server.httpUrl}/v1` });
    const contact = await ok('POST', '/v1/subscribers', { email: 'sdk@dest.test', first_name: 'Sam' }, 201);
    const created = await resend.automations.create({
      name: 'SDK welcome',
      status: 'enabled',
      steps: [
        { key: 'start', type: 'trigger', config: { eventName: 'sdk.signed_up' } },
        {
          key: 'check',
          type: 'condition',
          config: { type: 'rule', field: 'event.plan', operator: 'eq', value: 'pro' },
        },
        {
          key: 'welcome',
          type: 'send_email',
          config: {
            template: { id: templateId, variables: { plan: { var: 'event.plan' } } },
            from: 'Shop <hello@shop.test>',
            replyTo: 'help@shop.test',
          },
        },
      ],
      connections: [
        { from: 'start', to: 'check', type: 'default' },
        { from: 'check', to: 'welcome', type: 'condition_met' },
      ],
    });
    assert.equal(created.error, null, JSON.stringify(created.error));
    assert.equal(created.data.object, 'automation');
    const id = created.data.id;

    const got = await resend.automations.get(id);
    assert.equal(got.error, null, JSON.stringify(got.error));
    assert.equal(got.data.status, 'enabled');
    assert.deepEqual(got.data.steps[0], { key: 'start', type: 'trigger', config: { event_name: 'sdk.signed_up' } });
    assert.deepEqual(got.data.steps[2]!.config, {
      template: { id: templateId, variables: { plan: { var: 'event.plan' } } },
      from: 'Shop <hello@shop.test>',
      reply_to: 'help@shop.test',
    });
    assert.deepEqual(got.data.connections[1], { from: 'check', to: 'welcome', type: 'condition_met' });

    const listed = await resend.automations.list({ status: 'enabled', limit: 100 });
    assert.equal(listed.error, null, JSON.stringify(listed.error));
    assert.equal(listed.data.object, 'list');
    assert.equal(listed.data.data[0]!.id, id, 'newest first');
    assert.ok(listed.data.data.every((a) => a.status === 'enabled'));
    assert.equal((await resend.automations.update(id, { name: 'SDK welcome (renamed)' })).data!.id, id);

    const byId = await resend.events.send({ event: 'sdk.signed_up', contactId: contact.id, payload: { plan: 'pro' } });
    assert.equal(byId.error, null, JSON.stringify(byId.error));
    assert.deepEqual({ object: byId.data.object, event: byId.data.event }, { object: 'event', event: 'sdk.signed_up' });
    const byEmail = await resend.events.send({
      event: 'sdk.signed_up',
      email: 'sdk-free@dest.test',
      payload: { plan: 'free' },
    });
    assert.equal(byEmail.error, null, JSON.stringify(byEmail.error));

    await finished(id, 2);
    const completed = await resend.automations.runs.list({ automationId: id, status: 'completed' });
    assert.equal(completed.error, null, JSON.stringify(completed.error));
    assert.equal(completed.data.data.length, 2);
    const pro = completed.data.data.find((r) => (r as any).email === 'sdk@dest.test')!;
    const run = await resend.automations.runs.get({ automationId: id, runId: pro.id });
    assert.equal(run.error, null, JSON.stringify(run.error));
    assert.equal(run.data.object, 'automation_run');
    assert.deepEqual(
      run.data.steps.map((s) => [s.key, s.type, s.status]),
      [
        ['start', 'trigger', 'completed'],
        ['check', 'condition', 'completed'],
        ['welcome', 'send_email', 'completed'],
      ],
    );
    await eventually(async () => mailTo('sdk@dest.test').length === 1, 120_000, 'the email');
    assert.match(mailTo('sdk@dest.test')[0]!.raw.toString(), /^Reply-To: help@shop.test/m);
    assert.equal(mailTo('sdk-free@dest.test').length, 0, 'the condition was not met: no email');
    // The contact the email-addressed event named was created for its run.
    assert.equal((await ok('GET', '/v1/subscribers?email=sdk-free@dest.test', undefined, 200)).subscribers.length, 1);

    const copy = await resend.automations.duplicate(id);
    assert.equal(copy.error, null, JSON.stringify(copy.error));
    assert.notEqual(copy.data.id, id);
    const stopped = await resend.automations.stop(id);
    assert.equal(stopped.error, null, JSON.stringify(stopped.error));
    assert.equal(stopped.data.status, 'disabled');
    const removed = await resend.automations.remove(copy.data.id);
    assert.deepEqual(removed.data, { object: 'automation', id: copy.data.id, deleted: true });
    assert.notEqual((await resend.automations.get(copy.data.id)).error, null);
  });

  it('a send refused for a while (the marketing rate limit) is retried until it goes through', async () => {
    // A workspace of its own whose marketing limit is one a second.
    const ws = await server.runtime.services.workspaces.create('throttled');
    await server.runtime.services.workspaces.setPlan(ws.id, 'enterprise', { marketingPerSecond: 1 });
    const wsKey = await server.key({ workspaceId: ws.id });
    await addVerifiedDomain(server, dns, 'slow.test', ws.id);
    const call = async (method: string, path: string, body: unknown, status: number) => {
      const res = await request(server.httpUrl, method, path, { key: wsKey, body });
      assert.equal(res.status, status, show(res));
      return res.body;
    };
    const tpl = await call('POST', '/v1/templates', { name: 'T', subject: 'Throttled', html: '<p>x</p>' }, 201);
    const workflow = await call(
      'POST',
      '/v1/automations',
      {
        name: 'Burst',
        status: 'enabled',
        steps: [
          { key: 'start', type: 'trigger', config: { event_name: 'burst' } },
          { key: 'mail', type: 'send_email', config: { template: { id: tpl.id }, from: 'hi@slow.test' } },
        ],
        connections: [{ from: 'start', to: 'mail' }],
      },
      201,
    );
    for (let i = 0; i < 3; i++)
      await call('POST', '/v1/events/send', { event: 'burst', email: `burst${i}@dest.test` }, 202);
    const runs = await eventually(
      async () => {
        const list = (await call('GET', `/v1/automations/${workflow.id}/runs`, undefined, 200)).data as any[];
        return list.length === 3 && list.every((r) => r.status === 'completed') ? list : undefined;
      },
      30_000,
      'every run completed',
    );
    const steps = await Promise.all(
      runs.map(
        async (r) => (await call('GET', `/v1/automations/${workflow.id}/runs/${r.id}`, undefined, 200)).steps[1],
      ),
    );
    assert.ok(steps.every((s) => s.status === 'completed' && s.output.email_id));
    const retried = steps.filter((s) => s.attempts > 1);
    assert.ok(retried.length >= 1, 'at least one send waited for the limit');
    assert.ok(
      retried.every((s) => s.error.code === 'rate_limited'),
      'the failure it recovered from is kept',
    );
    assert.equal(new Set(steps.map((s) => s.output.email_id)).size, 3);
  });

  it('a step that fails for good fails its run, with workflow.failed', async () => {
    const doomed = await template('Doomed', 'Soon gone', '<p>x</p>');
    const workflow = await create({
      name: 'Fragile',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'fragile' } },
        { key: 'mail', type: 'send_email', config: { template: { id: doomed }, from: 'hello@shop.test' } },
      ],
      connections: [{ from: 'start', to: 'mail' }],
    });
    // Removed after the workflow was saved: the send cannot succeed, now or on a retry.
    await ok('DELETE', `/v1/templates/${doomed}`, undefined, 200);
    await sendEvent('fragile', 'fragile@dest.test');
    const [run] = await finished(workflow.id, 1);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /step "mail" failed: .*not found/);
    const detail = await runOf(workflow.id, run.id);
    assert.equal(detail.steps[1].status, 'failed');
    assert.equal(detail.steps[1].error.code, 'not_found');
    const [hook] = await receiver.waitFor(
      1,
      (r) => r.json?.type === 'workflow.failed' && r.json.data.run_id === run.id,
    );
    const failed = new Webhook(secret).verify(hook!.body, hook!.headers as Record<string, string>) as { data: any };
    assert.equal(failed.data.status, 'failed');
    assert.equal(failed.data.error, run.error);
    assert.equal(failed.data.workflow_name, 'Fragile');
  });

  it('retention removes finished runs with their steps after retention.days, never running ones', async () => {
    const db = server.runtime.store.db;
    const slow = await create({
      name: 'Slow',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'slow.start' } },
        { key: 'pause', type: 'delay', config: { duration: '30 days' } },
      ],
      connections: [{ from: 'start', to: 'pause' }],
    });
    await sendEvent('slow.start', 'patient@dest.test');
    await eventually(
      async () => (await runsOf(slow.id))[0]?.current_step === 'pause',
      120_000,
      'a run waiting 30 days',
    );
    const quick = await create({
      name: 'Quick',
      steps: [{ key: 'start', type: 'trigger', config: { event_name: 'quick.start' } }],
      connections: [],
    });
    await sendEvent('quick.start', 'patient@dest.test');
    await finished(quick.id, 1);
    const finishedBefore = await db.selectFrom('workflow_runs').select('id').where('status', '!=', 'running').execute();
    const running = await db.selectFrom('workflow_runs').select('id').where('status', '=', 'running').execute();
    assert.ok(finishedBefore.length > 0 && running.length > 0);
    const later = { now: () => Date.now() + (server.config.retention.days + 1) * 86_400_000 };
    const all = (await db.selectFrom('workflow_runs').select('id').execute()).length;
    const report = await runRetention({ db, clock: later, config: server.config });
    const left = await db.selectFrom('workflow_runs').select('status').execute();
    // Every finished run went, every running one stayed. (A run of an earlier test may finish
    // between the counts above and the clean-up: it goes too, so the counts are read around it.)
    assert.ok(left.length > 0 && left.every((r) => r.status === 'running'), JSON.stringify(left));
    assert.equal(report.workflowRuns, all - left.length);
    assert.ok(report.workflowRuns >= finishedBefore.length && left.length <= running.length);
    const orphans = await db
      .selectFrom('workflow_run_steps')
      .select('id')
      .where(
        'run_id',
        'in',
        finishedBefore.map((r) => r.id),
      )
      .execute();
    assert.equal(orphans.length, 0, 'their steps went with them');
  });
});

describe('workflows on an injected clock', () => {
  it('a delay of three days waits on the clock, not on the wall, and costs a row while it waits', async () => {
    const dns = await startDnsServer();
    const mx = await startMxServer();
    routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    const clock = manualClock();
    const server = await startTestServer(
      {
        delivery: { dnsServers: [dns.server], port: mx.port, pollInterval: 50, mtaSts: false, signingThreads: 0 },
        workflows: { pollInterval: 50 },
      },
      { clock },
    );
    try {
      const key = await server.key();
      await addVerifiedDomain(server, dns, 'shop.test');
      const call = async (method: string, path: string, body: unknown, status: number) => {
        const res = await request(server.httpUrl, method, path, { key, body });
        assert.equal(res.status, status, show(res));
        return res.body;
      };
      const tpl = await call(
        'POST',
        '/v1/templates',
        { name: 'Later', subject: 'Three days later', html: '<p>hi</p>' },
        201,
      );
      const workflow = await call(
        'POST',
        '/v1/automations',
        {
          name: 'Slow drip',
          status: 'enabled',
          steps: [
            { key: 'start', type: 'trigger', config: { event_name: 'trial.started' } },
            { key: 'wait', type: 'delay', config: { duration: '3 days' } },
            { key: 'mail', type: 'send_email', config: { template: { id: tpl.id }, from: 'hello@shop.test' } },
          ],
          connections: [
            { from: 'start', to: 'wait' },
            { from: 'wait', to: 'mail' },
          ],
        },
        201,
      );
      await call('POST', '/v1/events/send', { event: 'trial.started', email: 'trial@dest.test' }, 202);
      const run = await eventually(
        async () => {
          const runs = (await call('GET', `/v1/automations/${workflow.id}/runs`, undefined, 200)).data;
          return runs[0]?.current_step === 'wait' ? runs[0] : undefined;
        },
        10_000,
        'the run at the delay',
      );
      assert.equal(Date.parse(run.next_at), clock.now() + 3 * 86_400_000);
      const row = await server.runtime.store.db
        .selectFrom('workflow_runs')
        .select(['lease_owner', 'next_at'])
        .where('id', '=', run.id)
        .executeTakeFirstOrThrow();
      assert.equal(row.lease_owner, null, 'nothing holds the run while it waits');

      clock.advance(3 * 86_400_000 - 1000);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(mx.messages.length, 0, 'a second early: still waiting');
      clock.advance(1000);
      await mx.waitFor(1, 15_000);
      assert.match(mx.messages[0]!.raw.toString(), /^Subject: Three days later/m);
      await eventually(
        async () =>
          (await call('GET', `/v1/automations/${workflow.id}/runs/${run.id}`, undefined, 200)).status === 'completed',
        120_000,
        'the run completed',
      );
    } finally {
      await server.close();
      await mx.close();
      await dns.close();
    }
  });
});

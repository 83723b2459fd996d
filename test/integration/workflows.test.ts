import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { routeDomain, eventually } from '../helpers/delivery.js';
import { startDnsServer, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { request, show } from '../helpers/http.js';
import { startMxServer, type ReceivedMessage, type TestMx } from '../helpers/mx-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Workflows end to end on a real server: events through the API start runs, steps wait,
 * branch and send through the loopback MX, and workflow.* webhooks arrive signed.
 */
describe('workflows', () => {
  let server: TestServer;
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
  const template = async (name: string, subject: string, html: string): Promise<string> => (await ok('POST', '/v1/templates', { name, subject, html }, 201)).id;
  const create = (body: Record<string, unknown>) => ok('POST', '/v1/automations', { status: 'enabled', ...body }, 201);
  const sendEvent = (event: string, email: string, payload: Record<string, unknown> = {}) => ok('POST', '/v1/events/send', { event, email, payload }, 202);
  const runsOf = async (workflowId: string) => (await ok('GET', `/v1/automations/${workflowId}/runs`, undefined, 200)).data as any[];
  const runOf = (workflowId: string, runId: string) => ok('GET', `/v1/automations/${workflowId}/runs/${runId}`, undefined, 200);
  const finished = (workflowId: string, count: number) =>
    eventually(async () => {
      const runs = await runsOf(workflowId);
      return runs.length >= count && runs.every((r) => r.status !== 'running') ? runs : undefined;
    }, 30_000, `${count} finished run(s)`);
  const mailTo = (address: string) => mx.messages.filter((m) => m.to.includes(address));
  const subjectOf = (m: ReceivedMessage) => /^Subject: (.*)$/m.exec(m.raw.toString())?.[1];

  before(async () => {
    dns = await startDnsServer();
    mx = await startMxServer();
    routeDomain(dns, 'dest.test', [{ name: 'mx.dest.test', preference: 10, a: ['127.0.0.1'] }]);
    receiver = await startWebhookReceiver();
    server = await startTestServer({
      delivery: { dnsServers: [dns.server], port: mx.port, pollInterval: 50, mtaSts: false, signingThreads: 0 },
      webhooks: { allowPrivateNetworks: true, pollInterval: 20 },
      workflows: { pollInterval: 50 },
    });
    key = await server.key();
    await addVerifiedDomain(server, dns, 'shop.test');
    const hook = await ok('POST', '/v1/webhooks', { url: `${receiver.url}/hooks`, events: ['workflow.started', 'workflow.completed', 'workflow.failed', 'email.delivered'] }, 201);
    secret = hook.secret;
    templateId = await template('Welcome', 'Welcome, {{contact.first_name}}', '<p>Your plan: {{plan}}</p><p><a href="{{unsubscribe_url}}">Unsubscribe</a></p>');
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
    await mx?.close();
    await dns?.close();
  });

  it('an event sent through the API starts a run; the delay waits, then the email arrives at the MX; workflow.started and workflow.completed arrive signed', async () => {
    await ok('POST', '/v1/subscribers', { email: 'ada@dest.test', first_name: 'Ada' }, 201);
    const workflow = await create({
      name: 'Welcome series',
      steps: [
        { key: 'start', type: 'trigger', config: { event_name: 'user.signed_up' } },
        { key: 'wait', type: 'delay', config: { duration: '2 seconds' } },
        { key: 'welcome', type: 'send_email', config: { template: { id: templateId, variables: { plan: { var: 'event.plan' } } }, from: 'Shop <hello@shop.test>' } },
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

    const [run] = await eventually(async () => {
      const runs = await runsOf(workflow.id);
      return runs.length === 1 && runs[0].current_step === 'wait' ? runs : undefined;
    }, 10_000, 'the run to wait at the delay');
    assert.equal(run.status, 'running');
    assert.ok(run.next_at, 'a waiting run says when it continues');
    const waiting = await runOf(workflow.id, run.id);
    assert.deepEqual(waiting.steps.map((s: any) => [s.key, s.status]), [['start', 'completed'], ['wait', 'waiting']]);
    assert.equal(mailTo('ada@dest.test').length, 0, 'nothing is sent during the delay');

    const [done] = await finished(workflow.id, 1);
    assert.equal(done.status, 'completed');
    const detail = await runOf(workflow.id, run.id);
    assert.deepEqual(detail.steps.map((s: any) => [s.key, s.type, s.status]), [['start', 'trigger', 'completed'], ['wait', 'delay', 'completed'], ['welcome', 'send_email', 'completed']]);
    const emailId = detail.steps[2].output.email_id;
    assert.ok(emailId);
    // The delay lasted (at least) its duration.
    assert.ok(Date.parse(detail.steps[1].completed_at) - Date.parse(detail.steps[1].started_at) >= 2000);

    await eventually(async () => mailTo('ada@dest.test').length === 1, 15_000, 'the email at the MX');
    const [message] = mailTo('ada@dest.test');
    const raw = message!.raw.toString();
    assert.equal(subjectOf(message!), 'Welcome, Ada');
    assert.match(raw, /Your plan: pro/);
    assert.match(raw, /^List-Unsubscribe-Post: List-Unsubscribe=One-Click/m, 'one-click unsubscribe');

    const email = await ok('GET', `/v1/emails/${emailId}`, undefined, 200);
    assert.equal(email.metadata.workflow_id, workflow.id);
    assert.equal(email.metadata.workflow_run_id, run.id);

    const hooks = await receiver.waitFor(3, (r) => ['workflow.started', 'workflow.completed'].includes(r.json?.type) || (r.json?.type === 'email.delivered' && r.json.data.email_id === emailId));
    const verified = hooks.map((h) => new Webhook(secret).verify(h.body, h.headers as Record<string, string>) as { type: string; data: any });
    const started = verified.find((v) => v.type === 'workflow.started')!;
    const completed = verified.find((v) => v.type === 'workflow.completed')!;
    assert.deepEqual(
      { workflow_id: started.data.workflow_id, run_id: started.data.run_id, status: started.data.status, email: started.data.email, trigger_event: started.data.trigger_event },
      { workflow_id: workflow.id, run_id: run.id, status: 'running', email: 'ada@dest.test', trigger_event: 'user.signed_up' },
    );
    assert.equal(completed.data.status, 'completed');
    assert.equal(completed.data.run_id, run.id);
    assert.ok(completed.data.completed_at);
  });
});

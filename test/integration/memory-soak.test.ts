import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import nodemailer from 'nodemailer';
import { allArrived, eventually } from '../helpers/delivery.js';
import { request, show } from '../helpers/http.js';
import { memoryCgroup, type MemoryCgroup } from '../helpers/memory-cgroup.js';
import { startServeRig, type ServeRig } from '../helpers/serve-rig.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import type { Served } from '../helpers/cli.js';

/**
 * Issue 34: `mailsvc serve` on its shipped defaults (the launcher's V8 options, its own thread
 * sizes) inside a 512 MB memory limit the kernel enforces (a cgroup), under mixed load for
 * SOAK_SECONDS: small messages by HTTP and by SMTP with connection reuse, messages with 7 MB of
 * attachments on several HTTP connections at once and at the SMTP size limit, and every event
 * posted to a webhook endpoint that always fails (so the outbox and its retries grow all
 * along). Nothing accepted is lost (every message reaches the MX, every event keeps its
 * webhook delivery), and the kernel never kills it.
 */
const LIMIT = 512 * 1024 * 1024;
const SOAK_SECONDS = Number(process.env.MAILSVC_SOAK_SECONDS ?? 75);
const MB = 1024 * 1024;

const cgroup = memoryCgroup(`mailsvc-soak-${process.pid}`, LIMIT);

describe('soak inside a 512 MB memory limit', { skip: typeof cgroup === 'string' ? `no kernel memory limit here: ${cgroup}` : false }, () => {
  const group = cgroup as MemoryCgroup;
  let rig: ServeRig;
  let hooks: WebhookReceiver;
  let node: Served;

  before(async () => {
    hooks = await startWebhookReceiver();
    // Every webhook fails: retries pile up beside the mail.
    hooks.reply(() => ({ status: 500, body: 'down' }));
    rig = await startServeRig({
      name: 'soak',
      deliver: {},
      env: {
        MAILSVC_SMTP_SUBMISSION_ENABLED: 'true',
        MAILSVC_SMTP_SUBMISSION_PORT: '0',
        MAILSVC_SMTP_SUBMISSION_IMPLICIT_TLS: 'false',
        MAILSVC_WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
        MAILSVC_WEBHOOKS_SCHEDULE: '[1]',
        MAILSVC_DELIVERY_DEFAULT_DOMAIN_LIMIT: JSON.stringify({ concurrency: 20, perMinute: 10_000_000 }),
      },
    });
    await rig.runtime.services.workspaces.setPlan(rig.workspaceId, 'enterprise', { transactionalPerSecond: 100_000, marketingPerSecond: 100_000 });
    // Into the group as it starts, before the program has loaded.
    node = await rig.serve('main', {}, (child) => group.add(child.pid!));
    const hook = await request(node.url, 'POST', '/v1/webhooks', { key: rig.key, body: { url: `${hooks.url}/soak`, events: ['email.sent', 'email.delivered'] } });
    assert.equal(hook.status, 201, show(hook));
  });
  after(async () => {
    await rig?.close();
    await hooks?.close();
    group.remove();
  });

  it(`mixed HTTP and SMTP load with failing webhooks for ${SOAK_SECONDS} s: nothing lost, no OOM kill`, { timeout: (SOAK_SECONDS + 150) * 1000 }, async (t) => {
    const accepted: string[] = [];
    const until = Date.now() + SOAK_SECONDS * 1000;
    const sender = 'sender.test';

    const http = async (lane: number) => {
      for (let i = 0; Date.now() < until; i++) {
        const res = await request(node.url, 'POST', '/v1/emails', { key: rig.key, body: { from: `Shop <shop@${sender}>`, to: `h${lane}-${i}@dest.test`, subject: `Order ${lane}-${i}`, html: '<p>Thank you for your order.</p>'.repeat(40) } });
        assert.equal(res.status, 200, show(res));
        accepted.push(`<${res.body.id}@${sender}>`);
      }
    };
    const smtp = async (lane: number) => {
      const transport = nodemailer.createTransport({ pool: true, maxConnections: 1, maxMessages: Infinity, host: '127.0.0.1', port: node.smtpPort, requireTLS: true, auth: { user: 'apikey', pass: rig.key }, tls: { rejectUnauthorized: false } });
      try {
        for (let i = 0; Date.now() < until; i++) {
          const messageId = `<soak-${lane}-${i}@${sender}>`;
          await transport.sendMail({ from: `shop@${sender}`, to: `s${lane}-${i}@dest.test`, subject: `Receipt ${lane}-${i}`, messageId, text: 'Your receipt.\n'.repeat(120) });
          accepted.push(messageId);
        }
      } finally {
        transport.close();
      }
    };
    // At the limits, several at once, every 15 s: 7 MB of attachments by HTTP on 6 connections, 2 messages of 20 MB by SMTP.
    const five = randomBytes(5 * MB).toString('base64');
    const two = randomBytes(2 * MB).toString('base64');
    const big = async () => {
      for (let round = 0; Date.now() < until; round++) {
        const sent = await Promise.all([
          ...[0, 1, 2, 3, 4, 5].map(async (i) => {
            const res = await request(node.url, 'POST', '/v1/emails', {
              key: rig.key,
              body: { from: `shop@${sender}`, to: `big${round}-${i}@dest.test`, subject: `Big ${round}-${i}`, html: '<p>Files</p>', attachments: [{ filename: 'a.bin', content: five }, { filename: 'b.bin', content: two }] },
            });
            assert.equal(res.status, 200, show(res));
            return `<${res.body.id}@${sender}>`;
          }),
          ...[0, 1].map(async (i) => {
            const messageId = `<big-smtp-${round}-${i}@${sender}>`;
            const transport = nodemailer.createTransport({ host: '127.0.0.1', port: node.smtpPort, requireTLS: true, auth: { user: 'apikey', pass: rig.key }, tls: { rejectUnauthorized: false } });
            await transport.sendMail({ from: `shop@${sender}`, to: `bigs${round}-${i}@dest.test`, subject: `Big SMTP ${round}-${i}`, messageId, attachments: [{ filename: 'c.bin', content: randomBytes(15 * MB) }] });
            return messageId;
          }),
        ]);
        accepted.push(...sent);
        await new Promise((r) => setTimeout(r, 15_000));
      }
    };
    await Promise.all([...[0, 1, 2, 3, 4, 5, 6, 7].map(http), ...[0, 1, 2, 3].map(smtp), big()]);

    await allArrived(rig.mx, accepted, 180_000);
    assert.ok(node.alive(), `the server is running: ${node.output().slice(-1000)}`);
    assert.equal(group.oomKills(), 0, 'the kernel killed nothing in the group');
    // Every delivery's events are in the outbox, failing and retried, none dropped.
    const db = rig.runtime.store.db;
    const events = await eventually(async () => {
      const e = await db.selectFrom('events').select((eb) => eb.fn.countAll<number>().as('n')).where('type', 'in', ['email.sent', 'email.delivered']).executeTakeFirstOrThrow();
      return Number(e.n) >= 2 * accepted.length ? Number(e.n) : undefined;
    }, 60_000, 'the events of every delivery');
    const outbox = await db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    assert.equal(Number(outbox.n), events, 'a webhook delivery for each event');
    const succeeded = await db.selectFrom('webhook_deliveries').select('id').where('status', '=', 'succeeded').execute();
    assert.equal(succeeded.length, 0);
    assert.ok(hooks.received.length > 0, 'the endpoint was tried');
    t.diagnostic(`${accepted.length} messages accepted and delivered in ${SOAK_SECONDS} s; ${events} events, ${hooks.received.length} failed webhook attempts; cgroup v${group.version} peak ${((group.peak() ?? 0) / MB).toFixed(0)} MB of ${LIMIT / MB}`);
    assert.equal(await node.stop(), 0, 'a clean stop');
  });
});

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { request } from '../helpers/http.js';

const MJML =
  '<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{name}}</mj-text><mj-image src="https://cdn.example/a.png"></mj-image></mj-column></mj-section></mj-body></mjml>';

/**
 * POST /v1/templates/generate against a real HTTP server on loopback speaking the OpenAI
 * chat-completions protocol (the operator's model, configured as inboxes.agent), answering
 * what the test sets.
 */
describe('generating a template with the configured model', () => {
  let model: Server;
  let answer: string;
  let asked: Array<{ model: string; messages: Array<{ role: string; content: string }> }> = [];
  let server: TestServer;
  let bare: TestServer;
  let key: string;

  before(async () => {
    model = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        asked.push(JSON.parse(body));
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: answer } }] }));
      });
    });
    await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1/chat/completions`;
    server = await startTestServer({ inboxes: { agent: { url, model: 'studio-model', allowPrivateNetworks: true } } });
    bare = await startTestServer();
    key = await server.key();
  });
  after(async () => {
    await server?.close();
    await bare?.close();
    await new Promise<void>((resolve) => model?.close(() => resolve()));
  });

  it("saves the model's MJML as a checked draft; nothing is published", async () => {
    answer = JSON.stringify({
      name: 'Welcome',
      subject: 'Welcome {{name}}',
      mjml: MJML,
      variables: [{ key: 'name', type: 'string', fallback_value: 'there', sample_value: 'Ada' }],
    });
    asked = [];
    const res = await request(server.httpUrl, 'POST', '/v1/templates/generate', {
      key,
      body: { description: 'A welcome email for new customers of a bakery' },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(asked.length, 1);
    assert.equal(asked[0]!.model, 'studio-model');
    assert.equal(asked[0]!.messages[1]!.content, 'A welcome email for new customers of a bakery');
    assert.equal(res.body.template.language, 'mjml');
    assert.equal(res.body.template.status, 'draft');
    assert.match(res.body.template.html, /Hi \{\{name\}\}/);
    assert.equal(res.body.check.object, 'template_check');
    assert.equal(res.body.check.template_id, res.body.template.id);
    assert.ok(Array.isArray(res.body.check.findings));
  });

  it('an answer that is not a valid template is a retryable 503 and saves nothing; no model is a 409', async () => {
    const before = (await request(server.httpUrl, 'GET', '/v1/templates', { key })).body.data.length;
    for (const bad of [
      'not json',
      JSON.stringify({ subject: 's' }),
      JSON.stringify({ subject: 's', mjml: '<mjml><mj-body><mj-text>x</mj-text></mj-body></mjml>' }),
    ]) {
      answer = bad;
      const res = await request(server.httpUrl, 'POST', '/v1/templates/generate', { key, body: { description: 'x' } });
      assert.equal(res.status, 503, bad);
      assert.equal(res.body.error.retryable, true);
    }
    assert.equal((await request(server.httpUrl, 'GET', '/v1/templates', { key })).body.data.length, before);
    const none = await request(bare.httpUrl, 'POST', '/v1/templates/generate', {
      key: await bare.key(),
      body: { description: 'x' },
    });
    assert.equal(none.status, 409);
    assert.match(none.body.error.message, /inboxes\.agent\.url/);
    const empty = await request(server.httpUrl, 'POST', '/v1/templates/generate', { key, body: { description: '' } });
    assert.equal(empty.status, 400);
  });
});

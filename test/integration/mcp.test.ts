import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { manualClock, startTestServer, type TestServer } from '../helpers/server.js';
import { call, mcpClient } from '../helpers/mcp.js';
import { request } from '../helpers/http.js';
import { MAX_SESSIONS_PER_KEY } from '../../src/intake/mcp/http-endpoint.js';
import { mcpTools } from '../../src/intake/mcp/tools/index.js';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};
const MCP_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

/** A raw request to /mcp, for what the SDK's client never sends (no key, a foreign Origin, a huge body). */
const post = (server: TestServer, headers: Record<string, string>, body: unknown = INIT) =>
  fetch(`${server.httpUrl}/mcp`, {
    method: 'POST',
    headers: { ...MCP_HEADERS, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('MCP over Streamable HTTP (the SDK client against a real server)', () => {
  let server: TestServer;
  let key: string;
  let client: Client;

  before(async () => {
    server = await startTestServer({ http: { bodyLimit: 64 * 1024 } });
    key = await server.key();
    client = await mcpClient(server, key);
  });
  after(async () => {
    await client?.close();
    await server?.close();
  });

  it('lists every tool of the registry with its JSON Schema, title and annotations', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      mcpTools.map((t) => t.name),
    );
    const create = tools.find((t) => t.name === 'templates_create')!;
    assert.equal(create.title, 'Create a template');
    assert.deepEqual(create.inputSchema.required, ['name']);
    assert.ok(create.inputSchema.properties?.mjml, 'MJML or HTML');
    assert.ok(create.inputSchema.properties?.idempotency_key, 'a creating tool takes an idempotency key');
    const remove = tools.find((t) => t.name === 'domains_remove')!;
    assert.equal(remove.annotations?.destructiveHint, true);
    assert.equal(tools.find((t) => t.name === 'emails_list')!.annotations?.readOnlyHint, true);
  });

  it('creates a template through a tool and REST sees the same template', async () => {
    const created = await call(client, 'templates_create', {
      name: 'Welcome',
      subject: 'Hi {{name}}',
      html: '<p>Hello {{name}}</p>',
      variables: [{ key: 'name', type: 'string', fallback_value: 'friend' }],
    });
    assert.equal(created.isError, undefined, JSON.stringify(created.content));
    const id = created.structuredContent.id as string;
    assert.match((created.content[0] as { text: string }).text, new RegExp(id));
    const rest = await request(server.httpUrl, 'GET', `/v1/templates/${id}`, { key });
    assert.equal(rest.status, 200);
    assert.equal(rest.body.html, '<p>Hello {{name}}</p>');
    const updated = await call(client, 'templates_update', { id, subject: 'Welcome, {{name}}' });
    assert.equal(updated.structuredContent.subject, 'Welcome, {{name}}');
    const published = await call(client, 'templates_publish', { id });
    assert.equal(published.structuredContent.status, 'published');
    const listed = await call(client, 'templates_list', { limit: 1 });
    assert.equal(listed.structuredContent.templates[0].id, id);
    const got = await call(client, 'templates_get', { id });
    assert.equal(got.structuredContent.name, 'Welcome');
  });

  it('arguments that fail the schema are a tool error naming the field, not a protocol error', async () => {
    const bad = await call(client, 'templates_create', { name: 'x' });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent.error.code, 'validation_error');
    assert.equal(bad.structuredContent.error.field, 'html');
    const wrongType = await call(client, 'templates_list', { limit: 'ten' });
    assert.equal(wrongType.structuredContent.error.code, 'validation_error');
    // A service's refusal comes the same way, with the catalog's code.
    const missing = await call(client, 'templates_get', { id: 'no-such-alias' });
    assert.equal(missing.isError, true);
    assert.equal(missing.structuredContent.error.code, 'not_found');
    assert.match((missing.content[0] as { text: string }).text, /^not_found: Template no-such-alias not found$/);
    // An unknown tool is the client's protocol mistake.
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /not found/);
  });

  it('contacts, segments and topics: create, update, list', async () => {
    const segment = await call(client, 'segments_create', { name: 'Beta' });
    const segmentId = segment.structuredContent.id as string;
    const contact = await call(client, 'contacts_create', {
      email: 'ada@example.org',
      first_name: 'Ada',
      segment_ids: [segmentId],
    });
    assert.equal(contact.isError, undefined, JSON.stringify(contact.content));
    const updated = await call(client, 'contacts_update', { id: 'ada@example.org', unsubscribed: true });
    assert.equal(updated.structuredContent.status, 'unsubscribed');
    const listed = await call(client, 'contacts_list', { status: 'unsubscribed' });
    assert.equal(listed.structuredContent.total, 1);
    const renamed = await call(client, 'segments_update', { id: segmentId, name: 'Beta testers' });
    assert.equal(renamed.structuredContent.name, 'Beta testers');
    assert.equal(renamed.structuredContent.member_count, 1);
    assert.equal((await call(client, 'segments_list')).structuredContent.segments.length, 1);
    const unknownSegment = await call(client, 'contacts_create', {
      email: 'bob@example.org',
      segment_ids: ['0190d0c0-0000-7000-8000-000000000000'],
    });
    assert.equal(unknownSegment.structuredContent.error.code, 'not_found');
    const topic = await call(client, 'topics_create', { name: 'Product news', default_subscription: 'opt_out' });
    const topicId = topic.structuredContent.id as string;
    assert.equal(
      (await call(client, 'topics_update', { id: topicId, description: 'Monthly' })).structuredContent.description,
      'Monthly',
    );
    assert.equal((await call(client, 'topics_list')).structuredContent.topics.length, 1);
  });

  it("a test key's send is simulated; the email and its events are read back; a replayed idempotency key sends once", async () => {
    await server.runtime.services.domains.add(server.workspaceId, { domain: 'acme.example' });
    const testClient = await mcpClient(server, await server.key({ test: true }));
    try {
      const args = {
        from: 'hello@acme.example',
        to: 'a@example.org',
        subject: 'Hi',
        html: '<p>Hi</p>',
        idempotency_key: 'send-1',
      };
      const sent = await call(testClient, 'emails_send', args);
      assert.equal(sent.isError, undefined, JSON.stringify(sent.content));
      const again = await call(testClient, 'emails_send', args);
      assert.equal(again.structuredContent.id, sent.structuredContent.id);
      const changed = await call(testClient, 'emails_send', { ...args, subject: 'Other' });
      assert.equal(changed.structuredContent.error.code, 'invalid_idempotent_request');
      const got = await call(testClient, 'emails_get', { id: sent.structuredContent.id });
      assert.equal(got.structuredContent.test, true);
      assert.ok(Array.isArray(got.structuredContent.events));
      const listed = await call(testClient, 'emails_list', { to: 'a@example.org' });
      assert.equal(listed.structuredContent.data.length, 1);
      // A live key may not send from an unverified domain: the send service's answer, as on /v1.
      const live = await call(client, 'emails_send', {
        from: 'hello@acme.example',
        to: 'a@example.org',
        subject: 'Hi',
        html: 'h',
      });
      assert.equal(live.structuredContent.error.code, 'forbidden');
    } finally {
      await testClient.close();
    }
  });

  it("domains: list, records, check; a sending-only key gets the catalog's forbidden code", async () => {
    const listed = await call(client, 'domains_list');
    assert.equal(listed.structuredContent.domains[0].domain_name, 'acme.example');
    const records = await call(client, 'domains_records', { domain: 'acme.example' });
    assert.ok(records.structuredContent.dkim.length > 0);
    const sending = await server.runtime.services.credentials.createKey({
      name: 'sending',
      workspaceId: server.workspaceId,
      permission: 'sending_access',
    });
    const sendingClient = await mcpClient(server, sending.secret);
    try {
      const refused = await call(sendingClient, 'domains_remove', { domain: 'acme.example' });
      assert.equal(refused.isError, true);
      assert.equal(refused.structuredContent.error.code, 'forbidden');
      assert.match(refused.structuredContent.error.message, /lacks the scope domains:write/);
      assert.equal((await call(sendingClient, 'templates_list')).structuredContent.error.code, 'forbidden');
    } finally {
      await sendingClient.close();
    }
    assert.equal((await call(client, 'domains_list')).structuredContent.domains.length, 1, 'nothing was removed');
  });

  it('every tool call is in the request logs (GET /v1/logs)', async () => {
    const logs = await request(server.httpUrl, 'GET', '/v1/logs?limit=100', { key });
    const endpoints = (logs.body.data as Array<{ endpoint: string; method: string; response_status: number }>).filter(
      (l) => l.method === 'MCP',
    );
    assert.ok(endpoints.some((l) => l.endpoint === '/mcp/tools/templates_create' && l.response_status === 200));
    assert.ok(endpoints.some((l) => l.endpoint === '/mcp/tools/templates_get' && l.response_status === 404));
  });

  it('no key or a wrong key: 401 with WWW-Authenticate; the SDK client cannot connect', async () => {
    const none = await post(server, {});
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer realm="mailsvc"/);
    assert.doesNotMatch(none.headers.get('www-authenticate') ?? '', /invalid_token/);
    const wrong = await post(server, { Authorization: 'Bearer sk_live_wrong' });
    assert.equal(wrong.status, 401);
    assert.match(wrong.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
    const sdk = new Client({ name: 't', version: '1' });
    await assert.rejects(
      sdk.connect(
        new StreamableHTTPClientTransport(new URL(`${server.httpUrl}/mcp`), {
          requestInit: { headers: { Authorization: 'Bearer oat_nope' } },
        }),
      ),
    );
  });

  it("refuses a foreign Origin with 403 (DNS rebinding) and takes the public URL's", async () => {
    const foreign = await post(server, { Authorization: `Bearer ${key}`, Origin: 'http://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal(((await foreign.json()) as { error: { code: string } }).error.code, 'forbidden');
    const own = await post(server, {
      Authorization: `Bearer ${key}`,
      Origin: new URL(server.config.http.publicUrl).origin,
    });
    assert.equal(own.status, 200);
    const sessionId = own.headers.get('mcp-session-id')!;
    assert.ok(sessionId);
    // Ended by DELETE, then unknown: 404, as the protocol says.
    const ended = await fetch(`${server.httpUrl}/mcp`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${key}`, 'Mcp-Session-Id': sessionId, 'MCP-Protocol-Version': '2025-06-18' },
    });
    assert.equal(ended.status, 200);
    const gone = await post(
      server,
      { Authorization: `Bearer ${key}`, 'Mcp-Session-Id': sessionId },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    );
    assert.equal(gone.status, 404);
  });

  it("a session is its key's: another key, or a made-up id, gets 404; no session id and no initialize: 400", async () => {
    const own = await post(server, { Authorization: `Bearer ${key}` });
    const sessionId = own.headers.get('mcp-session-id')!;
    const other = await post(
      server,
      { Authorization: `Bearer ${await server.key()}`, 'Mcp-Session-Id': sessionId },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    );
    assert.equal(other.status, 404);
    const madeUp = await post(
      server,
      { Authorization: `Bearer ${key}`, 'Mcp-Session-Id': 'f00' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    );
    assert.equal(madeUp.status, 404);
    const noSession = await post(
      server,
      { Authorization: `Bearer ${key}` },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    );
    assert.equal(noSession.status, 400);
  });

  it(`limits: ${MAX_SESSIONS_PER_KEY} open sessions per key, bodies up to http.bodyLimit, nesting up to 64 levels`, async () => {
    const fresh = await server.key();
    const opened: string[] = [];
    for (let i = 0; i < MAX_SESSIONS_PER_KEY; i++) {
      const res = await post(server, { Authorization: `Bearer ${fresh}` });
      assert.equal(res.status, 200, `session ${i + 1}`);
      opened.push(res.headers.get('mcp-session-id')!);
    }
    const over = await post(server, { Authorization: `Bearer ${fresh}` });
    assert.equal(over.status, 429);
    await fetch(`${server.httpUrl}/mcp`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${fresh}`, 'Mcp-Session-Id': opened[0]!, 'MCP-Protocol-Version': '2025-06-18' },
    });
    assert.equal((await post(server, { Authorization: `Bearer ${fresh}` })).status, 200, 'one ended, one may open');

    const limit = server.config.http.bodyLimit;
    const sized = (bytes: number) => {
      const shell = JSON.stringify({ ...INIT, params: { ...INIT.params, clientInfo: { name: '', version: '1' } } });
      return shell.replace('"name":""', `"name":"${'x'.repeat(bytes - shell.length)}"`);
    };
    assert.equal(Buffer.byteLength(sized(limit)), limit);
    assert.equal((await post(server, { Authorization: `Bearer ${key}` }, sized(limit))).status, 200, 'at the limit');
    assert.equal((await post(server, { Authorization: `Bearer ${key}` }, sized(limit + 1))).status, 413, 'over it');
    let nested: unknown = 'deep';
    for (let i = 0; i < 70; i++) nested = [nested];
    const deep = await post(
      server,
      { Authorization: `Bearer ${key}` },
      { ...INIT, params: { ...INIT.params, capabilities: { x: nested } } },
    );
    assert.equal(deep.status, 400);
  });
});

describe('MCP tool calls count against the workspace rate limits as REST calls do', () => {
  let server: TestServer;
  let client: Client;
  const clock = manualClock(Date.parse('2026-01-05T10:00:00Z'));

  before(async () => {
    server = await startTestServer({}, { clock });
    client = await mcpClient(server, await server.key());
  });
  after(async () => {
    await client?.close();
    await server?.close();
  });

  it('domains.read: 60 a minute are answered, the 61st is rate_limited (retryable), the next minute answers again; REST shares the bucket', async () => {
    for (let i = 1; i <= 59; i++) assert.equal((await call(client, 'domains_list')).isError, undefined, `call ${i}`);
    // The 60th, at the limit, through REST: one bucket for both surfaces.
    const rest = await request(server.httpUrl, 'GET', '/v1/domains', { key: await server.key() });
    assert.equal(rest.status, 200);
    assert.equal(rest.headers.get('x-ratelimit-remaining'), '0');
    const over = await call(client, 'domains_list');
    assert.equal(over.isError, true);
    assert.deepEqual(
      [over.structuredContent.error.code, over.structuredContent.error.retryable],
      ['rate_limited', true],
    );
    // Another bucket is not touched.
    assert.equal((await call(client, 'templates_list')).isError, undefined);
    clock.advance(60_000);
    assert.equal((await call(client, 'domains_list')).isError, undefined);
  });
});

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cliCommand, runCliProcess } from '../helpers/cli.js';
import { eventually } from '../helpers/delivery.js';
import { testPostgresUrl } from '../helpers/postgres.js';
import { request } from '../helpers/http.js';

type Result = CallToolResult & { structuredContent: Record<string, any> };

describe('`mailsvc mcp`: MCP over stdio against the database of a running server', () => {
  let server: TestServer;
  let key: string;
  let env: Record<string, string>;

  before(async () => {
    server = await startTestServer();
    key = await server.key();
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      MAILSVC_DATABASE: server.config.database,
      MAILSVC_DATA_DIR: server.dir,
      MAILSVC_LOG_LEVEL: 'info',
    };
  });
  after(async () => {
    await server?.close();
  });

  const connect = async (extraEnv: Record<string, string>, args: string[] = []) => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [...cliCommand(), 'mcp', ...args],
      env: { ...env, ...extraEnv },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d));
    const client = new Client({ name: 'stdio-test', version: '1' });
    await client.connect(transport);
    return { client, stderr: () => stderr };
  };

  it("the SDK client spawns it: the tools are listed, a template made through it is the running server's", async () => {
    const { client } = await connect({ MAILSVC_API_KEY: key });
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.some((t) => t.name === 'templates_create'));
      const created = (await client.callTool({
        name: 'templates_create',
        arguments: { name: 'From stdio', html: '<p>hi</p>' },
      })) as Result;
      assert.equal(created.isError, undefined, JSON.stringify(created.content));
      const rest = await request(server.httpUrl, 'GET', `/v1/templates/${created.structuredContent.id}`, { key });
      assert.equal(rest.status, 200);
      assert.equal(rest.body.name, 'From stdio');
    } finally {
      await client.close();
    }
  });

  it('takes the key from --key-file; a sending-only key gets forbidden from a tool it may not use', async () => {
    const sending = await server.runtime.services.credentials.createKey({
      name: 'sending',
      workspaceId: server.workspaceId,
      permission: 'sending_access',
    });
    const file = join(server.dir, 'key.txt');
    writeFileSync(file, `${sending.secret}\n`);
    const { client } = await connect({}, ['--key-file', file]);
    try {
      const refused = (await client.callTool({ name: 'domains_list', arguments: {} })) as Result;
      assert.equal(refused.isError, true);
      assert.equal(refused.structuredContent.error.code, 'forbidden');
      // Revoked while the assistant runs: its calls are refused from then on. On SQLite the
      // next call reads the key; on PostgreSQL the `mailsvc mcp` process drops its copy when the
      // change's notification arrives (milliseconds, longer on a loaded machine: docs/operations.md).
      await server.runtime.services.credentials.revoke(sending.credential.id);
      const revoked = await eventually(
        async () => {
          const result = (await client.callTool({ name: 'emails_list', arguments: {} })) as Result;
          return result.structuredContent?.error?.code === 'unauthorized' && result;
        },
        testPostgresUrl() ? 10_000 : 0,
        'the revoked key refused',
      );
      assert.equal(revoked.isError, true);
    } finally {
      await client.close();
    }
  });

  it('stdout carries protocol messages only; logs go to stderr', async () => {
    const child = spawn(process.execPath, [...cliCommand(), 'mcp'], {
      env: { ...env, MAILSVC_API_KEY: key, MAILSVC_LOG_LEVEL: 'debug' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const lines = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'templates_list', arguments: {} } },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'templates_get', arguments: { id: 'nope' } } },
    ];
    child.stdin.write(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const deadline = Date.now() + 30_000;
    while (stdout.split('\n').filter(Boolean).length < 3 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.equal(code, 0, 'ends when stdin ends');
    // Every line is a JSON-RPC message; answers to calls in flight together may come in any order.
    const messages = stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { jsonrpc: string; id: number; result: Result });
    messages.sort((a, b) => a.id - b.id);
    assert.deepEqual(
      messages.map((m) => [m.jsonrpc, m.id]),
      [
        ['2.0', 1],
        ['2.0', 2],
        ['2.0', 3],
      ],
    );
    assert.equal(messages[2]!.result.structuredContent.error.code, 'not_found');
  });

  it('no key, or a wrong one: exit 1 with one line on stderr, nothing on stdout', async () => {
    const none = await runCliProcess(['mcp'], env);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /MAILSVC_API_KEY/);
    assert.equal(none.stdout, '');
    const wrong = await runCliProcess(['mcp'], { ...env, MAILSVC_API_KEY: 'sk_live_wrong' });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /Invalid API key/);
    assert.equal(wrong.stdout, '');
    const missingFile = await runCliProcess(['mcp', '--key-file', join(server.dir, 'nope')], env);
    assert.equal(missingFile.code, 1);
    assert.match(missingFile.stderr, /--key-file: cannot read/);
  });
});

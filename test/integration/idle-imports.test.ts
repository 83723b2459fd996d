import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runCliProcess, serveCli, type Served } from '../helpers/cli.js';

/**
 * Issue 34: the libraries only some features need are imported on first use, so that an idle
 * server does not hold them. `mailsvc serve` runs with a module hook (node --import) that
 * writes every URL the loader resolves to a file; the packages must be absent after start-up
 * and present once their feature was used.
 */
const LAZY = [
  'oidc-provider',
  '@modelcontextprotocol/sdk',
  'juice',
  'parse5',
  'postcss',
  'otplib',
  'qrcode',
  'csv-parse',
  'html-to-text',
];

const HOOKS = `import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(file, resolved.url + '\\n');
  return resolved;
}
`;

describe('an idle server has not imported the libraries of features nobody used', () => {
  let dir: string;
  let log: string;
  let server: Served;
  let key: string;

  const loaded = (pkg: string) => readFileSync(log, 'utf8').includes(`/node_modules/${pkg}/`);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-idle-imports-'));
    log = join(dir, 'resolved.txt');
    writeFileSync(log, '');
    writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)}, { data: { file: ${JSON.stringify(log)} } });\n`,
    );
    const env = {
      MAILSVC_DATA_DIR: join(dir, 'data'),
      MAILSVC_DATABASE: `sqlite:${join(dir, 'mailsvc.db')}`,
      MAILSVC_HTTP_PORT: '0',
      MAILSVC_SMTP_SUBMISSION_ENABLED: 'false',
      MAILSVC_DELIVERY_ENABLED: 'false',
      MAILSVC_LOG_LEVEL: 'warn',
    };
    const created = await runCliProcess(['keys', 'create', '--name', 'idle-imports', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    key = (JSON.parse(created.stdout) as { key: string }).key;
    server = await serveCli({ ...env, NODE_OPTIONS: `--import=${pathToFileURL(join(dir, 'register.mjs')).href}` });
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('none after start-up; oidc-provider after a discovery request, the MCP SDK after an MCP request', async () => {
    // The hook sees the loader at work: the server's own modules are there.
    assert.ok(loaded('kysely'), 'the hook recorded nothing');
    assert.deepEqual(
      LAZY.filter((pkg) => loaded(pkg)),
      [],
    );

    const discovery = await fetch(`${server.url}/.well-known/oauth-authorization-server`);
    assert.equal(discovery.status, 200);
    assert.ok(((await discovery.json()) as { token_endpoint?: string }).token_endpoint);
    assert.ok(loaded('oidc-provider'));
    assert.ok(!loaded('@modelcontextprotocol/sdk'));

    const mcp = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'idle-imports', version: '1' } },
      }),
    });
    assert.equal(mcp.status, 200, await mcp.clone().text());
    assert.equal(
      ((await mcp.json()) as { result?: { serverInfo?: { name: string } } }).result?.serverInfo?.name,
      'mailsvc',
    );
    assert.ok(loaded('@modelcontextprotocol/sdk'));
  });
});

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { apiRouter } from '../../src/intake/http/app.js';
import type { HttpDeps } from '../../src/intake/http/context.js';
import { buildOpenApiDocument, renderOpenApi, toOpenApiPath } from '../../src/intake/http/openapi.js';
import { apiRoutes } from '../../src/intake/http/routes/index.js';
import { request, show } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { repoPath } from '../../scripts/repo-root.js';

const committed = readFileSync(repoPath('docs/openapi.json'), 'utf8');
type Doc = {
  paths: Record<
    string,
    Record<string, { security?: unknown[]; parameters?: Array<{ name?: string; in?: string; $ref?: string }> }>
  >;
};
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Every `$ref` in the document, with where it points. */
function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refs(n, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

describe('OpenAPI document', () => {
  it('is committed as generated (run `npm run docs` after changing a route)', () => {
    assert.equal(committed, renderOpenApi(apiRoutes));
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(JSON.parse(committed));
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    // The validator can say no: the same document without its required `info` fails.
    const broken = JSON.parse(committed);
    delete broken.info;
    assert.equal((await new Validator().validate(broken)).valid, false);
  });

  it('has every $ref pointing at a component that exists', () => {
    const doc = JSON.parse(committed) as Record<string, unknown>;
    const targets = refs(doc);
    assert.ok(targets.length > 50);
    for (const target of targets) {
      const found = target
        .replace(/^#\//, '')
        .split('/')
        .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], doc);
      assert.ok(found, `dangling ${target}`);
    }
  });

  it('describes every route the API router serves, and no route it does not', () => {
    const doc = buildOpenApiDocument(apiRoutes) as Doc;
    // The router is built as createHttpApp builds it; its handlers never run here.
    const { router } = apiRouter({} as HttpDeps, apiRoutes);
    const served = new Set<string>();
    for (const layer of router.stack) {
      for (const method of layer.methods.filter((m) => m !== 'HEAD'))
        served.add(`${method.toLowerCase()} ${toOpenApiPath(String(layer.path))}`);
    }
    assert.ok(served.size >= 40, `only ${served.size} routes`);
    for (const route of served) {
      const [method, path] = route.split(' ') as [string, string];
      assert.ok(doc.paths[path]?.[method], `${route} is served but not documented`);
    }
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m] && (path.startsWith('/v1/') || path.startsWith('/api/v1/'))).map(
        (m) => `${m} ${path}`,
      ),
    );
    for (const route of documented.filter((r) => r !== 'get /v1/openapi.json'))
      assert.ok(served.has(route), `${route} is documented but not served`);
  });

  it('names each path parameter, the scope for OAuth tokens and the idempotency header', () => {
    const doc = buildOpenApiDocument(apiRoutes) as Doc;
    const domain = doc.paths['/v1/domains/{id}']!.get!;
    assert.ok(domain.parameters!.some((p) => p.name === 'id' && p.in === 'path'));
    assert.deepEqual(domain.security, [{ apiKey: [] }, { oauthToken: ['domains:read'] }]);
    assert.ok(
      doc.paths['/v1/emails']!.post!.parameters!.some((p) => p.$ref === '#/components/parameters/IdempotencyKey'),
    );
    assert.deepEqual(doc.paths['/api/v1/send']!.post!.security, [{ apiKey: [] }]);
  });

  it('describes the raw message as message/rfc822', () => {
    const doc = buildOpenApiDocument(apiRoutes) as {
      paths: Record<string, Record<string, { responses: Record<string, { content?: object }> }>>;
    };
    assert.deepEqual(Object.keys(doc.paths['/v1/emails/{id}/raw']!.get!.responses['200']!.content!), [
      'message/rfc822',
    ]);
  });
});

describe('GET /v1/openapi.json', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('serves the committed document without a key', async () => {
    const res = await request(server.httpUrl, 'GET', '/v1/openapi.json');
    assert.equal(res.status, 200, show(res));
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    assert.equal(res.text, committed);
  });

  it('documents the endpoints served outside the API router, which answer', async () => {
    const doc = JSON.parse(committed) as Doc;
    const probes: Array<[string, string, number]> = [
      ['GET', '/healthz', 200],
      ['GET', '/readyz', 200],
      ['GET', '/t/o/not-a-token', 200],
      ['GET', '/t/c/not-a-token', 404],
      ['GET', '/u/not-a-token', 400],
      ['GET', '/metrics', 200],
    ];
    for (const [method, path, status] of probes) {
      const res = await request(server.httpUrl, method, path);
      assert.equal(res.status, status, `${method} ${path}: ${show(res)}`);
      const templated = path.replace(/^\/(t\/[oc]|u)\/.*/, '/$1/{token}');
      assert.ok(doc.paths[templated]?.[method.toLowerCase()], `${method} ${templated} is not documented`);
    }
  });

  it('lists limit and offset exactly on the offset lists, which honour them', async () => {
    const doc = JSON.parse(committed) as Doc;
    const key = await server.key();
    const paginated = Object.entries(doc.paths).filter(([, item]) =>
      item.get?.parameters?.some((p) => p.$ref === '#/components/parameters/Limit'),
    );
    assert.ok(paginated.length >= 8, `${paginated.length} paginated lists`);
    for (const [path] of paginated.filter(([p]) => !p.includes('{'))) {
      const res = await request(server.httpUrl, 'GET', `${path}?limit=1&offset=0`, { key });
      assert.equal(res.status, 200, `${path}: ${show(res)}`);
      // The legacy list keeps its flat shape.
      assert.equal(res.body.pagination?.limit ?? res.body.limit, 1, `${path}: ${show(res)}`);
    }
  });

  it('documents query parameters from the schema that validates them', async () => {
    const doc = JSON.parse(committed) as {
      paths: Record<
        string,
        Record<string, { parameters: Array<{ name?: string; schema?: { anyOf?: Array<{ enum?: string[] }> } }> }>
      >;
    };
    const status = doc.paths['/v1/emails']!.get!.parameters.find((p) => p.name === 'status')!;
    assert.ok(status.schema!.anyOf![0]!.enum!.includes('delivered'));
    const key = await server.key();
    const bad = await request(server.httpUrl, 'GET', '/v1/emails?status=lost', { key });
    assert.equal(bad.status, 400, show(bad));
    assert.match(bad.body.error.message, /^status: must be one of scheduled, queued/);
    const good = await request(server.httpUrl, 'GET', '/v1/emails?status=delivered&limit=5', { key });
    assert.equal(good.status, 200, show(good));
  });

  it('still needs a key for the rest of /v1', async () => {
    const res = await request(server.httpUrl, 'GET', '/v1/domains');
    assert.equal(res.status, 401, show(res));
  });
});

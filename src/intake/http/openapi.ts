import { z } from 'zod';
import { errorCatalog, type ErrorCode } from '../../shared/errors.js';
import { RESEND_ERROR_NAMES } from './middleware/render-errors.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../store/infra/list-page.js';
import type { Route } from './route.js';

/**
 * The OpenAPI 3.1 document of both surfaces, built from the same route definitions and zod
 * schemas that validate requests, so the description cannot drift from what is enforced.
 * `npm run docs` writes it to docs/openapi.json; GET /v1/openapi.json serves it.
 */

type Json = Record<string, unknown>;

export const OPENAPI_PATH = '/v1/openapi.json';
export const METRICS_PATH = '/metrics';

const isLegacy = (path: string): boolean => path.startsWith('/api/');

/** `/v1/domains/:id` -> `/v1/domains/{id}`. */
export const toOpenApiPath = (path: string): string => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const pathParams = (path: string): string[] => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);

/**
 * Request schemas as JSON Schema 2020-12 (OpenAPI 3.1's dialect). `io: 'input'` describes
 * what a client sends, before transforms; anything zod cannot express becomes `{}`.
 */
export const jsonSchema = (schema: z.ZodType): Json => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
  return rest;
};

const ref = (kind: 'schemas' | 'headers' | 'parameters' | 'responses' | 'securitySchemes', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

const rateLimitHeaders = {
  'X-RateLimit-Limit': ref('headers', 'RateLimitLimit'),
  'X-RateLimit-Remaining': ref('headers', 'RateLimitRemaining'),
  'X-RateLimit-Reset': ref('headers', 'RateLimitReset'),
  'X-Request-Id': ref('headers', 'RequestId'),
};

function errorResponses(route: Route): Json {
  const surface = isLegacy(route.path) ? 'Legacy' : 'Versioned';
  const codes: number[] = [400, 401, 403, 404, 413, 415, 429, 500, 503];
  if (route.idempotent || route.method !== 'GET') codes.push(409);
  const out: Json = {};
  for (const status of codes.sort((a, b) => a - b)) out[String(status)] = ref('responses', `${surface}${status}`);
  return out;
}

function queryParameters(schema: z.ZodType): Json[] {
  const object = jsonSchema(schema) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, { description, ...schema }]) => ({
    name,
    in: 'query',
    required: object.required?.includes(name) ?? false,
    ...(typeof description === 'string' ? { description } : {}),
    schema,
  }));
}

function operation(route: Route): Json {
  const legacy = isLegacy(route.path);
  const parameters: Json[] = pathParams(route.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  if (route.query) parameters.push(...queryParameters(route.query));
  if (route.paginated) parameters.push(ref('parameters', 'Limit'), ref('parameters', 'Offset'));
  parameters.push(ref('parameters', 'WorkspaceId'));
  if (route.idempotent) parameters.push(ref('parameters', 'IdempotencyKey'));

  const status = String(route.status ?? 200);
  const success: Json = {
    description: route.summary,
    headers: route.idempotent
      ? { ...rateLimitHeaders, 'Idempotent-Replayed': ref('headers', 'IdempotentReplayed') }
      : rateLimitHeaders,
    content: route.responseType
      ? { [route.responseType]: { schema: { type: 'string' } } }
      : { 'application/json': { schema: {} } },
  };
  const op: Json = {
    operationId: `${route.method.toLowerCase()}${toOpenApiPath(route.path)
      .replace(/[{}]/g, '')
      .replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    summary: route.summary,
    tags: [legacy ? 'legacy' : 'v1'],
    // OpenAPI 3.1 lets a bearer scheme list roles: an OAuth token needs this scope; API keys carry every scope.
    security: legacy ? [{ apiKey: [] }] : [{ apiKey: [] }, { oauthToken: [route.scope] }],
    'x-scope': route.scope,
    'x-rate-limit-bucket': route.operation ?? 'send',
    parameters,
    responses: { [status]: success, ...errorResponses(route) },
  };
  if (route.body) {
    op.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(route.body) } } };
  }
  if (route.multipart) {
    // The one upload route today (contact imports): a file part and JSON text fields.
    op.requestBody = {
      required: true,
      content: {
        'multipart/form-data': {
          schema: {
            type: 'object',
            required: ['file'],
            properties: {
              file: { type: 'string', format: 'binary' },
              column_map: { type: 'string' },
              on_conflict: { type: 'string', enum: ['upsert', 'skip'] },
              segments: { type: 'string' },
              topics: { type: 'string' },
            },
          },
        },
      },
    };
  }
  return op;
}

const errorExample = (code: ErrorCode, legacy: boolean): Json => {
  const entry = errorCatalog[code];
  return legacy
    ? { success: false, error: 'A message naming the problem', code: entry.legacyCode }
    : {
        request_id: 'req_0123456789ab',
        error: { code, message: 'A message naming the problem', retryable: entry.retryable },
        name: RESEND_ERROR_NAMES[code],
        message: 'A message naming the problem',
        statusCode: entry.status,
      };
};

/** One shared response per surface and status, in that surface's error envelope. */
function errorComponents(): Json {
  const responses: Json = {};
  const byStatus = new Map<number, ErrorCode[]>();
  for (const [code, entry] of Object.entries(errorCatalog) as Array<[ErrorCode, (typeof errorCatalog)[ErrorCode]]>) {
    byStatus.set(entry.status, [...(byStatus.get(entry.status) ?? []), code]);
  }
  for (const [status, codes] of byStatus) {
    for (const legacy of [false, true]) {
      const headers: Json = { 'X-Request-Id': ref('headers', 'RequestId') };
      if (status === 429 || status === 503) headers['Retry-After'] = ref('headers', 'RetryAfter');
      if (status === 429) Object.assign(headers, rateLimitHeaders);
      responses[`${legacy ? 'Legacy' : 'Versioned'}${status}`] = {
        description: `Error: ${codes.join(', ')}`,
        headers,
        content: {
          'application/json': {
            schema: ref('schemas', legacy ? 'LegacyError' : 'Error'),
            example: errorExample(codes[0]!, legacy),
          },
        },
      };
    }
  }
  return responses;
}

const plain = (description: string, contentType = 'application/json', schema: Json = {}): Json => ({
  description,
  content: { [contentType]: { schema } },
});
const tokenParam = {
  name: 'token',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description: 'Signed token from the message',
};

/**
 * Endpoints outside the API routers (plain Koa middleware, no API key): health checks, the
 * links in sent mail, the metrics scrape and this document.
 */
function publicPaths(): Json {
  const health = (summary: string, statuses: Json) => ({
    get: { operationId: summary.replace(/\W/g, ''), summary, tags: ['operations'], security: [], responses: statuses },
  });
  return {
    '/healthz': health('Liveness', { '200': plain('The process answers') }),
    '/readyz': health('Readiness', {
      '200': plain('The database is reachable'),
      '503': plain('The database is unreachable'),
    }),
    [OPENAPI_PATH]: {
      get: {
        operationId: 'getOpenApiDocument',
        summary: 'This document',
        tags: ['operations'],
        security: [],
        responses: { '200': plain('OpenAPI 3.1 document') },
      },
    },
    [METRICS_PATH]: {
      get: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics; needs `Authorization: Bearer <metrics.token>` when that is set',
        tags: ['operations'],
        security: [{}, { metricsToken: [] }],
        responses: {
          '200': plain('Prometheus text exposition format', 'text/plain', { type: 'string' }),
          '401': plain('metrics.token is set and the request lacks it'),
          '404': plain('metrics.enabled is false'),
        },
      },
    },
    '/u/{token}': {
      parameters: [tokenParam],
      get: {
        operationId: 'unsubscribePage',
        summary: 'Unsubscribe confirmation page',
        tags: ['public'],
        security: [],
        responses: {
          '200': plain('Confirmation page', 'text/html', { type: 'string' }),
          '400': plain('The link is not valid', 'text/html', { type: 'string' }),
        },
      },
      post: {
        operationId: 'unsubscribeOneClick',
        summary: 'One-click unsubscribe (RFC 8058)',
        tags: ['public'],
        security: [],
        responses: {
          '200': plain('Unsubscribed', 'text/html', { type: 'string' }),
          '400': plain('The link is not valid', 'text/html', { type: 'string' }),
        },
      },
    },
    '/a/{token}': {
      parameters: [
        {
          name: 'token',
          in: 'path',
          required: true,
          schema: { type: 'string' },
          description: 'Signed token from an attachment download_url',
        },
      ],
      get: {
        operationId: 'downloadAttachment',
        summary: "Download an email's attachment (the link expires after an hour)",
        tags: ['public'],
        security: [],
        responses: {
          '200': plain('The file, as an attachment', 'application/octet-stream', { type: 'string' }),
          '404': plain('The link is not valid or has expired', 'text/plain', { type: 'string' }),
        },
      },
    },
    '/t/o/{token}': {
      parameters: [tokenParam],
      get: {
        operationId: 'trackOpen',
        summary: 'Open-tracking pixel (always a 1x1 GIF)',
        tags: ['public'],
        security: [],
        responses: { '200': plain('Transparent GIF', 'image/gif', { type: 'string', contentMediaType: 'image/gif' }) },
      },
    },
    '/t/c/{token}': {
      parameters: [tokenParam],
      get: {
        operationId: 'trackClick',
        summary: 'Tracked link: redirect to the signed URL',
        tags: ['public'],
        security: [],
        responses: {
          '302': {
            description: 'Redirect to the original link',
            headers: { Location: { schema: { type: 'string', format: 'uri' } } },
          },
          '404': plain('The link is not genuine', 'text/plain', { type: 'string' }),
        },
      },
    },
  };
}

/** Drops duplicate registrations (the same route listed twice) keeping the first. */
const uniqueRoutes = (routes: Route[]): Route[] => {
  const seen = new Set<string>();
  return routes.filter((r) => {
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
};

export function buildOpenApiDocument(routes: Route[]): Json {
  const paths: Json = publicPaths();
  for (const route of uniqueRoutes(routes)) {
    const path = toOpenApiPath(route.path);
    const item = (paths[path] ??= {}) as Json;
    item[route.method.toLowerCase()] = operation(route);
  }
  const sortedPaths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: '3.1.0',
    info: {
      title: 'mailsvc API',
      version: '1.0.0',
      description:
        'Two surfaces over one service. `/v1/...` (versioned, Resend-like) answers errors as `{request_id, error: {code, message, retryable}, name, message, statusCode}` (the last three in the shape of the Resend API) and accepts API keys and OAuth access tokens; every `/v1` path is also served without its `/v1` prefix (`POST /emails`), so that Resend SDKs work with the server itself as their base URL. `/api/v1/...` (legacy) answers errors as `{success: false, error, code}` and accepts API keys only. Not described: the dashboard (`/dashboard/...`, HTML pages for people, with a session cookie and CSRF tokens, not an API). Generated from the route definitions by `npm run docs`; do not edit by hand.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: 'http://localhost:3000', description: 'Default http.publicUrl' }],
    tags: [
      { name: 'v1', description: 'Versioned API' },
      { name: 'legacy', description: 'Legacy API (/api/v1)' },
      { name: 'public', description: 'Links in sent mail; the signed token is the credential' },
      { name: 'operations', description: 'Health, metrics, this document' },
    ],
    security: [{ apiKey: [] }],
    paths: sortedPaths,
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            'API key: `sk_live_...` (real delivery) or `sk_test_...` (test mail, never delivered). Every scope. A master key also names the workspace (X-Workspace-Id).',
        },
        oauthToken: {
          type: 'http',
          scheme: 'bearer',
          description:
            'OAuth access token `oat_...`: issued at /oauth/token to an app a person authorized (authorization code + PKCE; discovery at /.well-known/oauth-authorization-server), or minted by `mailsvc tokens create`; scoped; /v1 and /mcp only. The role list of a requirement is the scope the operation needs.',
        },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'The `metrics.token` configuration value.' },
      },
      parameters: {
        Limit: {
          name: 'limit',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
          description: `Items per page; a value outside 1..${MAX_LIMIT} falls back to ${DEFAULT_LIMIT}`,
        },
        Offset: {
          name: 'offset',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 0, default: 0 },
          description: 'Items to skip',
        },
        WorkspaceId: {
          name: 'X-Workspace-Id',
          in: 'header',
          required: false,
          schema: { type: 'string', format: 'uuid' },
          description:
            'With a master key: the workspace the request acts on (also accepted as the `workspace_id` query parameter or body field).',
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          schema: { type: 'string', maxLength: 256 },
          description:
            'Repeating a request with the same key replays the first response; a different body with the same key is a 409.',
        },
      },
      headers: {
        RateLimitLimit: { description: 'Requests allowed in the window of this bucket', schema: { type: 'integer' } },
        RateLimitRemaining: { description: 'Requests left in the window', schema: { type: 'integer' } },
        RateLimitReset: { description: 'Unix time (seconds) when the window resets', schema: { type: 'integer' } },
        RetryAfter: { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
        RequestId: { description: "The client's X-Request-Id when sane, else one of ours", schema: { type: 'string' } },
        IdempotentReplayed: {
          description: '`true` when this response is a replay of an earlier request with the same Idempotency-Key',
          schema: { type: 'string', enum: ['true'] },
        },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['request_id', 'error'],
          properties: {
            request_id: { type: 'string' },
            error: {
              type: 'object',
              required: ['code', 'message', 'retryable'],
              properties: {
                code: { type: 'string', enum: Object.keys(errorCatalog) },
                message: { type: 'string' },
                retryable: { type: 'boolean' },
              },
            },
            name: {
              type: 'string',
              enum: [...new Set(Object.values(RESEND_ERROR_NAMES))],
              description: "Resend's name for the error (what the Resend SDK shows)",
            },
            message: { type: 'string', description: 'The same as error.message' },
            statusCode: { type: 'integer', description: 'The HTTP status' },
          },
        },
        LegacyError: {
          type: 'object',
          required: ['success', 'error', 'code'],
          properties: {
            success: { const: false },
            error: { type: 'string' },
            message: { type: 'string', description: 'On 429: the limit that was exceeded' },
            code: { type: 'string', enum: Object.values(errorCatalog).map((e) => e.legacyCode) },
          },
        },
      },
      responses: errorComponents(),
    },
  };
}

/** The document as committed: two-space JSON with a final newline. */
export const renderOpenApi = (routes: Route[]): string => `${JSON.stringify(buildOpenApiDocument(routes), null, 2)}\n`;

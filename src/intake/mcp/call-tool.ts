import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { hasScope } from '../../services/credentials.js';
import { IDEMPOTENCY_KEY_MAX } from '../../services/idempotency.js';
import { AppError, toAppError } from '../../shared/errors.js';
import { sha256Hex } from '../../shared/crypto.js';
import { stableStringify } from '../../shared/stable-json.js';
import { parseWith } from '../../shared/validate.js';
import { jsonDepth } from '../../shared/json-depth.js';
import { MAX_BODY_DEPTH } from '../http/middleware/parse-body.js';
import { writeScope } from '../../store/infra/wal-sync.js';
import { jsonSchema } from '../http/openapi.js';
import { countAgainstLimit } from '../http/rate-limit.js';
import type { McpCaller, McpDeps, Tool } from './tool.js';

const idempotencyKey = z
  .string()
  .min(1)
  .max(IDEMPOTENCY_KEY_MAX)
  .optional()
  .describe('A key of yours: a second call with the same key and arguments returns the first answer and does nothing');

/** The schema a tool's arguments are parsed with: its own, and `idempotency_key` where it honours one. */
export const argumentsSchema = (tool: Tool): z.ZodObject =>
  tool.idempotent ? tool.input.extend({ idempotency_key: idempotencyKey }) : tool.input;

/** A tool as `tools/list` shows it: the JSON Schema comes from the same zod schema that parses the arguments. */
export function toolListing(tool: Tool) {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchema(argumentsSchema(tool)) as {
      type: 'object';
      properties?: Record<string, object>;
      required?: string[];
    },
    annotations: { title: tool.title, ...tool.annotations },
  };
}

/** Structured content is an object: a list or a value is wrapped. */
const structured = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : { result: value ?? null };

export const errorResult = (err: AppError): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text: `${err.code}: ${err.message}` }],
  structuredContent: {
    error: {
      code: err.code,
      message: err.message,
      retryable: err.retryable,
      ...(err.field ? { field: err.field } : {}),
    },
  },
});

export interface CallOptions {
  /** The request id of the HTTP request that carried the call, for the log. */
  requestId?: string | null;
  userAgent?: string | null;
}

/**
 * Runs one tool call as runRoute runs a REST request: the key's scope, the workspace's rate
 * limit, the arguments' schema, the Idempotency-Key, the service, durability before the
 * answer, and a request log. A refusal or a failure is a tool result with `isError` and the
 * catalog's code, never a protocol error: the assistant reads it and can correct itself.
 */
export async function callTool(
  deps: McpDeps,
  tool: Tool,
  rawArgs: unknown,
  caller: McpCaller,
  options: CallOptions = {},
): Promise<CallToolResult> {
  const { services } = deps;
  const { principal, workspace } = caller;
  let status = 200;
  let body: unknown;
  try {
    body = await run();
    return { content: [{ type: 'text', text: JSON.stringify(body, null, 2) }], structuredContent: structured(body) };
  } catch (thrown) {
    const err = toAppError(thrown);
    if (err.code === 'internal_error')
      deps.logger.error(
        { err: err.cause ?? thrown, component: 'mcp', tool: tool.name, workspaceId: workspace.id },
        'tool call failed',
      );
    status = err.status;
    body = { error: { code: err.code, message: err.message } };
    return errorResult(err);
  } finally {
    services.apiLogs
      .record({
        workspaceId: workspace.id,
        credentialId: principal.credentialId,
        requestId: options.requestId ?? null,
        method: 'MCP',
        endpoint: `/mcp/tools/${tool.name}`,
        status,
        userAgent: options.userAgent ?? null,
        requestBody: rawArgs,
        responseBody: body,
      })
      .catch((err: unknown) =>
        deps.logger.warn({ err, component: 'api-logs', workspaceId: workspace.id }, 'could not record a tool call'),
      );
  }

  async function run(): Promise<unknown> {
    if (!hasScope(principal, tool.scope)) {
      throw new AppError(
        'forbidden',
        `This ${principal.kind === 'oauth' ? 'access token' : 'API key'} lacks the scope ${tool.scope}${principal.kind !== 'oauth' ? ' (it has sending access only)' : ''}`,
      );
    }
    if (tool.operation) await countAgainstLimit(deps, tool.operation, `ws:${workspace.id}`, workspace);
    // HTTP bodies are bounded before this; stdio messages are bounded here the same way.
    if (jsonDepth(rawArgs, MAX_BODY_DEPTH) > MAX_BODY_DEPTH)
      throw new AppError(
        'validation_error',
        `arguments: objects and arrays may nest at most ${MAX_BODY_DEPTH} levels deep`,
        { field: 'arguments' },
      );
    const { idempotency_key: key, ...args } = parseWith(argumentsSchema(tool), rawArgs ?? {}, 'arguments') as Record<
      string,
      unknown
    > & { idempotency_key?: string };
    const claim =
      key === undefined
        ? undefined
        : await services.idempotency.claim(workspace.id, key, sha256Hex(`MCP ${tool.name}\n${stableStringify(args)}`));
    if (claim?.kind === 'replay') return claim.body;
    const scope = { wrote: false };
    try {
      const result = await writeScope.run(scope, () => tool.handler({ deps, caller, args }));
      await claim?.handle?.complete(200, result);
      // What a call wrote is on disk before it is answered, as for a REST request.
      if (scope.wrote || claim) await services.durable();
      return result;
    } catch (err) {
      await claim?.handle?.release();
      throw err;
    }
  }
}

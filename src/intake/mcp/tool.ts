import type { z } from 'zod';
import type { Config } from '../../config/schema.js';
import type { Principal, Scope } from '../../services/credentials.js';
import type { Services } from '../../services/index.js';
import type { Operation } from '../../services/rate-limits.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Workspace } from '../../store/workspaces.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';

/** What the MCP adapter needs from the composition root: the same services as the HTTP adapter. */
export interface McpDeps {
  services: Services;
  config: Config;
  clock: Clock;
  logger: Logger;
}

/** Who calls a tool: authenticated as on /v1 (an API key or an `oat_` token) and its workspace. */
export interface McpCaller {
  principal: Principal;
  workspace: Workspace;
}

interface ToolInput<A> {
  deps: McpDeps;
  caller: McpCaller;
  args: A;
}

/** The families the docs page groups tools by. */
export type ToolFamily = 'templates' | 'emails' | 'domains' | 'deliverability' | 'contacts' | 'broadcasts' | 'inboxes';

/**
 * One MCP tool as data, as `Route` is for REST: the name, what an assistant is told, the
 * scope and rate-limit bucket it is held to, its zod input schema and a handler that calls
 * one service. The tool list, its JSON Schemas and docs/assistants.md all read this.
 */
export interface Tool<S extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  /** What it does and what it costs (mail sent, rows written, DNS look-ups). */
  description: string;
  family: ToolFamily;
  /** The OAuth scope it takes, as the REST route it mirrors (API keys have every scope; a sending-only key has emails:send). */
  scope: Scope;
  /** Rate-limit bucket; null when the service counts itself (sending counts each message). */
  operation: Operation | null;
  /** The REST route over the same service (`POST /v1/templates`): a test holds that it exists. */
  rest: string;
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  input: S;
  /** Takes an `idempotency_key` argument, honoured as the Idempotency-Key header is on /v1. */
  idempotent?: boolean;
  handler(input: ToolInput<z.infer<S>>): Promise<unknown>;
}

export const defineTool = <S extends z.ZodObject>(tool: Tool<S>): Tool => tool;

/** Annotations of the three kinds of tool there are. */
export const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;
/** Writes our own rows: repeating it with the same arguments leaves the same state. */
export const WRITE = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
} as const;
/** Creates something new each call. */
export const CREATE = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
} as const;
/** Reaches outside the server (mail to people, DNS look-ups). */
export const SEND = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
} as const;

/** What the SDK hands a tool, resource or prompt handler beside its arguments (the session's auth). */
export type CallExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

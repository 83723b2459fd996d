import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { toAppError } from '../../shared/errors.js';
import { callTool, errorResult, toolListing, type CallOptions } from './call-tool.js';
import type { CallExtra, McpCaller, McpDeps, Tool } from './tool.js';
import { mcpTools } from './tools/index.js';
import { registerPrompts } from './prompts.js';
import { registerTemplateResources } from './resources.js';

const INSTRUCTIONS =
  'mailsvc, a self-hosted email platform. Tools act on one workspace with the authority of the key you were given. ' +
  'Templates are drafts until published; a test key (sk_test_) never sends mail out. ' +
  'Sending to a segment reports its recipient count first and needs confirm: true; inbox replies are only drafted, never sent.';

/**
 * One MCP server over the services: tools from the registry (our own list and call handlers,
 * so that the listed JSON Schema, the parsing and the errors are the ones the registry
 * defines), one per session or stdio process. `callerOf` says who is calling from the
 * request's context (the HTTP request's authentication, or the stdio process's key).
 */
export function buildMcpServer(
  deps: McpDeps,
  version: string,
  callerOf: (extra: CallExtra) => Promise<McpCaller>,
  optionsOf: (extra: CallExtra) => CallOptions = () => ({}),
  tools: Tool[] = mcpTools,
): McpServer {
  const server = new McpServer({ name: 'mailsvc', title: 'mailsvc', version }, { instructions: INSTRUCTIONS });
  const byName = new Map(tools.map((t) => [t.name, t]));
  const listing = tools.map(toolListing);
  server.server.registerCapabilities({ tools: { listChanged: false } });
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listing }));
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = byName.get(request.params.name);
    // An unknown tool is the client's protocol mistake (the list says what there is), as the SDK answers it.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    let caller: McpCaller;
    try {
      caller = await callerOf(extra);
    } catch (err) {
      // A key revoked or expired since the session began: refused like any call, with the catalog's code.
      return errorResult(toAppError(err));
    }
    return callTool(deps, tool, request.params.arguments, caller, optionsOf(extra));
  });
  registerTemplateResources(server, deps, callerOf);
  registerPrompts(server);
  return server;
}

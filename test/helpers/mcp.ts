import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { TestServer } from './server.js';

/** The official SDK's client over Streamable HTTP, connected to a test server's /mcp with `key`. */
export async function mcpClient(
  server: TestServer,
  key: string,
  headers: Record<string, string> = {},
): Promise<Client> {
  const client = new Client({ name: 'mailsvc-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.httpUrl}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${key}`, ...headers } },
  });
  await client.connect(transport);
  return client;
}

/** Calls a tool and returns its result, typed as the tools answer (content and structured content). */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult & { structuredContent: Record<string, any> }> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult & {
    structuredContent: Record<string, any>;
  };
}

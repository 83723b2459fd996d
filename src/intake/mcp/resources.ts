import { z } from 'zod';
import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { hasScope } from '../../services/credentials.js';
import { isAppError } from '../../shared/errors.js';
import type { CallExtra, McpCaller, McpDeps } from './tool.js';

/**
 * Templates as resources an assistant can read into its context: `mailsvc://templates/{id}/source`
 * (the MJML or HTML as written) and `mailsvc://templates/{id}/html` (what mail is sent with).
 * Held to templates:read like the tools; a missing template is the protocol's not-found.
 */
export function registerTemplateResources(
  server: McpServer,
  deps: McpDeps,
  callerOf: (extra: CallExtra) => Promise<McpCaller>,
): void {
  const readable = async (extra: CallExtra): Promise<McpCaller> => {
    const caller = await callerOf(extra);
    if (!hasScope(caller.principal, 'templates:read'))
      throw new McpError(ErrorCode.InvalidRequest, 'forbidden: this key lacks the scope templates:read');
    return caller;
  };
  const read = async (id: string, extra: CallExtra) => {
    const caller = await readable(extra);
    try {
      return await deps.services.templates.get(caller.workspace.id, id);
    } catch (err) {
      if (isAppError(err) && err.code === 'not_found') throw new McpError(ErrorCode.InvalidParams, err.message);
      throw err;
    }
  };
  const list = (kind: 'source' | 'html') => async (extra: CallExtra) => {
    const caller = await readable(extra);
    const { items } = await deps.services.templates.list(caller.workspace.id, { limit: 100, offset: 0 });
    return {
      resources: items.map((t) => ({
        uri: `mailsvc://templates/${t.id}/${kind}`,
        name: `${t.name} (${kind === 'source' ? t.language : 'compiled HTML'})`,
        mimeType: kind === 'source' && t.language === 'mjml' ? 'application/vnd.mjml+xml' : 'text/html',
      })),
    };
  };
  const idOf = (value: string | string[] | undefined) =>
    z
      .string()
      .min(1)
      .max(200)
      .parse(Array.isArray(value) ? value[0] : value);

  server.registerResource(
    'template-source',
    new ResourceTemplate('mailsvc://templates/{id}/source', { list: list('source') }),
    { title: 'Template source', description: "A template's source as written: MJML or HTML" },
    async (uri, variables, extra) => {
      const t = await read(idOf(variables.id), extra);
      return {
        contents: [
          {
            uri: uri.href,
            mimeType: t.language === 'mjml' ? 'application/vnd.mjml+xml' : 'text/html',
            text: t.mjml ?? t.html,
          },
        ],
      };
    },
  );
  server.registerResource(
    'template-html',
    new ResourceTemplate('mailsvc://templates/{id}/html', { list: list('html') }),
    {
      title: 'Template HTML',
      description: "The HTML a template's mail is sent with (MJML compiled), before variables are filled",
    },
    async (uri, variables, extra) => {
      const t = await read(idOf(variables.id), extra);
      return { contents: [{ uri: uri.href, mimeType: 'text/html', text: t.html }] };
    },
  );
}

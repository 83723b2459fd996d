import { argumentsSchema, toolListing } from './call-tool.js';
import type { Tool, ToolFamily } from './tool.js';

/**
 * The tool reference of docs/assistants.md, generated from the registry (`npm run docs`) so
 * that it cannot drift from what the server lists; a unit test compares it with the page.
 */

const FAMILY_TITLES: Record<ToolFamily, string> = {
  templates: 'Templates',
  emails: 'Emails',
  contacts: 'Contacts, segments and topics',
  broadcasts: 'Broadcasts',
  domains: 'Domains',
  deliverability: 'Deliverability',
  inboxes: 'Inboxes',
};

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function hints(tool: Tool): string {
  const a = tool.annotations;
  if (a.readOnlyHint) return 'read-only';
  return [
    a.destructiveHint ? 'destructive' : 'writes',
    a.idempotentHint ? 'idempotent' : null,
    a.openWorldHint ? 'reaches outside' : null,
  ]
    .filter(Boolean)
    .join(', ');
}

function argumentList(tool: Tool): string {
  const schema = toolListing(tool).inputSchema;
  const required = new Set(schema.required ?? []);
  const names = Object.keys(argumentsSchema(tool).shape);
  if (names.length === 0) return '—';
  return names.map((n) => (required.has(n) ? `\`${n}\`` : `\`${n}\`?`)).join(', ');
}

export function toolReference(tools: Tool[]): string {
  const families = [...new Set(tools.map((t) => t.family))];
  return families
    .map((family) => {
      const rows = tools
        .filter((t) => t.family === family)
        .map(
          (t) =>
            `| \`${t.name}\` | ${cell(t.description)} | ${argumentList(t)} | \`${t.scope}\` | ${hints(t)} | \`${t.rest}\` |`,
        );
      return [
        `### ${FAMILY_TITLES[family]}`,
        '',
        '| Tool | What it does | Arguments (`?` optional) | Scope | Kind | Same service as |',
        '| --- | --- | --- | --- | --- | --- |',
        ...rows,
      ].join('\n');
    })
    .join('\n\n');
}

export const TOOLS_START = '<!-- mcp-tools:start -->';
export const TOOLS_END = '<!-- mcp-tools:end -->';

/** The page with its generated section replaced. */
export function withToolReference(page: string, tools: Tool[]): string {
  const start = page.indexOf(TOOLS_START);
  const end = page.indexOf(TOOLS_END);
  if (start < 0 || end < start) throw new Error(`the page has no ${TOOLS_START} … ${TOOLS_END} section`);
  return `${page.slice(0, start + TOOLS_START.length)}\n${toolReference(tools)}\n${page.slice(end)}`;
}

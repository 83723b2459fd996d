import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { apiRoutes } from '../../../../src/intake/http/routes/index.js';
import { toolListing } from '../../../../src/intake/mcp/call-tool.js';
import { toolReference, TOOLS_END, TOOLS_START } from '../../../../src/intake/mcp/tool-docs.js';
import { mcpTools } from '../../../../src/intake/mcp/tools/index.js';
import { repoPath } from '../../../../scripts/repo-root.js';

describe('the MCP tool registry', () => {
  it('docs/assistants.md shows the registry as it is (run `npm run docs` after changing a tool)', () => {
    const page = readFileSync(repoPath('docs/assistants.md'), 'utf8');
    assert.ok(
      page.includes(`${TOOLS_START}\n${toolReference(mcpTools)}\n${TOOLS_END}`),
      'docs/assistants.md is stale: npm run docs',
    );
  });

  it('every tool mirrors a REST route over the same service, with the same scope (no tool-only authority)', () => {
    for (const tool of mcpTools) {
      const [method, path] = tool.rest.split(' ');
      const route = apiRoutes.find((r) => r.method === method && r.path === path);
      assert.ok(route, `${tool.name}: no REST route ${tool.rest}`);
      assert.equal(tool.scope, route.scope, `${tool.name} takes ${tool.scope}, ${tool.rest} takes ${route.scope}`);
    }
  });

  it('names are unique snake_case; each tool has a title, a description and a JSON Schema object', () => {
    assert.equal(new Set(mcpTools.map((t) => t.name)).size, mcpTools.length);
    for (const tool of mcpTools) {
      assert.match(tool.name, /^[a-z]+(_[a-z]+)+$/);
      assert.ok(tool.title.length > 0 && tool.description.length > 20, tool.name);
      const listed = toolListing(tool);
      assert.equal(listed.inputSchema.type, 'object', tool.name);
      // A read-only tool is not destructive; an outward one is not read-only.
      if (tool.annotations.readOnlyHint) assert.equal(tool.annotations.destructiveHint, false, tool.name);
    }
  });
});

// Regenerates the generated docs: the configuration table in docs/configuration.md, docs/openapi.json and the tool reference of docs/assistants.md (`npm run docs`).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { configTable } from '../src/config/describe-config.js';
import { renderOpenApi } from '../src/intake/http/openapi.js';
import { apiRoutes } from '../src/intake/http/routes/index.js';
import { withToolReference } from '../src/intake/mcp/tool-docs.js';
import { mcpTools } from '../src/intake/mcp/tools/index.js';

const START = '<!-- config-table:start -->';
const END = '<!-- config-table:end -->';
const readme = readFileSync('docs/configuration.md', 'utf8');
const before = readme.slice(0, readme.indexOf(START) + START.length);
const after = readme.slice(readme.indexOf(END));
writeFileSync('docs/configuration.md', `${before}\n${configTable()}\n${after}`);

mkdirSync('docs', { recursive: true });
writeFileSync('docs/openapi.json', renderOpenApi(apiRoutes));
writeFileSync('docs/assistants.md', withToolReference(readFileSync('docs/assistants.md', 'utf8'), mcpTools));

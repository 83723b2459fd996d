import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { configTable } from '../../../src/config/describe-config.js';
import { repoPath } from '../../../scripts/repo-root.js';

describe('docs/configuration.md', () => {
  it('documents the configuration exactly as the schema declares it (npm run docs)', () => {
    const readme = readFileSync(repoPath('docs/configuration.md'), 'utf8');
    assert.ok(readme.includes(`<!-- config-table:start -->\n${configTable()}\n<!-- config-table:end -->`));
  });
});

describe('example configs', () => {
  it('load without errors', async () => {
    const { loadConfig } = await import('../../../src/config/load-config.js');
    for (const name of ['development', 'production']) {
      const file = repoPath(`config/${name}.json`);
      assert.doesNotThrow(() => loadConfig({ file, env: {} }), name);
    }
  });
});

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository's root: the nearest directory above this module with a package.json. The
 * tests, benches and scripts run from their sources (tsx) or from the test build in
 * `dist-test/` (scripts/build-tests.ts), where a path counted up from `import.meta.url` would
 * land inside the build; docs, fixtures, config/ and the sources themselves live only here.
 */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    dir = dirname(dir);
  }
  throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
}

export const repoRoot = findRoot();

/** A path inside the repository, from its root: `repoPath('docs/api.md')`. */
export const repoPath = (...parts: string[]): string => join(repoRoot, ...parts);

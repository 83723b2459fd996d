// The test build: every TypeScript file of src/, test/, scripts/ and bench/ transpiled to
// dist-test/ (same tree, .js, source maps), by the esbuild that tsx itself runs, so the suite
// runs the same code it ran through tsx without tsx's loader. Loading a test file and the
// server through tsx cost about as much CPU as the test itself: 7–8 s against 4.5 s for an
// integration file, and every delivery thread an in-process server starts paid it again.
// The whole tree takes about a second; dist-test/ is written afresh each time (a deleted
// source leaves no stale module behind). Type checking is `npm run typecheck`'s job.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { repoPath, repoRoot } from './repo-root.js';

export const TEST_BUILD = 'dist-test';

const sources = (dir: string): string[] =>
  readdirSync(repoPath(dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });

export async function buildTests(): Promise<void> {
  rmSync(repoPath(TEST_BUILD), { recursive: true, force: true });
  await build({
    absWorkingDir: repoRoot,
    entryPoints: ['src', 'test', 'scripts', 'bench'].flatMap((dir) => sources(dir)),
    outdir: TEST_BUILD,
    outbase: '.',
    bundle: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    tsconfig: 'tsconfig.json',
    logLevel: 'warning',
  });
}

/** Where the test build keeps a source file: `test/x.test.ts` → `dist-test/test/x.test.js`. */
export const builtPath = (source: string): string => `${TEST_BUILD}/${source.replace(/\.ts$/, '.js')}`;

if (import.meta.url === `file://${process.argv[1]}`) await buildTests();

// The test build: every TypeScript file of src/, test/, scripts/ and bench/ transpiled to
// dist-test/ (same tree, .js, source maps), by the esbuild that tsx itself runs, so the suite
// runs the same code it ran through tsx without tsx's loader. Loading a test file and the
// server through tsx cost about as much CPU as the test itself: 7–8 s against 4.5 s for an
// integration file, and every delivery thread an in-process server starts paid it again.
// The whole tree takes about a second. Only files whose output changed are written, each by a
// rename (a suite already running from dist-test/ reads either the old module or the new, never
// half of one), and a deleted source's output goes. Type checking is `npm run typecheck`'s job.
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import { repoPath, repoRoot } from './repo-root.js';

export const TEST_BUILD = 'dist-test';

const sources = (dir: string): string[] =>
  readdirSync(repoPath(dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });

const existing = (dir: string): string[] => {
  try {
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? existing(join(dir, entry.name)) : [join(dir, entry.name)],
    );
  } catch {
    return [];
  }
};

const same = (path: string, contents: Uint8Array): boolean => {
  try {
    return Buffer.compare(readFileSync(path), contents) === 0;
  } catch {
    return false;
  }
};

export async function buildTests(): Promise<void> {
  const { outputFiles } = await build({
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
    write: false,
  });
  const wanted = new Set(outputFiles.map((file) => file.path));
  for (const file of outputFiles) {
    if (same(file.path, file.contents)) continue;
    mkdirSync(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
  for (const path of existing(repoPath(TEST_BUILD))) {
    if (!wanted.has(path)) rmSync(path, { force: true });
  }
}

/** Where the test build keeps a source file: `test/x.test.ts` → `dist-test/test/x.test.js`. */
export const builtPath = (source: string): string => `${TEST_BUILD}/${source.replace(/\.ts$/, '.js')}`;

if (import.meta.url === `file://${process.argv[1]}`) await buildTests();

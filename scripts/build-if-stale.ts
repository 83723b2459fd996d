// `npm install`'s prepare step: builds dist/ unless it is newer than every source file. In a
// clone, the first `npx mailsvc` links the clone into npm's cache and runs prepare again;
// without this check that was a second, silent ten-second build right after `npm ci`.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const newest = (dir: string): number =>
  Math.max(0, ...readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs)));

const built = (() => {
  try {
    return statSync('dist/src/cli/bin.js').mtimeMs;
  } catch {
    return 0;
  }
})();
if (built > 0 && built >= Math.max(newest('src'), statSync('tsconfig.json').mtimeMs, statSync('package.json').mtimeMs)) {
  console.log('mailsvc: dist/ is up to date');
} else {
  execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}

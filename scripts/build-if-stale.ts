// `npm install`'s prepare step: builds dist/ unless it is newer than every source file. In a
// clone, the first `npx mailsvc` links the clone into npm's cache and runs prepare again;
// without this check that was a second, silent ten-second build right after `npm ci`.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { distIsFresh } from './dist-fresh.js';

if (distIsFresh('.')) {
  console.log('mailsvc: dist/ is up to date');
} else {
  execFileSync(
    process.execPath,
    [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    { stdio: 'inherit' },
  );
}

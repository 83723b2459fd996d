import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const newest = (dir: string): number =>
  Math.max(
    0,
    ...readdirSync(dir, { withFileTypes: true }).map((e) =>
      e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs,
    ),
  );

/** Whether `root`/dist/ was built after every source file, tsconfig.json and package.json last changed. */
export function distIsFresh(root: string): boolean {
  let built: number;
  try {
    built = statSync(join(root, 'dist/src/cli/bin.js')).mtimeMs;
  } catch {
    return false;
  }
  return (
    built >=
    Math.max(
      newest(join(root, 'src')),
      statSync(join(root, 'tsconfig.json')).mtimeMs,
      statSync(join(root, 'package.json')).mtimeMs,
    )
  );
}

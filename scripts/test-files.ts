import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The suite's files below `dir` (test/faults left out: `npm run test:faults` runs them alone), sorted. */
export function testFiles(dir = 'test'): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (path !== join('test', 'faults')) out.push(...testFiles(path));
    } else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out.sort();
}

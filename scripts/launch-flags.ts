import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The Node.js options the shipped launcher starts the program with: those on bin/mailsvc.js's
 * `#!/usr/bin/env -S node …` line. Tests and benches that start `mailsvc` as `node FILE` pass
 * them too, so that they measure the process users run.
 */
export function launchFlags(root: string): string[] {
  const first = readFileSync(join(root, 'bin/mailsvc.js'), 'utf8').split('\n', 1)[0]!;
  const flags = /^#!\/usr\/bin\/env -S node(?<flags>( --?[\w-]+(=\S+)?)*)$/.exec(first)?.groups?.flags;
  if (flags === undefined) throw new Error(`bin/mailsvc.js: cannot read the options on its first line: ${first}`);
  return flags.split(' ').filter(Boolean);
}

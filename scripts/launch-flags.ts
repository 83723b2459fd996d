import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The first line of bin/mailsvc.js: `#!/usr/bin/env -S [NAME=VALUE …] node [--option …]`. */
function launchLine(root: string): { env: Record<string, string>; flags: string[] } {
  const first = readFileSync(join(root, 'bin/mailsvc.js'), 'utf8').split('\n', 1)[0]!;
  const m = /^#!\/usr\/bin\/env -S(?<env>( [A-Z_]+=\S+)*) node(?<flags>( --?[\w-]+(=\S+)?)*)$/.exec(first)?.groups;
  if (!m) throw new Error(`bin/mailsvc.js: cannot read the options on its first line: ${first}`);
  const env = Object.fromEntries(
    (m.env ?? '')
      .split(' ')
      .filter(Boolean)
      .map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]),
  );
  return { env, flags: (m.flags ?? '').split(' ').filter(Boolean) };
}

/**
 * The Node.js options the shipped launcher starts the program with: those on bin/mailsvc.js's
 * `#!/usr/bin/env -S node …` line. Tests and benches that start `mailsvc` as `node FILE` pass
 * them too, so that they measure the process users run.
 */
export function launchFlags(root: string): string[] {
  return launchLine(root).flags;
}

/** The environment the launcher's line sets before node (`NAME=VALUE` after `env -S`), for the same reason. */
export function launchEnv(root: string): Record<string, string> {
  return launchLine(root).env;
}

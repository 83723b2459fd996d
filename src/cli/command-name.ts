import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * How the person reading a hint runs mailsvc: `mailsvc` once it is on the PATH (installed
 * globally, linked, or the production symlink), `npx mailsvc` from a clone, where a bare
 * `mailsvc` is "command not found".
 */
export function commandName(env: Record<string, string | undefined>): string {
  if (env.npm_command === 'exec') return 'npx mailsvc';
  const onPath = (env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, 'mailsvc')));
  return onPath ? 'mailsvc' : 'npx mailsvc';
}

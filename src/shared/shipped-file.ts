import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The path of a file shipped with mailsvc beside src/ (`config/engagement/agents.txt`,
 * `package.json`): two directories up from src/shared when run through tsx, three from
 * dist/src/shared when built. Null when the installation lacks it.
 */
export function shippedFile(relative: string): string | null {
  for (const up of ['../../', '../../../']) {
    const path = fileURLToPath(new URL(`${up}${relative}`, import.meta.url));
    if (existsSync(path)) return path;
  }
  return null;
}

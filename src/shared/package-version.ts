import { readFileSync } from 'node:fs';
import { shippedFile } from './shipped-file.js';

/** The version in package.json. */
export function packageVersion(): string {
  const file = shippedFile('package.json');
  if (!file) return 'unknown';
  const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
  return pkg.name === 'mailsvc' && pkg.version ? pkg.version : 'unknown';
}

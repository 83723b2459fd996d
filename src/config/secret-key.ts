import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from './schema.js';
import { ConfigError } from './load-config.js';

/**
 * The 32-byte key that encrypts secrets at rest: `secretKey` from the config, or a key
 * generated once into `<dataDir>/secret.key` (0600). Losing it loses the DKIM private keys.
 */
export function loadSecretKey(config: Config): Buffer {
  if (config.secretKey) return Buffer.from(config.secretKey, 'base64');
  const file = join(config.dataDir, 'secret.key');
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  try {
    writeFileSync(file, randomBytes(32).toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new ConfigError(`config: ${file} must hold base64 of 32 bytes`);
  return key;
}

import { readFileSync } from 'node:fs';
import { schema, type Config } from './schema.js';
import { isPlainObject, SettingError, type Setting } from './settings.js';

/** A configuration problem, always one line naming the key and the source. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Node = Setting<unknown> | { [key: string]: Node };
const isSetting = (node: Node): node is Setting<unknown> => typeof (node as Setting<unknown>).parse === 'function';

/** `http.publicUrl` -> `MAILSVC_HTTP_PUBLIC_URL`. */
export const envName = (path: string): string =>
  'MAILSVC_' +
  path
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/\./g, '_')
    .toUpperCase();

/** Every setting with its dotted path, in declaration order. */
export function listSettings(): Array<{ path: string; setting: Setting<unknown> }> {
  const out: Array<{ path: string; setting: Setting<unknown> }> = [];
  const walk = (node: Node, prefix: string) => {
    for (const [key, child] of Object.entries(node)) {
      const path = prefix ? `${prefix}.${key}` : key;
      if (isSetting(child)) out.push({ path, setting: child });
      else walk(child, path);
    }
  };
  walk(schema, '');
  return out;
}

export interface LoadOptions {
  /** JSON config file; falls back to env MAILSVC_CONFIG. */
  file?: string | undefined;
  env?: Record<string, string | undefined>;
  /** Values that win over file and environment (tests, CLI flags). Same shape as Config, partial. */
  overrides?: unknown;
}

function getPath(obj: unknown, path: string): { found: boolean; value: unknown } {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (!isPlainObject(cur) || !(part in cur)) return { found: false, value: undefined };
    cur = cur[part];
  }
  return { found: true, value: cur };
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (const part of parts.slice(0, -1)) {
    if (!isPlainObject(cur[part])) cur[part] = {};
    cur = cur[part] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = value;
}

/** Keys present in a file or overrides object that the schema does not know: most often typos. */
function findUnknownKeys(input: unknown, node: Node, prefix = ''): string[] {
  if (!isPlainObject(input)) return [];
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const child = (node as Record<string, Node>)[key];
    if (child === undefined) unknown.push(path);
    else if (!isSetting(child)) unknown.push(...findUnknownKeys(value, child, path));
  }
  return unknown;
}

function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`config: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (!isPlainObject(parsed)) throw new ConfigError(`config: ${file} must hold a JSON object`);
    return parsed;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`config: ${file} is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * Builds the configuration: defaults, then the JSON file, then MAILSVC_* environment
 * variables, then explicit overrides. Throws ConfigError with one line on the first bad value.
 */
export function loadConfig(options: LoadOptions = {}): Config {
  const env = options.env ?? process.env;
  const file = options.file ?? env.MAILSVC_CONFIG;
  const fileValues = file ? readConfigFile(file) : {};
  const sources: Array<{ label: string; values: unknown }> = [
    { label: file ?? 'config file', values: fileValues },
    { label: 'overrides', values: options.overrides ?? {} },
  ];
  for (const { label, values } of sources) {
    const unknown = findUnknownKeys(values, schema);
    if (unknown.length > 0) throw new ConfigError(`config: unknown key "${unknown[0]}" in ${label}`);
  }

  const config: Record<string, unknown> = {};
  for (const { path, setting } of listSettings()) {
    let value = structuredClone(setting.default);
    const attempt = (raw: unknown, fromEnv: boolean, source: string) => {
      try {
        value = setting.parse(raw, fromEnv);
      } catch (err) {
        if (err instanceof SettingError) throw new ConfigError(`config: ${path} ${err.message} (from ${source})`);
        throw err;
      }
    };
    const inFile = getPath(fileValues, path);
    if (inFile.found) attempt(inFile.value, false, file!);
    const fromEnv = env[envName(path)];
    if (fromEnv !== undefined) attempt(fromEnv, true, envName(path));
    const inOverrides = getPath(options.overrides, path);
    if (inOverrides.found) attempt(inOverrides.value, false, 'overrides');
    setPath(config, path, value);
  }
  return config as Config;
}

export type { Config };

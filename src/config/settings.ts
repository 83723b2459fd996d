import { isOneOf } from '../shared/one-of.js';

/**
 * Typed setting declarations: each carries its default, a description for the configuration table (docs/configuration.md)
 * configuration table, and a parser that turns a file or environment value into the type,
 * or explains in one line why it cannot.
 */

export interface Setting<T> {
  readonly kind: string;
  readonly default: T;
  readonly description: string;
  /** Parses a value from JSON (any type) or from an environment variable (always a string). */
  parse(value: unknown, fromEnv: boolean): T;
}

export class SettingError extends Error {}

const fail = (message: string): never => {
  throw new SettingError(message);
};

function setting<T>(kind: string, defaultValue: T, description: string, parse: Setting<T>['parse']): Setting<T> {
  return { kind, default: defaultValue, description, parse };
}

export const str = (defaultValue: string, description: string): Setting<string> =>
  setting('string', defaultValue, description, (v) =>
    typeof v === 'string' ? v : fail(`must be a string, got ${JSON.stringify(v)}`),
  );

export const optionalStr = (description: string): Setting<string | null> =>
  setting('string | null', null, description, (v) =>
    v === null || v === ''
      ? null
      : typeof v === 'string'
        ? v
        : fail(`must be a string or null, got ${JSON.stringify(v)}`),
  );

export const oneOf = <const T extends string>(values: readonly T[], defaultValue: T, description: string): Setting<T> =>
  setting(values.map((v) => `"${v}"`).join(' | '), defaultValue, description, (v) =>
    typeof v === 'string' && isOneOf(values, v)
      ? v
      : fail(`must be one of ${values.join(', ')}, got ${JSON.stringify(v)}`),
  );

export const int = (
  defaultValue: number,
  description: string,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): Setting<number> =>
  setting('integer', defaultValue, description, (v, fromEnv) => {
    const n = fromEnv && typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
      return fail(`must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
    }
    return n;
  });

/** A percentage from 0 to 100, decimals allowed (rates such as 0.3 %). */
export const percent = (defaultValue: number, description: string): Setting<number> =>
  setting('percent', defaultValue, description, (v, fromEnv) => {
    const n = fromEnv && typeof v === 'string' && /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > 100)
      return fail(`must be a percentage from 0 to 100, got ${JSON.stringify(v)}`);
    return n;
  });

export const port = (defaultValue: number, description: string): Setting<number> => {
  const base = int(defaultValue, description, 0, 65535);
  return { ...base, kind: 'port' };
};

export const bool = (defaultValue: boolean, description: string): Setting<boolean> =>
  setting('boolean', defaultValue, description, (v, fromEnv) => {
    if (typeof v === 'boolean') return v;
    if (fromEnv && typeof v === 'string') {
      if (['true', '1', 'yes'].includes(v.toLowerCase())) return true;
      if (['false', '0', 'no'].includes(v.toLowerCase())) return false;
    }
    return fail(`must be true or false, got ${JSON.stringify(v)}`);
  });

/** A JSON value: from the environment it is parsed as JSON first, then checked. */
export const json = <T>(kind: string, defaultValue: T, description: string, check: (v: unknown) => T): Setting<T> =>
  setting(kind, defaultValue, description, (v, fromEnv) => {
    let value = v;
    if (fromEnv && typeof v === 'string') {
      try {
        value = JSON.parse(v);
      } catch {
        // A plain comma-separated list is accepted for arrays of strings.
        value =
          kind === 'string[]'
            ? v
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean)
            : fail(`must be JSON (${kind})`);
      }
    }
    return check(value);
  });

export const stringList = (defaultValue: string[], description: string): Setting<string[]> =>
  json('string[]', defaultValue, description, (v) =>
    Array.isArray(v) && v.every((s) => typeof s === 'string')
      ? v
      : fail(`must be an array of strings, got ${JSON.stringify(v)}`),
  );

export const intList = (defaultValue: number[], description: string, min = 0): Setting<number[]> =>
  json('integer[]', defaultValue, description, (v) =>
    Array.isArray(v) && v.length > 0 && v.every((n) => Number.isInteger(n) && n >= min)
      ? v
      : fail(`must be a non-empty array of integers >= ${min}, got ${JSON.stringify(v)}`),
  );

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export { isPlainObject, fail as settingFail };

import type { z } from 'zod';
import { validationError } from './errors.js';

/** `['attachments', 1, 'content']` -> `attachments[1].content`. */
const fieldPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)),
    '',
  );

function describe(issue: z.core.$ZodIssue, input: unknown): string {
  if (issue.code === 'invalid_type') {
    let value: unknown = input;
    for (const part of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[part as string];
    return value === undefined
      ? 'is required'
      : `must be ${issue.expected === 'array' ? 'an array' : `a ${issue.expected}`}`;
  }
  return issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
}

/**
 * Parses `input` with a zod schema; on failure throws one validation_error naming the first
 * bad field, e.g. `to: is required` or `attachments[1].content: must be base64`.
 */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, root = 'body'): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw validationError(fieldPath(issue.path) || root, describe(issue, input));
}

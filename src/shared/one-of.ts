/** Whether `value` is one of `values`, narrowing it to their type (no cast at the call site). */
export const isOneOf = <T extends string>(values: readonly T[], value: unknown): value is T =>
  values.some((v) => v === value);

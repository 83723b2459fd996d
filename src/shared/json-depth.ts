/**
 * How deeply objects and arrays nest in a parsed JSON value: a scalar is 0, `{}` and `[]`
 * are 1, `{"a": [1]}` is 2. Counted with an explicit stack, never recursion, so a value
 * nested a million levels is measured rather than overflowing; stops once past `max`.
 */
export function jsonDepth(value: unknown, max = Number.POSITIVE_INFINITY): number {
  let deepest = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > deepest) deepest = depth;
    if (deepest > max) return deepest;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') stack.push({ value: child, depth: depth + 1 });
    }
  }
  return deepest;
}

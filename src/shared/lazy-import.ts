/**
 * A module imported on first use, then kept: features only some servers use (OAuth, MCP, CSS
 * inlining, two-factor, CSV imports, DMARC reports) stay out of an idle server's heap (issue 34).
 * A failed import is not kept, so the next use tries again.
 */
export function lazyImport<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((err: unknown) => {
      loading = undefined;
      throw err;
    }));
}

import type { Route } from './route.js';

/**
 * Resend's API has no version segment: the Resend SDK's natural base URL is the server
 * itself (`POST /emails`). Every resource of `/v1` is therefore also served at the root, by
 * the same routes: the request is rewritten to its `/v1` path before it reaches them.
 */

/** First path segments that belong to something else: the dashboard, links in mail, operations. */
const TAKEN = new Set(['dashboard', 't', 'a', 'r', 's', 'u', 'healthz', 'readyz', 'metrics', 'v1', 'api']);

/** The resources of the `/v1` routes (`emails`, `domains`, …); throws if one would shadow a public path. */
export function rootResources(routes: readonly Route[]): ReadonlySet<string> {
  const names = new Set(routes.filter((r) => r.path.startsWith('/v1/')).map((r) => r.path.split('/')[2]!));
  for (const name of names) {
    if (TAKEN.has(name) || name.includes('.'))
      throw new Error(`/v1/${name} cannot also be served at /${name}: the root path is taken`);
  }
  return names;
}

/** The `/v1` path a root path stands for, or undefined when its first segment is no API resource. */
export function v1PathOf(path: string, resources: ReadonlySet<string>): string | undefined {
  const first = path.split('/')[1] ?? '';
  return resources.has(first) ? `/v1${path}` : undefined;
}

import type { FreeSpace } from '../store/infra/free-space.js';

/**
 * What GET /readyz answers, for load balancers, orchestrators and systemd: whether this node
 * should get traffic now. Status words only, no addresses or messages: it is unauthenticated.
 */
export interface Readiness {
  ready: boolean;
  /** `reachable`, `unreachable` (the query failed) or `timeout` (no answer within the bound). */
  database: 'reachable' | 'unreachable' | 'timeout';
  /** `low` below `storage.minFreeBytes`: new mail is refused until space is freed. */
  storage: 'ok' | 'low';
}

/** A check of the database (a trivial query, bounded) and of the disk's reserve. */
export function readinessProbe(deps: {
  ping: () => Promise<unknown>;
  space: FreeSpace;
  timeoutMs: number;
}): () => Promise<Readiness> {
  return async () => {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), deps.timeoutMs)));
    const database = await Promise.race([
      deps.ping().then(
        () => 'reachable' as const,
        () => 'unreachable' as const,
      ),
      bound,
    ]);
    clearTimeout(timer);
    const storage = deps.space.ok() ? 'ok' : 'low';
    return { ready: database === 'reachable' && storage === 'ok', database, storage };
  };
}

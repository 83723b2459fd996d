import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who is acting, for the audit log: set by each surface where it knows (the HTTP adapter once
 * the API key is known, the dashboard once the session is, the CLI for its whole process) and
 * read where a change is recorded, so that no service signature has to carry it.
 */
interface Actor {
  type: 'api_key' | 'user' | 'dashboard' | 'cli' | 'system';
  /** The API key's id; the signed-in user's id; a shared-password or CLI-link session's hash prefix; null for the CLI and the server itself. */
  id: string | null;
  /** The client's address (behind the trusted proxies); null off HTTP. */
  address: string | null;
}

const scope = new AsyncLocalStorage<Actor>();

/** Runs `fn` as `actor`. */
export const actingAs = <T>(actor: Actor, fn: () => T): T => scope.run(actor, fn);

/** Who acts now: the server itself when no surface said. */
export const currentActor = (): Actor => scope.getStore() ?? { type: 'system', id: null, address: null };

import { AppError, validationError } from '../shared/errors.js';
import type { Db } from '../store/infra/db.js';
import {
  completeIdempotencyClaim,
  findIdempotencyRecord,
  insertIdempotencyClaim,
  removeIdempotencyClaim,
  takeOverIdempotencyClaim,
} from '../store/idempotency.js';
import type { ServiceDeps } from './deps.js';

export const IDEMPOTENCY_KEY_MAX = 256;
/** SPEC: keys are remembered for 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** A request holding a key longer than this is presumed dead, and the key may be taken over. */
const LOCK_MS = 60_000;

/** `replay`: the response the key answered first, its body as it was sent. */
type ClaimOutcome = { kind: 'proceed' } | { kind: 'replay'; status: number; body: unknown };

/** One claimed key: complete it in the transaction that commits the request's effects. */
export interface IdempotencyClaim {
  /** Records the response; pass the transaction that commits the request's effects when there is one. */
  complete(status: number, body: unknown, trx?: Db): Promise<void>;
  /** Whether complete() has been called. */
  readonly completed: boolean;
  /** Forget the claim (the request failed in a way a retry may fix). */
  release(): Promise<void>;
}

export interface IdempotencyService {
  /**
   * Claims `key` for a request whose body hashes to `requestHash`: proceed (a new request),
   * replay (the same request again: here is its response), or a 409 (another body, or the
   * first request is still in flight). Safe under concurrency and across nodes: the database's
   * unique key decides. `lockMs`: how long an unfinished claim keeps others out (a caller
   * holding a lease of its own passes the lease's length, so its successor can take over).
   */
  claim(
    workspaceId: string,
    key: string,
    requestHash: string,
    lockMs?: number,
  ): Promise<ClaimOutcome & { handle?: IdempotencyClaim }>;
}

function validateIdempotencyKey(key: string): string {
  if (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX)
    throw validationError('Idempotency-Key', `must be 1 to ${IDEMPOTENCY_KEY_MAX} characters`);
  return key;
}

export function createIdempotencyService(deps: ServiceDeps): IdempotencyService {
  const { db, clock } = deps;

  const handle = (workspaceId: string, key: string): IdempotencyClaim => {
    let completed = false;
    return {
      get completed() {
        return completed;
      },
      async complete(status, body, trx = db) {
        await completeIdempotencyClaim(trx, workspaceId, key, status, body);
        completed = true;
      },
      release: () => removeIdempotencyClaim(db, workspaceId, key),
    };
  };

  return {
    async claim(workspaceId, key, requestHash, lockMs = LOCK_MS) {
      validateIdempotencyKey(key);
      // Two passes at most: a lost race on insert or take-over reads the winner's record.
      for (let attempt = 0; attempt < 3; attempt++) {
        const now = clock.now();
        if (await insertIdempotencyClaim(db, workspaceId, key, requestHash, now, now + lockMs)) {
          return { kind: 'proceed', handle: handle(workspaceId, key) };
        }
        const existing = await findIdempotencyRecord(db, workspaceId, key);
        if (!existing) continue;
        const expired = existing.created_at + IDEMPOTENCY_TTL_MS <= now;
        const abandoned = existing.state === 'in_flight' && existing.locked_until <= now;
        if (expired || abandoned) {
          if (
            await takeOverIdempotencyClaim(db, workspaceId, key, existing.locked_until, requestHash, now, now + lockMs)
          ) {
            return { kind: 'proceed', handle: handle(workspaceId, key) };
          }
          continue;
        }
        if (existing.request_hash !== requestHash) {
          throw new AppError(
            'invalid_idempotent_request',
            'This Idempotency-Key was used with a different request body',
          );
        }
        if (existing.state === 'in_flight') {
          throw new AppError(
            'concurrent_idempotent_requests',
            'A request with this Idempotency-Key is still being processed; retry shortly',
            { retryAfter: 1 },
          );
        }
        return { kind: 'replay', status: existing.response_status!, body: existing.response_body };
      }
      throw new AppError(
        'concurrent_idempotent_requests',
        'A request with this Idempotency-Key is still being processed; retry shortly',
        { retryAfter: 1 },
      );
    },
  };
}

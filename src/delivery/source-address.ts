import type { Db } from '../store/infra/db.js';
import { listIpPools, type IpPoolRow } from '../store/ip-pools.js';

/**
 * Where a connection comes from: a pool's address with its EHLO name, or the system's (no
 * bind, delivery.hostname). An address that cannot be bound is an operator's error, shown by
 * `mailsvc doctor` and by the deferral of the mail: never a silent fallback to another address.
 */
export interface Source {
  /** The local address to bind; null: the system's choice. */
  address: string | null;
  ehlo: string;
  /** The pool's name; null: the default. */
  pool: string | null;
}

/** How long the pools read from the database are used before they are read again. */
const REFRESH_MS = 5000;

interface SourcePicker {
  /** The addresses of the pool (all of them), or the default source alone. */
  sourcesOf(poolId: string | null): Promise<Source[]>;
}

export function sourcePicker(db: Db, now: () => number, defaultEhlo: string): SourcePicker {
  const system: Source = { address: null, ehlo: defaultEhlo, pool: null };
  let pools = new Map<string, Source[]>();
  let readAt = -Infinity;
  let reading: Promise<void> | null = null;

  const read = () => {
    reading ??= listIpPools(db)
      .then((rows: IpPoolRow[]) => {
        pools = new Map(
          rows.map((p) => [p.id, p.addresses.map((a) => ({ address: a.address, ehlo: a.ehlo, pool: p.name }))]),
        );
        readAt = now();
      })
      .finally(() => {
        reading = null;
      });
    return reading;
  };

  return {
    async sourcesOf(poolId) {
      if (poolId === null) return [system];
      // A pool made since the last read is read at once; changes to known ones within REFRESH_MS.
      if (now() - readAt >= REFRESH_MS || !pools.has(poolId)) await read();
      const sources = pools.get(poolId);
      // Deleting a pool is refused while mail waits for it; one gone meanwhile sends as the default.
      return sources && sources.length > 0 ? sources : [system];
    },
  };
}

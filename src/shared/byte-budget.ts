/**
 * Bytes that may be held at once by work of one kind (large request bodies being read,
 * parsed and composed), taken whole before the work starts and given back after it: work
 * beyond the budget waits its turn, in the order it came, instead of growing the heap until
 * V8 ends the process. A single piece larger than the whole budget still runs, alone.
 * Everything is taken at once, never bit by bit, so holders never wait on each other.
 * Pieces under `from` bytes pass without counting: the budget is for the few large pieces,
 * not the many small ones that make up the load, which never wait for it.
 */
export interface ByteBudget {
  /** Waits until `bytes` fit (or nothing else is held), takes them; the returned function gives them back (once). */
  take(bytes: number): Promise<() => void>;
  /** Bytes held now, and pieces waiting: for tests and metrics. */
  held(): number;
  waiting(): number;
}

/** Messages from this size on (a body of the API, a submission by SMTP) count in the intakes' budget (`http.bodyMemory`). */
export const LARGE_MESSAGE = 1024 * 1024;

export function byteBudget(total: number, from = 0): ByteBudget {
  let held = 0;
  const queue: Array<{ bytes: number; go: () => void }> = [];
  const fits = (bytes: number) => held === 0 || held + bytes <= total;
  const admit = () => {
    // In arrival order: a large piece at the head is not overtaken by small ones forever.
    while (queue.length > 0 && fits(queue[0]!.bytes)) {
      const next = queue.shift()!;
      held += next.bytes;
      next.go();
    }
  };
  const release = (bytes: number) => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      held -= bytes;
      admit();
    };
  };
  return {
    take(bytes) {
      if (bytes < from) return Promise.resolve(() => {});
      if (queue.length === 0 && fits(bytes)) {
        held += bytes;
        return Promise.resolve(release(bytes));
      }
      return new Promise((resolve) => queue.push({ bytes, go: () => resolve(release(bytes)) }));
    },
    held: () => held,
    waiting: () => queue.length,
  };
}

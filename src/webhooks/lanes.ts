import type { WebhookJob } from './record-attempts.js';

/** One endpoint's share of this node. */
interface Lane {
  running: number;
  /** Claimed jobs waiting for a slot. */
  waiting: WebhookJob[];
  /** Its POSTs ended and it is low on waiting jobs: refill it at the next pass. */
  wantsMore: boolean;
  /** A claim for it is in progress: it must stay in the map, or what it claims is never started. */
  refilling: boolean;
  /** The last claim found fewer due rows than it asked for. */
  drained: boolean;
  lastClaimAt: number;
}

/** A lane claims up to this many times its concurrency ahead, so claims come in batches. */
const PREFETCH_FACTOR = 4;

/**
 * The endpoints' lanes on this node and the counts across them: at most `perEndpoint` POSTs in
 * a lane and `concurrency` in all, and a few times as many claimed ahead, so that a slow
 * endpoint holds only its own lane while the others keep flowing. Lanes exist while they have
 * work or a claim under way.
 */
export class Lanes {
  private readonly lanes = new Map<string, Lane>();
  private readonly laneCapacity: number;
  private readonly maxClaimed: number;
  /** POSTs running, across lanes. */
  private sending = 0;
  /** Jobs running or waiting, across lanes. */
  claimed = 0;

  constructor(
    private readonly perEndpoint: number,
    private readonly concurrency: number,
  ) {
    this.laneCapacity = (1 + PREFETCH_FACTOR) * perEndpoint;
    this.maxClaimed = (1 + PREFETCH_FACTOR) * concurrency;
  }

  lane(endpointId: string): Lane {
    let l = this.lanes.get(endpointId);
    if (!l)
      this.lanes.set(
        endpointId,
        (l = { running: 0, waiting: [], wantsMore: false, refilling: false, drained: false, lastClaimAt: 0 }),
      );
    return l;
  }

  dropIfIdle(endpointId: string, l: Lane): void {
    if (l.running === 0 && l.waiting.length === 0 && !l.wantsMore && !l.refilling && this.lanes.get(endpointId) === l)
      this.lanes.delete(endpointId);
  }

  /** How many rows a claim for this lane may bring: its room, within the node's. */
  room(l: Lane): number {
    return Math.min(this.laneCapacity - l.running - l.waiting.length, this.maxClaimed - this.claimed);
  }

  get full(): boolean {
    return this.claimed >= this.maxClaimed;
  }

  /** Endpoints whose lanes have no room: a search for due rows passes them by. */
  busyEndpoints(): string[] {
    return [...this.lanes].filter(([, l]) => l.running + l.waiting.length >= this.laneCapacity).map(([id]) => id);
  }

  /** Lanes that asked for more (a snapshot: refilling may drop lanes). */
  wanting(): Array<[string, Lane]> {
    return [...this.lanes].filter(([, l]) => l.wantsMore);
  }

  /**
   * Takes the next waiting job of a lane with a free slot, the slot with it; undefined when no
   * lane and node have room. `release` gives the slot back.
   */
  take(): { endpointId: string; lane: Lane; job: WebhookJob } | undefined {
    if (this.sending >= this.concurrency) return undefined;
    for (const [endpointId, l] of this.lanes) {
      if (l.running < this.perEndpoint && l.waiting.length > 0) {
        l.running++;
        this.sending++;
        return { endpointId, lane: l, job: l.waiting.shift()! };
      }
    }
    return undefined;
  }

  /** A POST ended: its slot is free. Returns whether the lane is low enough on waiting jobs to claim a batch (half the prefetch depth). */
  release(l: Lane): boolean {
    l.running--;
    this.sending--;
    return l.waiting.length <= (PREFETCH_FACTOR * this.perEndpoint) / 2 && !l.wantsMore;
  }

  /** A stop: the waiting jobs leave the lanes (their rows go back). */
  halt(): WebhookJob[] {
    const waiting = [...this.lanes.values()].flatMap((l) => l.waiting.splice(0));
    this.claimed -= waiting.length;
    return waiting;
  }
}

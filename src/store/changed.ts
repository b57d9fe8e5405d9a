/**
 * The consumers of an in-process store's `takeChanged` (memory.ts): each consumer (a worker, a change
 * hub) gets the runs committed since its own last take, with their seq; one consumer's take never
 * empties another's. A consumer's first take says 'unknown' (it heard of nothing before it asked), and
 * so does a take after more than MAX_RUNS runs changed (the map is dropped, not grown).
 */

/** Runs a consumer's map holds before it gives up and says 'unknown' once. */
const MAX_RUNS = 10_000;

interface Consumer {
  runs: Map<string, number>;
  unknown: boolean;
}

export class ChangedRuns {
  private readonly consumers = new Map<object, Consumer>();

  /** `runId` committed up to `seq`: every consumer hears of it (nothing to do without consumers). */
  note(runId: string, seq: number): void {
    for (const c of this.consumers.values()) {
      if (c.unknown) continue;
      if (c.runs.size >= MAX_RUNS && !c.runs.has(runId)) {
        c.unknown = true;
        c.runs = new Map();
      } else c.runs.set(runId, seq);
    }
  }

  take(consumer: object): ReadonlyMap<string, number> | 'unknown' {
    const c = this.consumers.get(consumer);
    if (!c) {
      this.consumers.set(consumer, { runs: new Map(), unknown: false });
      return 'unknown';
    }
    const out = c.unknown ? 'unknown' : c.runs;
    c.runs = new Map();
    c.unknown = false;
    return out;
  }

  forget(consumer: object): void {
    this.consumers.delete(consumer);
  }
}

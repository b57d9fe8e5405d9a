/**
 * A worker's free slots shared out between the runs that may claim now, max-min fair: each slot goes to
 * the run that holds the fewest of this worker's slots counting those it was given so far, ties to the
 * run that comes first (the worker's runs in the order it took them up, oldest first). So a run of three
 * phases started beside a 10,000-item fan-out gets its next slot as soon as one frees, where first come,
 * first served made it wait for the whole fan; two wide runs converge on half the slots each; and runs
 * of one ready task each (thousands of small runs) are still taken oldest first, as a queue's jobs are.
 *
 * Work-conserving: every slot is given while some run wants more (`want`: what its ready set could take;
 * Infinity for a run whose commit may make tasks ready, a completion's successors). Levels are filled in
 * passes over the runs still wanting, so a turn costs O(runs) for runs of one ready task each, and at most
 * (held + free) passes over the few wide runs; passes in which every run still wanting stands level are
 * made in one step (one wide run and a million free slots: one step, not a million passes).
 */
export interface SlotClaim {
  /** Slots of this worker the run holds now (its running attempts). */
  held: number;
  /** The most it could use: its ready tasks, or Infinity when its commit may make more ready. */
  want: number;
}

/** How many of `free` slots each run gets (same order as `runs`). */
export function shareSlots(free: number, runs: readonly SlotClaim[]): number[] {
  // one run (a chain's every turn): it gets what it wants of the free slots
  if (runs.length === 1) return [runs[0]!.want > 0 ? Math.max(0, Math.min(free, runs[0]!.want)) : 0];
  const caps = runs.map(() => 0);
  let live: number[] = [];
  let level = Infinity;
  for (let i = 0; i < runs.length; i++) {
    if (runs[i]!.want > 0) {
      live.push(i);
      level = Math.min(level, runs[i]!.held);
    }
  }
  while (free > 0 && live.length > 0) {
    // every run still wanting at the same level: the passes to come would give each one slot a pass,
    // as long as the slots and their wants last, so those passes are made at once (a `--concurrency` of
    // millions once made as many passes: a look for work that never ended)
    if (live.every((i) => runs[i]!.held + caps[i]! === level)) {
      let step = Math.floor(free / live.length);
      for (const i of live) step = Math.min(step, runs[i]!.want - caps[i]!);
      if (step > 1) {
        for (const i of live) caps[i]! += step;
        free -= step * live.length;
        level += step;
        live = live.filter((i) => caps[i]! < runs[i]!.want);
        continue;
      }
    }
    const next: number[] = [];
    let lowest = Infinity;
    for (const i of live) {
      const r = runs[i]!;
      if (r.held + caps[i]! <= level) {
        caps[i]!++;
        // the last slot is given: the runs after this one get none (no need to walk thousands of them)
        if (--free === 0) break;
      }
      if (caps[i]! < r.want) {
        next.push(i);
        lowest = Math.min(lowest, r.held + caps[i]!);
      }
    }
    live = next;
    // the next pass starts at the lowest level still wanting (no empty passes between far-apart holdings)
    level = Math.max(level + 1, lowest);
  }
  return caps;
}

/**
 * A bounded min-heap of times: when the things a process let go of (the runs a serving worker
 * parked) come due, without keeping the things themselves. Only numbers: a worker that parked
 * thousands of runs holds a few bytes for each, up to `max` of them; past that, a time is dropped
 * (whoever keeps these falls back on polling for it).
 */
export class DueTimes {
  private readonly heap: number[] = [];

  constructor(readonly max: number) {}

  get size(): number {
    return this.heap.length;
  }

  /** The earliest time kept, or Infinity. */
  peek(): number {
    return this.heap[0] ?? Infinity;
  }

  add(t: number): void {
    if (!Number.isFinite(t) || this.heap.length >= this.max) return;
    const h = this.heap;
    let i = h.push(t) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]! <= t) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = t;
  }

  /** Drops every time at or before `now`. */
  dropUntil(now: number): void {
    while (this.heap.length > 0 && this.heap[0]! <= now) this.pop();
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const c = r < h.length && h[r]! < h[l]! ? r : l;
      if (h[c]! >= last) break;
      h[i] = h[c]!;
      i = c;
    }
    h[i] = last;
  }
}

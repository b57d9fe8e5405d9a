import { performance } from 'node:perf_hooks';

/**
 * The longest timeout a run or a gate may be given: 8.64e15 ms (about 273,790 years, the span of a JS
 * Date). A deadline is kept as an integer of ms (a PostgreSQL bigint): a longer one was refused by
 * PostgreSQL (22003, a store failure for a caller's number) and kept by the other stores as an instant
 * no Date can show.
 */
export const MAX_TIMEOUT_MS = 8.64e15;

/** Time as a port: the engine never reads the wall clock or sleeps directly, so tests never sleep. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Milliseconds on a clock that never steps (any origin): what durations such as a backoff are
   * measured on, in the same time as `sleep`. Without it, `now()` is used.
   */
  monotonic?(): number;
  /**
   * Test clocks only: a component with I/O in flight (a worker waiting on its store) registers a
   * probe that says whether it is quiet, so the clock moves only once the component has armed its
   * timers. Returns the function that unregisters it.
   */
  register?(quiet: () => boolean): () => void;
}

/** setTimeout's limit: longer delays fire at once (TimeoutOverflowWarning), so long sleeps are chained. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The wall clock for timestamps; sleeps measure their duration on the monotonic clock, so a step of
 * the system clock (NTP, a VM resumed) neither stretches nor cuts a lease renewal or a timeout.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const until = performance.now() + Math.max(0, ms);
      let timer: NodeJS.Timeout;
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const arm = (): void => {
        const left = until - performance.now();
        timer = setTimeout(
          () => {
            if (until - performance.now() > 0) return arm();
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          Math.min(Math.max(0, left), MAX_TIMER_MS),
        );
      };
      arm();
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/**
 * A clock `offsetMs` ahead of `base` (behind when negative); sleeps are the base's. A testing aid: one
 * process with a skewed clock among others (`BATON_CLOCK_OFFSET_MS`, read by the CLI).
 */
export function offsetClock(base: Clock, offsetMs: number): Clock {
  return { now: () => base.now() + offsetMs, sleep: (ms, signal) => base.sleep(ms, signal), monotonic: () => (base.monotonic ? base.monotonic() : base.now()) };
}

interface Sleeper {
  at: number;
  resolve: () => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/**
 * A clock that only moves when told to. `advance(ms)` fires every sleeper due by then, in time order,
 * letting promise continuations run between them, so retries with backoff and timeouts are tested
 * without real sleeps.
 */
export class ManualClock implements Clock {
  private t: number;
  private sleepers: Sleeper[] = [];
  private readonly probes = new Set<() => boolean>();
  constructor(start = 0) {
    this.t = start;
  }
  now(): number {
    return this.t;
  }
  monotonic(): number {
    return this.t;
  }
  register(quiet: () => boolean): () => void {
    this.probes.add(quiet);
    return () => this.probes.delete(quiet);
  }

  /**
   * Lets promise continuations run, then (when components registered probes) waits in real time
   * until every one is quiet: a store's I/O has no microtask bound. However long that takes: time
   * never moves under a component at work. It used to move after 10 s, and a PostgreSQL call that
   * took that long on a loaded machine then woke a worker's day-long lease renewal first, as if
   * 8 hours had passed (a test's own timeout is what ends a component that never gets quiet).
   */
  private async quiet(): Promise<void> {
    for (;;) {
      await flushMicrotasks();
      // checked last, with no await after it: what the caller does next sees the components quiet
      if (this.probes.size === 0 || [...this.probes].every((p) => p())) return;
      await new Promise<void>((r) => setTimeout(r, 1));
    }
  }

  /** Fires the sleepers due by `this.t`, in time order (synchronously: chosen from a quiet state). */
  private fireDue(): void {
    this.sleepers.sort((a, b) => a.at - b.at);
    while (this.sleepers.length > 0 && this.sleepers[0]!.at <= this.t) {
      const next = this.sleepers.shift()!;
      next.signal?.removeEventListener('abort', next.onAbort);
      next.resolve();
    }
  }

  /** Number of sleeps waiting to fire. */
  get pending(): number {
    return this.sleepers.length;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const sleeper: Sleeper = {
        at: this.t + Math.max(0, ms),
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener('abort', sleeper.onAbort, { once: true });
      this.sleepers.push(sleeper);
    });
  }
  /**
   * Moves time forward by `ms` at once, from inside a component's I/O (a store call that takes
   * simulated time): wakes the sleepers due by then without waiting for anyone to be quiet.
   */
  jump(ms: number): void {
    this.t += Math.max(0, ms);
    this.fireDue();
  }

  /** Moves time forward by `ms`, waking sleepers in order. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      await this.quiet();
      this.sleepers.sort((a, b) => a.at - b.at);
      const next = this.sleepers[0];
      if (!next || next.at > target) break;
      this.t = next.at;
      this.fireDue();
    }
    this.t = target;
    await this.quiet();
  }
  /** Advances to the next sleeper's wake-up time (if any), firing what is due then. */
  async tick(): Promise<boolean> {
    await this.quiet();
    this.sleepers.sort((a, b) => a.at - b.at);
    const next = this.sleepers[0];
    if (!next) return false;
    this.t = Math.max(this.t, next.at);
    this.fireDue();
    await this.quiet();
    return true;
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}

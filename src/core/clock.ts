/** Time as a port: the engine never reads the wall clock or sleeps directly, so tests never sleep. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

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
  constructor(start = 0) {
    this.t = start;
  }
  now(): number {
    return this.t;
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
  /** Moves time forward by `ms`, waking sleepers in order. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    for (;;) {
      await flushMicrotasks();
      this.sleepers.sort((a, b) => a.at - b.at);
      const next = this.sleepers[0];
      if (!next || next.at > target) break;
      this.sleepers.shift();
      this.t = next.at;
      next.signal?.removeEventListener('abort', next.onAbort);
      next.resolve();
    }
    this.t = target;
    await flushMicrotasks();
  }
  /** Advances to the next sleeper's wake-up time (if any). */
  async tick(): Promise<boolean> {
    await flushMicrotasks();
    this.sleepers.sort((a, b) => a.at - b.at);
    const next = this.sleepers[0];
    if (!next) return false;
    await this.advance(next.at - this.t);
    return true;
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}

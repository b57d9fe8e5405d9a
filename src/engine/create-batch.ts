/**
 * Run creations gathered into store batches (`RunStore.createRuns`), as a database groups commits: a
 * creation goes at once while fewer than IN_FLIGHT are in flight; the ones that come meanwhile wait
 * for one to end and then go together, up to BATCH to a transaction. Runs started together (a service
 * taking requests, a script starting thousands at once) so share transactions, where each took one of
 * its own (a commit, and on SQLite FULL an fsync, per run), and a run started alone waits for nothing.
 * Each creation is answered on its own: a taken id refuses that run only. Below: `StoreWaits`, how
 * creations (and an engine's one-off commands) ride out a store that is away.
 */
import type { Clock } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import type { NewRun, RunStore } from './ports.js';
import type { StoreTrouble } from './worker-base.js';
import { backoff } from './worker-support.js';

/** Runs in one batch at most (the statement's arrays, one transaction). */
const BATCH = 256;
/** Batches in flight at once (PostgreSQL: each on a connection of the pool). */
const IN_FLIGHT = 4;

interface Waiting {
  init: NewRun;
  resolve: () => void;
  reject: (e: unknown) => void;
  /** Taken into a batch: from then on it goes to the store whatever its signal says. */
  sent?: () => void;
}

/**
 * How one creation waits. `retryMs`: how long it rides out a store that is away (default the engine's;
 * 0: one try, its failure the caller's at once). `signal`: abandons it while it has not been sent to the
 * store (queued behind other creations, or between two tries): it rejects with the signal's reason and
 * nothing is created. A creation already sent cannot be called back: its answer may be lost while it lands.
 */
export interface CreateWait {
  retryMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** What the engine creates runs through: `createRun` with how this one waits. */
export interface Creates {
  createRun(init: NewRun, wait?: CreateWait): Promise<void>;
}

export class CreateBatcher {
  private queue: Waiting[] = [];
  private inFlight = 0;

  constructor(private readonly store: RunStore) {}

  /** `signal`: a creation still queued when it aborts leaves the queue and rejects (nothing is created). */
  createRun(init: NewRun, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (!this.store.createRuns) return this.store.createRun(init);
    return new Promise<void>((resolve, reject) => {
      const w: Waiting = { init, resolve, reject };
      if (signal) {
        const drop = (): void => {
          const i = this.queue.indexOf(w);
          if (i < 0) return;
          this.queue.splice(i, 1);
          reject(signal.reason as Error);
        };
        signal.addEventListener('abort', drop, { once: true });
        w.sent = () => signal.removeEventListener('abort', drop);
      }
      this.queue.push(w);
      this.flush();
    });
  }

  private flush(): void {
    while (this.queue.length > 0 && this.inFlight < IN_FLIGHT) {
      // distinct ids in a batch: a second start with one id goes in a later batch (and is refused there)
      const batch: Waiting[] = [];
      const ids = new Set<string>();
      const rest: Waiting[] = [];
      for (const w of this.queue) {
        if (batch.length < BATCH && !ids.has(w.init.run.runId)) {
          ids.add(w.init.run.runId);
          batch.push(w);
        } else rest.push(w);
      }
      this.queue = rest;
      for (const w of batch) w.sent?.();
      this.inFlight++;
      let sent: Promise<readonly (Error | undefined)[]>;
      try {
        sent = batch.length === 1 ? this.store.createRun(batch[0]!.init).then(() => [undefined]) : this.store.createRuns!(batch.map((w) => w.init));
      } catch (e) {
        // a store of the caller's own that throws instead of rejecting: each creation of the batch is refused, none hangs
        sent = Promise.reject(e);
      }
      sent
        .then(
          (out) => {
            // an answer that does not say, run by run, what became of each: none is taken as created
            if (!Array.isArray(out) || out.length !== batch.length) {
              const e = new BatonError('store', `the store's createRuns answered ${Array.isArray(out) ? `${out.length} results` : typeof out} for ${batch.length} runs`);
              batch.forEach((w) => w.reject(e));
              return;
            }
            batch.forEach((w, i) => (out[i] === undefined ? w.resolve() : w.reject(out[i])));
          },
          (e: unknown) => batch.forEach((w) => w.reject(e)),
        )
        .finally(() => {
          this.inFlight--;
          this.flush();
        });
    }
  }
}

/** Store failures that waiting may cure: the store away (a restart, a network cut) or busy. */
function transient(e: unknown): boolean {
  return e instanceof BatonError && (e.code === 'store-unreachable' || e.code === 'store-locked');
}

/**
 * Store calls that ride out a store that is away, as a worker's commits do: a call that failed for a
 * reason waiting may cure goes again after a backoff (100 ms doubling to 5 s, with jitter), for up to
 * `retryMs`. Each try is told whether an earlier one failed: a call whose answer was lost may have
 * landed all the same, and the try after it must recognise its own work. `onTrouble` hears once when
 * calls start failing and once when they go through again, however many wait meanwhile (one
 * `StoreWaits` per engine).
 */
export class StoreWaits {
  // calls waiting out a failure now, and since when the first of them did
  private waiting = 0;
  private since = 0;

  constructor(
    private readonly clock: Clock,
    private readonly retryMs: number,
    private readonly onTrouble?: (t: StoreTrouble) => void,
  ) {}

  private mono(): number {
    return this.clock.monotonic ? this.clock.monotonic() : this.clock.now();
  }

  /** `o.retryMs` overrides the ride-out for this call (0: one try); `o.signal` ends the waiting between tries (its reason is thrown). */
  async run<T>(attempt: (again: boolean) => Promise<T>, o: { retryMs?: number | undefined; signal?: AbortSignal | undefined } = {}): Promise<T> {
    const retryMs = o.retryMs ?? this.retryMs;
    const started = this.mono();
    let failures = 0;
    let ok = false;
    try {
      for (;;) {
        try {
          const value = await attempt(failures > 0);
          ok = true;
          return value;
        } catch (e) {
          if (!transient(e) || this.mono() - started >= retryMs) throw e;
          if (o.signal?.aborted) throw o.signal.reason as Error;
          if (failures++ === 0 && this.waiting++ === 0) {
            this.since = this.mono();
            this.onTrouble?.({ state: 'down', message: (e as Error).message });
          }
          await this.clock.sleep(backoff(failures, 100, 5000), o.signal).catch(() => undefined);
          if (o.signal?.aborted) throw o.signal.reason as Error;
        }
      }
    } finally {
      if (failures > 0 && --this.waiting === 0 && ok) this.onTrouble?.({ state: 'up', downMs: Math.round(this.mono() - this.since) });
    }
  }
}

/**
 * Creations that ride out a store that is away (`StoreWaits`). A creation whose answer was lost may
 * have landed all the same: when a later try finds the id taken, the run stored under it is read, and
 * if it is the one this creation made (the same creation time and workflow) the creation succeeded. A
 * start that finds its id taken by another run is still refused (`run-exists`).
 */
export function retryingCreates(creates: Pick<RunStore, 'createRun'> | CreateBatcher, store: Pick<RunStore, 'run'>, waits: StoreWaits): Creates {
  return {
    createRun: (init: NewRun, wait: CreateWait = {}) =>
      waits.run(async (again) => {
        try {
          await creates.createRun(init, wait.signal);
        } catch (e) {
          if (!again || !(e instanceof BatonError) || e.code !== 'run-exists') throw e;
          const stored = await store.run(init.run.runId);
          if (stored === undefined || stored.createdAt !== init.run.createdAt || stored.workflowHash !== init.run.workflowHash) throw e;
        }
      }, wait),
  };
}

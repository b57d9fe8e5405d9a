/**
 * A run handle (`engine.start()` returns one): the run's id, its result, cancel, status, and its
 * events as an async iterator resumable from a `seq`. Built on the store port's public reads
 * (`run`, `events`, `waitForChange`, `takeChanged`) and the engine's public methods, so it observes a
 * run driven by this engine or by a worker in another process alike.
 */
import { BatonError } from '../core/errors.js';
import type { ChangeHub } from './changes.js';
import type { RunEvent, RunStatus } from '../engine/events.js';
import type { RunStore } from '../engine/ports.js';
import type { RunResult } from '../engine/result.js';

export interface RunEventsOptions {
  /** Yield events with `seq` greater than this (default 0: from the first event). */
  after?: number | undefined;
  /** Ends the iteration (quietly) when it aborts. */
  signal?: AbortSignal | undefined;
}

export interface RunHandle {
  readonly id: string;
  /** Drives the run on this engine (once; later calls share it) and resolves at its end. Rejects only on faults, never on a failed run. */
  result(): Promise<RunResult>;
  /** Cancels the run (the running attempts are told to stop). */
  cancel(reason?: string): Promise<void>;
  /** The stored status: running, waiting (a gate or a timer), completed, failed or cancelled. */
  status(): Promise<RunStatus>;
  /** The run's events in order, from `after`, ending when the run ends. */
  events(opts?: RunEventsOptions): AsyncIterableIterator<RunEvent>;
}

/** What a handle needs from the engine: its store and three of its public methods (and the engine's watches: on the runs it holds, on the others). */
export interface HandleHost {
  readonly store: RunStore;
  drive(runId: string, signal?: AbortSignal, opts?: { keepEvents?: boolean | undefined }): Promise<RunResult>;
  cancel(runId: string, reason?: string): Promise<void>;
  readonly watch?: HeldRuns | undefined;
  /** The engine's change hub on its store, for runs it does not hold (driven by another engine or process). */
  readonly changes?: ChangeHub | undefined;
}

/** How a run's events are waited for: its engine's watch when it holds the run, else the change hub (else the store's `waitForChange`). */
export interface RunWaits {
  held?: HeldRuns | undefined;
  hub?: ChangeHub | undefined;
}

/**
 * The runs an engine holds, and a wait woken when one of them moves on. A store's `waitForChange` wakes
 * at every commit of every run: with thousands of handles each waking and reading the store at every
 * commit of the others, their cost grew with the square of the runs (2,000 handles on memory: 43 s, on
 * SQLite over 5 minutes). A run held here moves on only through its worker, which says so.
 */
export interface HeldRuns {
  holds(runId: string): boolean;
  /** Resolves when `runId` moved on, after `maxMs`, or when `signal` aborts. Never rejects. */
  wait(runId: string, maxMs: number, signal: AbortSignal): Promise<void>;
}

/** The waits of an engine's handles on the runs its worker holds, woken by the worker (`onAdvance`). */
export class RunWatch {
  private readonly waiters = new Map<string, Set<() => void>>();

  wait(runId: string, maxMs: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      let set = this.waiters.get(runId);
      if (!set) this.waiters.set(runId, (set = new Set()));
      const ws = set;
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        ws.delete(done);
        if (ws.size === 0 && this.waiters.get(runId) === ws) this.waiters.delete(runId);
        resolve();
      };
      const timer = setTimeout(done, maxMs);
      signal.addEventListener('abort', done, { once: true });
      ws.add(done);
    });
  }

  /** `runId` moved on: its waiters read the store again. */
  notify(runId: string): void {
    const set = this.waiters.get(runId);
    if (set) for (const w of [...set]) w();
  }
}

/** How long one wait for a change lasts before the store is read again (a safety net; commits wake it sooner). */
const WAIT_MS = 1000;

export function runHandle(host: HandleHost, id: string, signal?: AbortSignal, opts: { keepEvents?: boolean | undefined } = {}): RunHandle {
  let driven: Promise<RunResult> | undefined;
  return {
    id,
    result: () => (driven ??= host.drive(id, signal, opts)),
    cancel: (reason) => host.cancel(id, reason),
    async status() {
      const r = await host.store.run(id);
      if (!r) throw new BatonError('unknown-run', `no run ${id} in ${host.store.location}`);
      return r.status;
    },
    events: (opts = {}) => runEvents(host.store, id, opts, { held: host.watch, hub: host.changes }),
  };
}

const TERMINAL = new Set<RunEvent['type']>(['run.completed', 'run.failed', 'run.cancelled']);
const ENDED = new Set<RunStatus>(['completed', 'failed', 'cancelled']);

/**
 * The events of a run with seq > `after`, in order, until its terminal event (or until `signal`
 * aborts). The wait for a change is armed before each read (a hub's version noted, with the hub kept
 * listening until the wait), so a commit between the read and the wait is never missed; an idle run
 * costs one read per commit of its own (per commit of any run without a hub on a store whose
 * `takeChanged` names them), or per WAIT_MS, never a busy loop.
 */
export async function* runEvents(store: RunStore, runId: string, opts: RunEventsOptions = {}, waits: RunWaits = {}): AsyncGenerator<RunEvent, void, undefined> {
  let seq = opts.after ?? 0;
  const signal = opts.signal;
  if (!Number.isInteger(seq) || seq < 0) throw new BatonError('usage', `events({ after }): expected a seq (an integer >= 0), got ${String(opts.after)}`);
  for (;;) {
    if (signal?.aborted) return;
    const stop = new AbortController();
    const onAbort = (): void => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const { held, hub } = waits;
    // armed before the read: a run held here waits for its own moves only (its worker reads others' commits);
    // another run waits on the hub (for its own run's commits), which listens from here to the wait
    const viaHub = hub !== undefined && !held?.holds(runId);
    let unsubscribe = viaHub ? hub.subscribe() : undefined;
    try {
      const seen = viaHub ? hub.version(runId) : 0;
      const woken = viaHub ? undefined : held?.holds(runId) ? held.wait(runId, WAIT_MS, stop.signal) : store.waitForChange(WAIT_MS, stop.signal);
      const batch = await store.events(runId, seq);
      if (batch.length > 0) {
        // read again after the batch: the hub need not listen while the caller holds an event
        unsubscribe?.();
        unsubscribe = undefined;
      }
      for (const e of batch) {
        seq = e.seq;
        yield e;
        if (TERMINAL.has(e.type) || signal?.aborted) return;
      }
      if (batch.length > 0) continue;
      const record = await store.run(runId);
      if (!record) throw new BatonError('unknown-run', `no run ${runId} in ${store.location}`);
      // the terminal event lies at or before `after`: nothing more will come
      if (ENDED.has(record.status) && record.seq <= seq) return;
      await (woken ?? hub?.next(runId, seen, WAIT_MS, stop.signal));
    } finally {
      unsubscribe?.();
      signal?.removeEventListener('abort', onAbort);
      stop.abort();
    }
  }
}

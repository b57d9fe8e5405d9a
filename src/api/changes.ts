/**
 * One wait on the store's change notifications, fanned out to the readers of runs: the streams of a
 * server (one hub each), the handles of an engine on runs it does not hold (one hub each). Each reader
 * reads what it needs after a change; none polls on its own.
 *
 * Which readers wake: when the store's `takeChanged` names every run with a new commit (`targeted`:
 * memory and SQLite, the worker's own store object included, PostgreSQL with a store object of the
 * server's own listening to every commit), only the readers of the runs that changed, and the all-runs
 * readers. The hub is a consumer of `takeChanged` of its own, beside the worker's: each hears of every
 * commit. Otherwise (PostgreSQL's worker store object, which hears only commits that leave work), or
 * when the store says 'unknown' (a consumer's first take, a reconnect, an overflow), every reader.
 *
 * Invariant (no change is missed): a reader subscribes, notes its `version` BEFORE it reads the store,
 * then waits for a version above it (a stream stays subscribed for its life, a handle from its note to
 * the end of its wait). Versions only grow. While anyone is subscribed the hub keeps waiting on the
 * store and is a consumer of `takeChanged` throughout (it is forgotten only when nobody is), so a commit
 * that lands during a read is in a later take, raises the run's version after the note, and the reader
 * reads again. A consumer's first take says 'unknown', which covers the commits before it registered.
 */
import type { RunStore } from '../engine/ports.js';

/** The longest a wait on the store lasts (a safety net; commits wake it sooner). */
const WAIT_MS = 1000;
/** Runs whose last change is remembered; past this, every stream is woken once and the memory dropped. */
const MAX_TRACKED = 10_000;

interface Waiter {
  runId: string | undefined;
  done: () => void;
}

export class ChangeHub {
  private tick = 0;
  /** The tick of the last change that may concern every run. */
  private everyRun = 0;
  /** The tick of the last change of any run (what the all-runs streams wait for). */
  private anyRun = 0;
  private readonly runs = new Map<string, number>();
  private readonly waiters = new Set<Waiter>();
  private open = 0;
  private loop: Promise<void> | undefined;
  private readonly stop = new AbortController();

  /** `targeted` (default: the store says its takeChanged is complete): `takeChanged` says which runs changed. */
  constructor(
    private readonly store: RunStore,
    private readonly targeted = store.changesComplete === true && typeof store.takeChanged === 'function',
  ) {}

  /** The version a stream of `runId` (undefined: of every run) notes before it reads. */
  version(runId?: string): number {
    return Math.max(this.everyRun, runId === undefined ? this.anyRun : (this.runs.get(runId) ?? 0));
  }

  /**
   * The runs whose version passed `seen` (noted with `version()` before a read), or 'all' when a change
   * since then may concern any run (the store could not say which, or the hub forgot past MAX_TRACKED).
   * What the all-runs streams read after a wake: the runs that changed, old ones included.
   */
  changedSince(seen: number): ReadonlySet<string> | 'all' {
    if (this.everyRun > seen) return 'all';
    const out = new Set<string>();
    if (this.anyRun <= seen) return out;
    for (const [id, tick] of this.runs) if (tick > seen) out.add(id);
    return out;
  }

  /** A stream is open: the hub keeps waiting on the store until the returned function is called. */
  subscribe(): () => void {
    this.open++;
    this.loop ??= this.run();
    let closed = false;
    return () => {
      if (!closed) this.open--;
      closed = true;
    };
  }

  /** Resolves when `runId`'s version (undefined: any run's) passes `seen`, after `maxMs`, or when `signal` aborts. Never rejects. */
  next(runId: string | undefined, seen: number, maxMs: number, signal?: AbortSignal): Promise<void> {
    if (this.version(runId) > seen || signal?.aborted || this.stop.signal.aborted) return Promise.resolve();
    const p = new Promise<void>((resolve) => {
      const w: Waiter = {
        runId,
        done: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', w.done);
          this.waiters.delete(w);
          resolve();
        },
      };
      const timer = setTimeout(w.done, maxMs);
      signal?.addEventListener('abort', w.done, { once: true });
      this.waiters.add(w);
    });
    // after the waiter is in: the loop ends when it finds nobody waiting and no stream open
    this.loop ??= this.run();
    return p;
  }

  private async run(): Promise<void> {
    // Started by a reader that has not noted a version yet (subscribe: it notes and reads after this
    // call returns, and this part runs before the first await, within the call): the first take only
    // makes the hub a consumer, so that every commit after it is named. Its 'unknown' need not wake
    // anybody; as a wake-up it made every all-runs stream's next read a read of the newest runs only, not
    // of the runs that changed. Started by a waiter (next), which read before the hub listened, the
    // first take's 'unknown' wakes it as before.
    if (this.targeted && this.waiters.size === 0) {
      try {
        this.store.takeChanged?.(this);
      } catch {
        // the store is away: the loop's first take says 'unknown' then, and wakes every reader
      }
    }
    while (!this.stop.signal.aborted) {
      if (this.waiters.size === 0 && this.open === 0) {
        this.loop = undefined;
        // an idle hub costs the store nothing; the next loop's first take says 'unknown' (wakes all once)
        if (this.targeted) this.store.forgetChanged?.(this);
        return;
      }
      await this.store.waitForChange(WAIT_MS, this.stop.signal);
      if (this.stop.signal.aborted) return;
      const changed = this.targeted ? (this.store.takeChanged?.(this) ?? 'unknown') : 'unknown';
      if (changed === 'unknown' || this.runs.size + changed.size > MAX_TRACKED) {
        this.everyRun = ++this.tick;
        this.runs.clear();
        for (const w of [...this.waiters]) w.done();
        continue;
      }
      if (changed.size === 0) continue; // the wait timed out: nothing changed
      this.anyRun = ++this.tick;
      for (const id of changed.keys()) this.runs.set(id, this.tick);
      for (const w of [...this.waiters]) if (w.runId === undefined || changed.has(w.runId)) w.done();
    }
  }

  close(): void {
    this.stop.abort();
    if (this.targeted) this.store.forgetChanged?.(this);
    for (const w of [...this.waiters]) w.done();
  }
}

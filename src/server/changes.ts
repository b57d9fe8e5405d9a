/**
 * One wait on the store's change notifications for the whole server, fanned out to every open
 * stream. Each stream reads what it needs after a change; none polls on its own.
 *
 * The server does not call `takeChanged`: it is the worker's (one consumer per store object), and a
 * second consumer would take the changes the worker needs to see.
 *
 * Invariant (no change is missed): a stream notes `version` BEFORE it reads the store, then waits
 * for a version above it. A commit that lands during the read wakes the hub after the note, so the
 * stream reads again.
 */
import type { RunStore } from '../engine/ports.js';

/** The longest a wait lasts without a notification (a safety net; commits wake it sooner). */
const WAIT_MS = 1000;

export class ChangeHub {
  private v = 0;
  private waiters = new Set<() => void>();
  private open = 0;
  private loop: Promise<void> | undefined;
  private readonly stop = new AbortController();

  constructor(private readonly store: RunStore) {}

  get version(): number {
    return this.v;
  }

  /**
   * A stream is open: the hub keeps waiting on the store until it closes (the returned function), so
   * that a commit while the stream reads is seen (a hub that started waiting only after the read
   * would wait for the next commit instead).
   */
  subscribe(): () => void {
    this.open++;
    this.loop ??= this.run();
    let closed = false;
    return () => {
      if (!closed) this.open--;
      closed = true;
    };
  }

  /** Resolves when the version passes `seen`, or after `maxMs`, or when `signal` aborts. Never rejects. */
  next(seen: number, maxMs: number, signal?: AbortSignal): Promise<void> {
    if (this.v > seen || signal?.aborted || this.stop.signal.aborted) return Promise.resolve();
    const p = new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, maxMs);
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
    // after the waiter is in: the loop ends when it finds nobody waiting
    this.loop ??= this.run();
    return p;
  }

  private async run(): Promise<void> {
    while (!this.stop.signal.aborted) {
      // only while someone listens: an idle server makes no calls
      if (this.waiters.size === 0 && this.open === 0) {
        this.loop = undefined;
        return;
      }
      await this.store.waitForChange(WAIT_MS, this.stop.signal);
      this.v++;
      for (const w of [...this.waiters]) w();
    }
  }

  close(): void {
    this.stop.abort();
    for (const w of [...this.waiters]) w();
  }
}

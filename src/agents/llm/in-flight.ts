/**
 * The worst cases of a run's model calls in flight here. The budget check before a call reads what the run
 * has spent, so calls that parallel phases make at the same moment each fit what is left and, together,
 * overspend it. A call whose worst case fits only while the others in flight cost nothing waits for one of
 * them to end (its cost is then counted), and checks again. One per run's LLM binding (bind.ts).
 */
export class InFlightCosts {
  private total = 0;
  private readonly waiters = new Set<() => void>();

  /** The worst cases of the calls in flight. */
  get reserved(): number {
    return this.total;
  }

  /** Holds `usd` until the returned function is called (once; later calls do nothing). */
  hold(usd: number): () => void {
    this.total += usd;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.total = Math.max(0, this.total - usd);
      for (const w of [...this.waiters]) w();
    };
  }

  /** Resolves when a call in flight ends; rejects when `signal` aborts. */
  changed(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(new Error('aborted'));
    return new Promise<void>((resolve, reject) => {
      const done = (): void => {
        this.waiters.delete(done);
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.waiters.delete(done);
        reject(new Error('aborted'));
      };
      this.waiters.add(done);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** The in-memory store: a real store (appends are checked and ordered), kept for the process's life. */
import { BatonError } from '../core/errors.js';
import type { RunEvent } from '../engine/events.js';
import type { RunMeta, RunStore } from '../engine/ports.js';

export class MemoryStore implements RunStore {
  private readonly logs = new Map<string, RunEvent[]>();
  private readonly metas = new Map<string, RunMeta>();

  createRun(meta: RunMeta): void {
    if (this.metas.has(meta.runId)) throw new BatonError('store', `run ${meta.runId} already exists`);
    this.metas.set(meta.runId, meta);
    this.logs.set(meta.runId, []);
  }

  append(runId: string, events: readonly RunEvent[]): void {
    const log = this.logs.get(runId);
    if (!log) throw new BatonError('store', `unknown run ${runId}`);
    let last = log.length > 0 ? log[log.length - 1]!.seq : 0;
    for (const e of events) {
      if (e.seq !== last + 1) throw new BatonError('store', `run ${runId}: event seq ${e.seq} does not follow ${last}`);
      last = e.seq;
    }
    for (const e of events) log.push(e);
  }

  events(runId: string): readonly RunEvent[] {
    return this.logs.get(runId) ?? [];
  }

  runs(): readonly RunMeta[] {
    return [...this.metas.values()];
  }
}

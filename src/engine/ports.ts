/**
 * The engine's ports: where runs are kept, and (agent.ts) what agents look like. The engine imports
 * no adapter; the composition root (api/) plugs a store and agents in.
 */
import type { RunEvent } from './events.js';

export interface RunMeta {
  runId: string;
  workflow: string;
  createdAt: number;
}

/**
 * A run store keeps each run's event log. Appends are ordered and atomic per call: either every
 * event of a batch is kept or none is. The engine appends at its commit points (before an agent is
 * handed a task, after a task's outcome), so a run can be rebuilt from the log.
 */
export interface RunStore {
  createRun(meta: RunMeta): void | Promise<void>;
  append(runId: string, events: readonly RunEvent[]): void | Promise<void>;
  events(runId: string): readonly RunEvent[] | Promise<readonly RunEvent[]>;
  runs(): readonly RunMeta[] | Promise<readonly RunMeta[]>;
}

/**
 * `baton run --state-out FILE`: the run in the workflow-state shape, kept current while it goes
 * (written at most every 200 ms, and at the end; each write replaces the file whole, through a rename).
 */
import { renameSync, writeFileSync } from 'node:fs';
import type { JsonObject } from '../core/json.js';
import type { RunEvent } from '../engine/events.js';
import type { RunState } from '../engine/state.js';
import { workflowState } from '../api/workflow-state.js';
import type { WorkflowModel } from '../workflow/model.js';

export class StateOut {
  private readonly provenance: RunEvent[] = [];
  private last: RunState | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly path: string,
    private readonly model: WorkflowModel,
    private readonly initialState: JsonObject | undefined,
  ) {}

  update(e: RunEvent, state: RunState): void {
    if (e.type === 'task.agent_event' && (e.kind === 'file_read' || e.kind === 'file_written')) this.provenance.push(e);
    this.last = state;
    this.timer ??= setTimeout(() => this.flush(), 200);
  }

  /** Writes the latest state now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.last) return;
    const tmp = `${this.path}.tmp-${process.pid}`;
    writeFileSync(tmp, JSON.stringify(workflowState(this.last, this.model, this.provenance, this.initialState), null, 2) + '\n');
    renameSync(tmp, this.path);
  }
}

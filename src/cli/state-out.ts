/**
 * `baton run --state-out FILE`: the run in the workflow-state shape, kept current while it goes
 * (written at most every 200 ms, and at the end; each write replaces the file whole, through a rename).
 * The path is checked before the run starts (outputProblem); a write that fails during the run (the
 * directory was removed, the disk is full) is a warning line, said once, never the end of the run.
 */
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { JsonObject } from '../core/json.js';
import type { RunEvent } from '../engine/events.js';
import type { RunState } from '../engine/state.js';
import { workflowState } from '../api/workflow-state.js';
import { fsReason } from './output.js';
import { isFileEvent } from '../api/artifacts.js';
import type { WorkflowModel } from '../workflow/model.js';

export class StateOut {
  private readonly provenance: RunEvent[] = [];
  private last: RunState | undefined;
  private timer: NodeJS.Timeout | undefined;
  private warned = false;

  constructor(
    private readonly path: string,
    private readonly model: WorkflowModel,
    private readonly initialState: JsonObject | undefined,
    private readonly warn: (message: string) => void,
    private readonly shown: string = path,
  ) {}

  update(e: RunEvent, state: RunState): void {
    if (isFileEvent(e)) this.provenance.push(e);
    this.last = state;
    this.timer ??= setTimeout(() => this.flush(), 200);
  }

  /** Writes the latest state now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.last) return;
    const tmp = `${this.path}.tmp-${process.pid}`;
    try {
      writeFileSync(tmp, JSON.stringify(workflowState(this.last, this.model, this.provenance, this.initialState), null, 2) + '\n');
      renameSync(tmp, this.path);
      this.warned = false;
    } catch (e) {
      rmSync(tmp, { force: true });
      if (this.warned) return;
      this.warned = true;
      this.warn(`warning: cannot write --state-out ${this.shown} (${this.why(e)}); the run goes on and the store keeps it (baton show RUN --state)`);
    }
  }

  private why(e: unknown): string {
    const code = (e as NodeJS.ErrnoException).code;
    // ENOENT also comes from a directory that takes no new files (/proc): say "gone" only when it is
    if (code === 'ENOENT') return existsSync(dirname(this.path)) ? 'no file can be made there' : 'its directory is gone';
    return fsReason(e);
  }
}

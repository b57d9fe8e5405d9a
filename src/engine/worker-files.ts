/**
 * The worker's side of AIP-16 output files (files.ts): an attempt's files wait for the decision on its
 * outcome and are synced only once its completion is committed; the run's attempts start, and its
 * result is given, once that is done; roots a process that died left are tidied (files-leftovers.ts),
 * when a run is taken up and when it ends (end(), here: a run is put down once its files are done).
 */
import { StopSignal } from './attempt.js';
import type { Fact, FactResult } from './decide.js';
import type { RunEvent } from './events.js';
import type { HeldFiles } from './files.js';
import type { UnsyncedFile } from './files-leftovers.js';
import { toResult } from './result.js';
import { WorkerBase, type RunCtx } from './worker-base.js';

export abstract class WorkerFiles extends WorkerBase {
  /** Work on the run's files the run waits for (filesWork): its attempts start, and its result is given, after it. */
  protected filesJob(ctx: RunCtx, work: Promise<void>): void {
    const p = work.catch(() => undefined);
    ctx.filesWork.add(p);
    void p.finally(() => {
      ctx.filesWork.delete(p);
      this.kick();
    });
  }

  /** Finishes or removes the run's scratch roots left on this host (files-leftovers.ts); what could not be synced is a warning. */
  protected override tidyFiles(ctx: RunCtx): void {
    const files = ctx.files;
    if (!files) return;
    const events = (): Promise<readonly RunEvent[]> => (ctx.events ? Promise.resolve(ctx.events) : this.track(this.store.events(ctx.runId)));
    this.filesJob(
      ctx,
      files.tidy(ctx.state, events, (w) => w !== this.id && this.isOwnerDead(w)).then((failed) => {
        for (const f of failed) this.unsynced(ctx, f);
      }),
    );
  }

  /** An output file its completion recorded as synced that is not in the workspace: a task.warning says so. */
  protected unsynced(ctx: RunCtx, f: UnsyncedFile): void {
    this.note(ctx, { kind: 'warn', phase: f.phase, attempt: f.attempt, code: 'FileNotSynced', message: `output file \`${f.key}\` was recorded with the completion and could not be synced to ${f.path}: ${f.message}`, details: { key: f.key, path: f.path } });
  }

  /**
   * An attempt's output files are synced only after the completion that records them is committed,
   * and only if it was accepted: a stale, failed or rejected outcome (a cancelled fan-out item, a lost
   * lease, a run that ended) leaves the workspace untouched. So every file that lands in the workspace
   * has its `task.file` event; a crash between the commit and the sync leaves the root, whose files
   * the next worker to take the run up syncs (files-leftovers.ts).
   */
  protected settleFiles(ctx: RunCtx, facts: readonly Fact[], resultOf: (f: Fact, i: number) => FactResult | undefined): void {
    if (ctx.held.size === 0) return;
    facts.forEach((f, i) => {
      const held = ctx.held.get(f);
      if (!held || f.kind !== 'outcome') return;
      ctx.held.delete(f);
      const r = resultOf(f, i);
      if (r?.kind === 'outcome' && r.accepted) this.filesJob(ctx, this.publish(ctx, f, held));
      else this.filesJob(ctx, held.discard());
    });
  }

  private async publish(ctx: RunCtx, f: Extract<Fact, { kind: 'outcome' }>, held: HeldFiles): Promise<void> {
    this.fault('files.before-sync');
    const failed = await held.publish();
    for (const x of failed) this.unsynced(ctx, { phase: f.phase, attempt: f.attempt, ...x });
  }

  /**
   * The run ended: its attempts stop. A run with files is put down only once the files of its
   * accepted completions are synced and its leftover roots tidied; warnings about files that could
   * not be are committed first (a commit ends it again).
   */
  protected override end(ctx: RunCtx): void {
    if (ctx.ended || ctx.ending) return;
    for (const a of ctx.attempts.values()) a.abort(new StopSignal(`the run ${ctx.state.status}`));
    if (ctx.files === undefined && ctx.filesWork.size === 0) {
      ctx.ended = true;
      released(ctx);
      ctx.resolve(toResult(ctx.state, ctx.events ?? []));
      return;
    }
    ctx.ending = true;
    void (async () => {
      while (ctx.filesWork.size > 0) await Promise.all([...ctx.filesWork]);
      this.tidyFiles(ctx);
      while (ctx.filesWork.size > 0) await Promise.all([...ctx.filesWork]);
    })().then(() => {
      ctx.ending = false;
      if (this.crashed !== undefined) return;
      if (ctx.facts.length > 0 || ctx.flushing) {
        this.kick();
        return;
      }
      ctx.ended = true;
      released(ctx);
      ctx.resolve(toResult(ctx.state, ctx.events ?? []));
      this.kick();
    });
  }
}

/** What the run's handlers held (MCP servers started for it) is let go once, when the run has ended here. */
function released(ctx: RunCtx): void {
  const release = ctx.release;
  ctx.release = undefined;
  if (release) void release().catch(() => undefined);
}

/**
 * Scratch roots that outlived their attempt: a process killed mid-attempt (`kill -9`) leaves its
 * roots, and one killed between committing a completion and syncing its files leaves the only copy
 * of files the log already records as synced. A root's name says its run, task and attempt
 * (files.ts), so the worker that takes the run up, and the one that sees it end, can find them:
 *
 * - the root of an attempt whose completion was committed, by a worker that is gone: its recorded
 *   files (`task.file`, synced) are synced from it now, the sync its process did not live to do,
 *   unless a later attempt has written the same path since; then it is removed (a worker that is
 *   alive is syncing it itself);
 * - the root of an attempt that may still run somewhere (the task's current attempt, running,
 *   waiting for an answer, or about to be resumed; or one the state does not know yet: claimed after
 *   the state was read, as other workers of the host claim while this one takes the run up) stays:
 *   its owner, or the takeover, removes it;
 * - any other root of the run is removed (its attempt's outcome was not accepted, or never came).
 *
 * Only directories the stager made are touched (its naming, this user's, never a symbolic link).
 */
import type { RunEvent } from './events.js';
import { filesOfPhase } from '../workflow/files.js';
import type { FileStager, LeftoverRoot } from './files.js';
import type { AgentContract } from '../workflow/contract/model.js';
import type { WorkflowModel } from '../workflow/model.js';
import { foldedItem, itemKey, parseItemKey, type RunState } from './state.js';

/** An output file recorded as synced whose bytes could not be put in the workspace. */
export interface UnsyncedFile {
  phase: string;
  attempt: number;
  key: string;
  path: string;
  message: string;
}

/** A run's scratch roots beyond the attempts that run here (worker-base.ts BoundRun). */
export interface RunFiles {
  /**
   * Finishes or removes the roots of the run still on this host (above). `events` is read only when
   * a root of a completed attempt is found; such a root whose worker is alive (`gone` says not) is
   * left to it: it is syncing it now. Resolves to the files that could not be synced.
   */
  tidy(state: RunState, events: () => Promise<readonly RunEvent[]>, gone: (worker: string) => boolean): Promise<UnsyncedFile[]>;
}

export function runFiles(opts: { stager: FileStager; stagerFor?: (workspace: string) => FileStager; model: WorkflowModel; contracts: ReadonlyMap<string, AgentContract> }): RunFiles {
  const { stager, model } = opts;
  return {
    async tidy(state, events, gone) {
      const roots = (await stager.leftovers?.(state.runId).catch(() => [])) ?? [];
      const failed: UnsyncedFile[] = [];
      let log: readonly RunEvent[] | undefined;
      for (const r of roots) {
        const key = keyOf(model, r);
        const p = key === undefined ? undefined : state.phases.get(key);
        if (state.status === 'running') {
          // an attempt the state has not seen claimed yet (a claim committed after it was read: the root
          // is made once the claim is) may run now, in another worker of this host; so may an item not
          // opened in it (a fan-out item settled and folded out of it is handled below)
          if (key !== undefined && (p ? r.attempt > p.attempts : foldedItem(state, key) === undefined)) continue;
          const current = p !== undefined && (p.status === 'running' || p.status === 'suspended_awaiting_input') && p.attempts === r.attempt;
          if (current || p?.resumable?.attempt === r.attempt) continue;
        }
        // completed, as far as the state says: a fan-out item folded out of it keeps no attempt number (the log says)
        const done = key !== undefined && (p ? p.status === 'completed' && p.attempts === r.attempt : foldedItem(state, key) !== undefined);
        if (done) {
          log ??= await events();
          const owner = ownerOf(log, key, r.attempt);
          if (owner !== undefined && !gone(owner)) continue;
          failed.push(...(await finish(opts, state.runId, r, key, log)));
        }
        await r.remove();
      }
      return failed;
    },
  };
}

/** The task (`phase` or `phase[index]`) whose root it is, among the workflow's phases; undefined for none. */
function keyOf(model: WorkflowModel, r: LeftoverRoot): string | undefined {
  for (const pm of model.phases) {
    const key = r.item !== undefined ? itemKey(pm.name, r.item) : pm.name;
    if (r.isOf(key, r.attempt)) return key;
  }
  return undefined;
}

/** Syncs from the root what the attempt's completion recorded, each file unless a later write of its path was recorded. */
async function finish(opts: Parameters<typeof runFiles>[0], runId: string, r: LeftoverRoot, key: string, log: readonly RunEvent[]): Promise<UnsyncedFile[]> {
  if (!log.some((e) => e.type === 'task.completed' && e.phase === key && e.attempt === r.attempt)) return [];
  const files = log.filter((e): e is Extract<RunEvent, { type: 'task.file' }> => e.type === 'task.file' && e.direction === 'synced' && e.phase === key && e.attempt === r.attempt);
  if (files.length === 0) return [];
  // the workspace the attempt's files belong to: the run's, or one its agent names (defineAgent({workspace}))
  const phase = parseItemKey(key)?.parent ?? key;
  const pm = opts.model.byName.get(phase);
  const decl = pm ? filesOfPhase(opts.model, opts.contracts, phase, agentOf(log, key, r.attempt) ?? pm.assign) : undefined;
  let root: Pick<LeftoverRoot, 'sync'> | undefined = r;
  if (decl?.workspace !== undefined && opts.stagerFor) root = (await opts.stagerFor(decl.workspace).leftovers?.(runId).catch(() => []))?.find((x) => x.path === r.path);
  const failed: UnsyncedFile[] = [];
  for (const f of files) {
    if (log.some((e) => e.type === 'task.file' && e.direction === 'synced' && e.path === f.path && e.seq > f.seq)) continue;
    const fail = (message: string): void => void failed.push({ phase: key, attempt: r.attempt, key: f.key, path: f.path, message });
    if (!root) {
      fail('its workspace cannot be reached from here');
      continue;
    }
    try {
      if ((await root.sync(f.key, f.path, f)) === 'missing') fail('it is gone from the scratch root');
    } catch (e) {
      fail((e as Error).message);
    }
  }
  return failed;
}

/** The agent that ran the attempt (its claim says). */
function agentOf(log: readonly RunEvent[], key: string, attempt: number): string | undefined {
  for (const e of log) if (e.type === 'task.claimed' && e.phase === key && e.attempt === attempt) return e.agent;
  return undefined;
}

/** The worker that last held the attempt (its claim, or its resume after an answer): it syncs the files of its completion. */
function ownerOf(log: readonly RunEvent[], key: string, attempt: number): string | undefined {
  let owner: string | undefined;
  for (const e of log) if ((e.type === 'task.claimed' || e.type === 'task.resumed') && e.phase === key && e.attempt === attempt && e.worker !== undefined) owner = e.worker;
  return owner;
}

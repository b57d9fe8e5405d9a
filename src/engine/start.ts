/**
 * Starting a run, and one-off commands on a stored run (a gate decision, a cancel) made by a
 * process that does not drive it: each is one transaction through the same decisions.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Clock } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import type { Json, JsonObject } from '../core/json.js';
import type { WorkflowModel } from '../workflow/model.js';
import { decide, type Fact, type FactResult, type RerunOf } from './decide.js';
import { planOf } from './plan.js';
import type { RunRecord, RunStore, WorkflowRecord } from './ports.js';
import type { RunEvent } from './events.js';
import { buildCommit } from './projection.js';
import { applyEvent, attachGraph, initialState, type RunState } from './state.js';
import { nextTimer } from './due.js';
import { loadState } from './snapshot.js';


export interface StartOptions {
  runId: string;
  trigger?: Json;
  initialState?: JsonObject;
  /** Run timeout in ms (overrides governance.timeout_hours). */
  timeoutMs?: number;
  autoApprove?: boolean;
  /** How agents were bound, kept so a resume binds them the same way. */
  bindings?: JsonObject;
  /** Options that outlive the process (shown by `baton show`). */
  options?: JsonObject;
  /** Absolute path of the workflow file. */
  path?: string;
  rerunOf?: RerunOf;
}

/**
 * Each model's source and its hash, made once: the text of a workflow of thousands of phases is
 * hundreds of KB, hashed twice for every run (engine.run and startRun) before. Kept with the source
 * it was made from, so a hash is never given for another text.
 */
const sourceHashes = new WeakMap<WorkflowModel, { source: string; hash: string }>();

export function workflowRecord(model: WorkflowModel, path: string | undefined): WorkflowRecord {
  const source = model.sourceText ?? JSON.stringify({ note: 'compiled in memory; no source text', name: model.info.name });
  let h = sourceHashes.get(model);
  if (h === undefined || h.source !== source) sourceHashes.set(model, (h = { source, hash: createHash('sha256').update(source).digest('hex') }));
  return { hash: h.hash, name: model.info.name, source, path: path ?? model.file };
}

/**
 * Creates the run in the store: the run row, its workflow and its first events (run.started, ready
 * roots, gates that open at once), in one transaction. Returns the state after them and the events,
 * which the caller reports as a worker reports the events of its commits.
 */
/** `now`: the store's clock (Worker.storeTime), so that the run's deadline and gate expiries are in the time they are compared in. */
export async function startRun(store: Pick<RunStore, 'createRun'>, model: WorkflowModel, opts: StartOptions, now: number): Promise<{ state: RunState; events: RunEvent[]; record: RunRecord }> {
  const plan = planOf(model);
  const workflow = workflowRecord(model, opts.path);
  const state = initialState(opts.runId);
  state.trigger = opts.trigger ?? null;
  attachGraph(state, plan.dependsOn, plan.dependents, plan.assign);
  const timeoutMs = opts.timeoutMs ?? (model.governance.timeoutHours !== undefined ? model.governance.timeoutHours * 3_600_000 : undefined);
  const fact: Fact = {
    kind: 'start',
    workflowHash: workflow.hash,
    ...(timeoutMs !== undefined ? { deadlineAt: now + Math.ceil(timeoutMs) } : {}),
    ...(opts.autoApprove ? { autoApprove: true } : {}),
    ...(opts.rerunOf ? { rerunOf: opts.rerunOf } : {}),
  };
  const d = decide(plan, state, [fact], { now, initialState: opts.initialState });
  const commit = buildCommit(plan, state, d.events, d.touched, now);
  const run: RunRecord = {
    runId: opts.runId,
    workflowHash: workflow.hash,
    workflowName: model.info.name,
    status: commit.run.status,
    trigger: opts.trigger ?? null,
    initialState: opts.initialState ?? null,
    bindings: opts.bindings ?? {},
    options: opts.options ?? {},
    createdAt: now,
    updatedAt: now,
    endedAt: commit.run.endedAt,
    costUsd: 0,
    seq: 0,
    wakeAt: commit.run.wakeAt,
  };
  await store.createRun({ run, workflow, commit });
  // the record as the store now holds it (its row: the start commit's fields and seq)
  const stored: RunRecord = { ...run, ...commit.run, seq: state.seq };
  return { state, events: d.events, record: stored };
}

/**
 * Whether the gate a decision or an answer names already stands as that fact would leave it: the
 * same decision (and comment) or the same value, by the same decider. A command tried again after
 * its answer was lost (a connection cut as it committed) so knows its own landed decision from
 * another's, which is still refused.
 */
export function decidedAs(state: RunState, fact: Fact): boolean {
  if (fact.kind !== 'decide_gate' && fact.kind !== 'respond') return false;
  const g = state.gates.get(fact.gateId);
  if (!g || g.decidedBy !== fact.by || g.auto) return false;
  if (fact.kind === 'decide_gate') return g.status === fact.decision && g.comment === fact.comment;
  return g.status === 'answered' && isDeepStrictEqual(g.value, fact.value);
}

/** Applies facts to a stored run in one transaction, from a fresh replay (no worker needed). */
export async function commandRun(store: RunStore, model: WorkflowModel, record: RunRecord, facts: Fact[], clock: Clock): Promise<{ results: FactResult[]; state: RunState }> {
  const plan = planOf(model);
  const { state } = await loadState(store, record.runId);
  attachGraph(state, plan.dependsOn, plan.dependents, plan.assign);
  const r = await store.transact(record.runId, state.seq, (delta, storeNow) => {
    // the store's clock (the database's on PostgreSQL), read under the run's lock
    const now = storeNow ?? clock.now();
    for (const e of delta) applyEvent(state, e);
    // a timer that fell due first (a gate's expiry, an escalation, the deadline) is decided first, as a
    // worker would: a command never lands on a gate that has already expired in the store's clock
    const due = nextTimer(state);
    const tick = due !== null && due <= now;
    const d = decide(plan, state, tick ? [{ kind: 'tick' }, ...facts] : facts, { now, initialState: record.initialState ?? undefined });
    return { commit: d.events.length > 0 ? buildCommit(plan, state, d.events, d.touched, now) : null, value: tick ? d.results.slice(1) : d.results };
  });
  if (!r.ok) throw new BatonError('store', 'the run changed during the command; try again');
  return { results: r.value, state };
}

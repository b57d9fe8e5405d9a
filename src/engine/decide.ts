/**
 * The decisions, as a pure function: from the stored run state and incoming facts (an outcome, a
 * claim request, a timer, a gate decision, ...) to the events to commit. No I/O, no clock: the time
 * is part of the facts. Events are applied to the state as they are made, so each decision sees
 * the ones before it; the caller commits them in one transaction, or discards the state.
 *
 * The worker loop (worker.ts) does the I/O around this: it claims, runs attempts, commits.
 */
import { phaseModelOf, type Plan } from './plan.js';
import type { RunState } from './state.js';
import type { DecideEnv, Decisions, Fact, FactResult } from './decide-types.js';
import { emit, isCurrent, lastAttemptOf, latestAttemptTask, taskId, type Ctx } from './decide-context.js';
import { claim } from './decide-claims.js';
import { decideGate, requestInput, respond, unknownGate } from './decide-gates.js';
import { addCost, outcome } from './decide-outcomes.js';
import { drain, maybeEnd, start, stop } from './decide-settle.js';
import { tick } from './decide-timers.js';

// the parts live in decide-*.ts; this module stays the one entry other modules import
export type { CarriedFile, Claimed, DecideEnv, Decisions, Fact, FactResult, Outcome, RerunOf } from './decide-types.js';
export { formatMs } from './decide-context.js';
export { ESCALATION_CHOICES } from './decide-outcomes.js';

/** The results that carry nothing of their own: one object each (frozen: callers only read them), not one per fact decided. */
const DONE: FactResult = Object.freeze({ kind: 'done' });
const ACCEPTED: FactResult = Object.freeze({ kind: 'outcome', accepted: true });
const NOT_ACCEPTED: FactResult = Object.freeze({ kind: 'outcome', accepted: false });

/** Applies the facts in order; returns the events (already applied to `state`) and one result per fact. */
export function decide(plan: Plan, state: RunState, facts: readonly Fact[], env: DecideEnv): Decisions {
  const ctx: Ctx = { plan, state, env, out: [], touched: new Set(), unblocked: [] };
  // one result per fact, made at its size (a commit decides two facts at a time on a chain: a growing array cost more than them)
  const results = new Array<FactResult>(facts.length);
  for (let i = 0; i < facts.length; i++) {
    results[i] = one(ctx, facts[i]!);
    drain(ctx);
    maybeEnd(ctx);
  }
  return { events: ctx.out, touched: ctx.touched, results };
}

function one(ctx: Ctx, f: Fact): FactResult {
  const { state } = ctx;
  if (f.kind === 'start') {
    start(ctx, f);
    return DONE;
  }
  if (state.status !== 'running') {
    // the run ended: nothing changes any more; gate commands get a clear refusal
    // (a gate the run never had is unknown, as on a live run: exit 2 for a typo, not 1 as for a refused decision)
    if (f.kind === 'decide_gate' || f.kind === 'respond') return unknownGate(ctx, f.gateId) ?? { kind: 'gate', ok: false, code: 'gate-refused', message: `the run is ${state.status}` };
    if (f.kind === 'claim') return { kind: 'claimed', tasks: [] };
    if (f.kind === 'resume') return { kind: 'resumed', ok: false };
    // a late outcome is still recorded (never applied): the log shows every attempt that reported
    if (f.kind === 'outcome') {
      const p = state.phases.get(f.phase);
      if (p) emit(ctx, { type: 'task.stale_outcome', phase: f.phase, task_id: p.taskId, attempt: f.attempt, worker: f.worker, reason: `the run is ${state.status}`, outcome: f.outcome.ok ? 'completed' : 'failed' });
      return NOT_ACCEPTED;
    }
    // a warning about an attempt that ended with the run (an output file of its completion that could not be synced)
    if (f.kind === 'warn') {
      warn(ctx, f);
      return DONE;
    }
    if (f.kind === 'request_input') return { kind: 'input-refused', message: `the run is ${state.status}` };
    if (f.kind === 'checkpoint') return { kind: 'checkpoint', ok: false };
    return DONE;
  }
  switch (f.kind) {
    case 'claim':
      return { kind: 'claimed', tasks: claim(ctx, f) };
    case 'outcome':
      return outcome(ctx, f) ? ACCEPTED : NOT_ACCEPTED;
    case 'cost':
      if (isCurrent(ctx, f.phase, f.attempt)) addCost(ctx, f.phase, f.attempt, f.usd);
      return DONE;
    case 'log':
      if (isCurrent(ctx, f.phase, f.attempt)) emit(ctx, { type: 'task.log', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, message: f.message });
      return DONE;
    case 'record':
      if (isCurrent(ctx, f.phase, f.attempt)) emit(ctx, { type: 'task.agent_event', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, kind: f.event, data: f.data });
      return DONE;
    case 'sibling':
      if (isCurrent(ctx, f.phase, f.attempt)) emit(ctx, { type: 'task.sibling_output', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, sibling: f.sibling, found: f.found });
      return DONE;
    case 'checkpoint': {
      if (!isCurrent(ctx, f.phase, f.attempt)) return { kind: 'checkpoint', ok: false };
      emit(ctx, { type: 'task.checkpoint', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, value: f.value });
      return { kind: 'checkpoint', ok: true };
    }
    case 'warn':
      warn(ctx, f);
      return DONE;
    case 'file':
      if (isCurrent(ctx, f.phase, f.attempt) || lastAttemptOf(ctx, f.phase, f.attempt)) emit(ctx, { type: 'task.file', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, ...f.file });
      return DONE;
    case 'lease_expired': {
      const p = state.phases.get(f.phase);
      if (p && p.status === 'running' && p.attempts === f.attempt && p.leaseOwner === f.owner) {
        emit(ctx, { type: 'task.lease_expired', phase: f.phase, task_id: p.taskId, attempt: f.attempt, owner: f.owner, ...(f.handBack ? { handed_back: true } : {}) });
      } else if (p && f.handBack && f.waiting && p.attempts === f.attempt && (p.status === 'suspended_awaiting_input' ? p.leaseOwner === f.owner : p.status === 'ready' && p.resumable?.attempt === f.attempt && p.resumable.owner === f.owner)) {
        // a stopping worker's attempt that waits for an answer: its task is anyone's once answered
        emit(ctx, { type: 'task.lease_expired', phase: f.phase, task_id: p.taskId, attempt: f.attempt, owner: f.owner, handed_back: true });
      }
      return DONE;
    }
    case 'tick':
      tick(ctx);
      return DONE;
    case 'cancel':
      stop(ctx, { kind: 'cancelled', reason: f.reason });
      return DONE;
    case 'decide_gate':
      return decideGate(ctx, f);
    case 'respond':
      return respond(ctx, f);
    case 'request_input':
      return requestInput(ctx, f);
    case 'resume': {
      const p = state.phases.get(f.phase);
      if (!p || p.status !== 'ready' || !p.resumable || p.resumable.attempt !== f.attempt || p.attempts !== f.attempt) return { kind: 'resumed', ok: false };
      emit(ctx, { type: 'task.resumed', phase: f.phase, task_id: p.taskId, attempt: f.attempt, worker: f.worker, lease_expires_at: ctx.env.now + f.leaseMs });
      return { kind: 'resumed', ok: true };
    }
    default: {
      const never: never = f;
      throw new Error(`unknown fact ${(never as { kind: string }).kind}`);
    }
  }
}

/** A warning about a running attempt or the task's latest one (a fan-out item folded out of the state included). */
function warn(ctx: Ctx, f: Extract<Fact, { kind: 'warn' }>): void {
  const task = latestAttemptTask(ctx, f.phase, f.attempt);
  if (task !== undefined) emit(ctx, { type: 'task.warning', phase: f.phase, task_id: task, attempt: f.attempt, code: f.code, message: f.message, ...(f.details !== undefined ? { details: f.details } : {}) });
}

/**
 * USD an attempt of `phase` may still spend before a phase or run budget is exceeded. `pending`: costs
 * reported and not in `state` yet (waiting for their commit), counted as spent: a report is answered
 * with what is left after it, not before.
 */
export function remainingBudget(plan: Plan, state: RunState, phase: string, pending: Iterable<{ phase: string; usd: number }> = []): number | undefined {
  const pm = phaseModelOf(plan, phase);
  let left: number | undefined;
  const ct = pm?.costTracking;
  const ps = state.phases.get(phase);
  // a fan-out item spends from its phase's budget, shared with its siblings
  const scopeName = ps?.item ? ps.item.parent : phase;
  const scope = state.phases.get(scopeName);
  let scopePending = 0;
  let runPending = 0;
  for (const c of pending) {
    runPending += c.usd;
    const item = state.phases.get(c.phase)?.item;
    if ((item ? item.parent : c.phase) === scopeName) scopePending += c.usd;
  }
  if (ct && ct.enabled && ct.budgetUsd !== undefined) left = ct.budgetUsd - (scope?.costUsd ?? 0) - scopePending;
  const max = plan.model.governance.maxCostUsd;
  if (max !== undefined) left = Math.min(left ?? Infinity, max - state.costUsd - runPending);
  // to 1e-12 USD, as the totals are (decide-outcomes.ts): 1 - 0.6 is 0.4, not 0.3999999999999999
  return left === undefined ? undefined : Math.max(0, Math.round(left * 1e12) / 1e12);
}

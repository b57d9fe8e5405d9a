/**
 * Starting a run and settling its phases: a phase whose dependencies all finished is skipped, failed,
 * held at its gate or made ready; a terminal event queues its dependents and may open the run gate;
 * the run ends when nothing is open, or is stopped.
 */
import { cloneJson, type JsonObject } from '../core/json.js';
import type { PhaseModel } from '../workflow/model.js';
import type { FailureRecord, NewEvent } from './events.js';
import type { RunState } from './state.js';
import type { Fact } from './decide-types.js';
import { emit, initialStateOf, model, openGate, taskId, type Ctx } from './decide-context.js';

// ---- start and settling ---------------------------------------------------------------------

export function start(ctx: Ctx, f: Extract<Fact, { kind: 'start' }>): void {
  const { plan, state } = ctx;
  emit(ctx, {
    type: 'run.started',
    run_id: state.runId,
    workflow: plan.model.info.name,
    ...(f.workflowHash !== undefined ? { workflow_hash: f.workflowHash } : {}),
    trigger: state.trigger,
    phases: plan.model.phases.map((p) => p.name),
    ...(f.deadlineAt !== undefined ? { deadline_at: f.deadlineAt } : {}),
    ...(f.autoApprove ? { auto_approve: true } : {}),
    ...(f.rerunOf ? { rerun_of: { run_id: f.rerunOf.run_id, from: f.rerunOf.from } } : {}),
  });
  if (f.rerunOf) {
    // outputs of phases not downstream of `from`, in topological order (their ancestors are reused too)
    for (const name of plan.model.order) {
      const r = f.rerunOf.outputs.get(name);
      if (!r) continue;
      const pm = model(ctx, name);
      const extra = pm.outputs ? Object.keys(r.output).filter((k) => !pm.outputs!.some((d) => d.key === k)) : [];
      emit(ctx, { type: 'task.completed', phase: name, task_id: taskId(ctx, name), attempt: r.attempt, output: cloneJson(r.output), extra_keys: extra, cost_usd: 0, reused_from: f.rerunOf.run_id });
      checkRunGate(ctx, name);
    }
  }
  checkRunGate(ctx, undefined);
  for (const p of plan.model.phases) if (state.graph!.remaining.get(p.name) === 0 && state.phases.get(p.name)!.status === 'pending') ctx.unblocked.push(p.name);
}

export function drain(ctx: Ctx): void {
  for (let k = 0; k < ctx.unblocked.length; k++) {
    if (ctx.state.status !== 'running') break;
    settle(ctx, ctx.unblocked[k]!);
  }
  ctx.unblocked.length = 0;
}

/** All dependencies of a phase finished: skip it, fail it, hold it at its gate, or make it ready. */
function settle(ctx: Ctx, name: string): void {
  const { state } = ctx;
  const ps = state.phases.get(name)!;
  if (ps.status !== 'pending') return;
  const p = model(ctx, name);
  const task_id = ps.taskId;
  for (const d of p.dependsOn) {
    const s = state.phases.get(d)!.status;
    if (s === 'failed' || s === 'cancelled') {
      terminal(ctx, { type: 'task.failed', phase: name, task_id, attempts: 0, failure: { code: 'UpstreamFailed', message: `upstream phase '${d}' ${s}`, retryable: false, details: { upstream: d } } });
      return;
    }
  }
  if (p.inputs) {
    for (const b of p.inputs) {
      if (b.source.kind === 'phase' && state.phases.get(b.source.phase)!.status === 'skipped') {
        terminal(ctx, { type: 'task.skipped', phase: name, task_id, reason: 'upstream_skipped', detail: `input '${b.name}' (${b.ref}) comes from skipped phase '${b.source.phase}'` });
        return;
      }
    }
  }
  if (p.skipWhen) {
    const r = evaluate(ctx, p.skipWhen, p);
    if (!r.ok) {
      terminal(ctx, { type: 'task.failed', phase: name, task_id, attempts: 0, failure: { code: 'SkipConditionError', message: `skip_when \`${p.skipWhen.source}\` ${r.message}`, retryable: false } });
      return;
    }
    if (r.value === true) {
      terminal(ctx, { type: 'task.skipped', phase: name, task_id, reason: 'skip_when', detail: `skip_when \`${p.skipWhen.source}\` is true` });
      return;
    }
  }
  const gate = ctx.plan.phaseGates.get(name);
  if (gate) {
    let reason = `phase \`${name}\` requires approval before it starts`;
    let required = true;
    if (gate.when) {
      const r = evaluate(ctx, gate.when, p);
      if (!r.ok) reason = `approval required: the condition \`${gate.when.source}\` ${r.message}`;
      else if (r.value === true) reason = `approval required: \`${gate.when.source}\` is true`;
      else required = false;
    }
    if (required) {
      openGate(ctx, `approve-${name}`, 'phase', gate, reason, { phase: name, task_id });
      return;
    }
  }
  emit(ctx, { type: 'task.ready', phase: name, task_id });
}

export function evaluate(ctx: Ctx, expr: NonNullable<PhaseModel['skipWhen']>, p: PhaseModel | undefined): { ok: true; value: boolean } | { ok: false; message: string } {
  const scope: Record<string, unknown> = { trigger: ctx.state.trigger, initial_state: p ? initialStateOf(ctx, p) : (ctx.env.initialState ?? {}) };
  // `phases.<name>.status`: how each finished phase ended (`completed`, `partial`, `skipped`, `failed`)
  if (expr.names.includes('phases')) scope['phases'] = phaseStatuses(ctx.state);
  for (const n of expr.names) {
    const out = ctx.state.phases.get(n)?.output;
    if (out !== undefined) scope[n] = out;
  }
  let v: unknown;
  try {
    v = expr.evaluate(scope);
  } catch (e) {
    return { ok: false, message: `could not be evaluated: ${(e as Error).message}` };
  }
  if (typeof v !== 'boolean') return { ok: false, message: `gave ${JSON.stringify(v) ?? typeof v}, not a boolean` };
  return { ok: true, value: v };
}

function phaseStatuses(state: RunState): JsonObject {
  const out: JsonObject = {};
  for (const [name, p] of state.phases) {
    if (p.status === 'completed' || p.status === 'failed' || p.status === 'skipped' || p.status === 'cancelled') {
      out[name] = { status: p.status === 'completed' && p.partial ? 'partial' : p.status, attempts: p.attempts };
    }
  }
  return out;
}

/** Records a terminal event and queues dependents whose dependencies all finished (§3.4). */
export function terminal(ctx: Ctx, e: NewEvent & { type: 'task.completed' | 'task.failed' | 'task.skipped' | 'task.cancelled' }): void {
  emit(ctx, e);
  if (ctx.state.status !== 'running') return;
  const g = ctx.state.graph!;
  for (const d of g.dependents.get(e.phase) ?? []) if (g.remaining.get(d) === 0) ctx.unblocked.push(d);
  checkRunGate(ctx, e.phase);
}

export function maybeEnd(ctx: Ctx): void {
  const { state } = ctx;
  if (state.status !== 'running' || state.open > 0) return;
  const f = state.firstFailure;
  if (f) emit(ctx, { type: 'run.failed', failure: { code: f.failure.code, message: `phase '${f.phase}' failed: ${f.failure.message}`, retryable: false, details: { phase: f.phase } } });
  else emit(ctx, { type: 'run.completed' });
}

/** Stops the run (budget, timeout, cancellation, a denied run gate): every open task is cancelled. */
export function stop(ctx: Ctx, how: { kind: 'failed'; failure: FailureRecord } | { kind: 'cancelled'; reason: string }): void {
  const { state } = ctx;
  if (state.status !== 'running') return;
  const reason = how.kind === 'failed' ? how.failure.code : how.reason;
  for (const [name, p] of state.phases) {
    if (p.status === 'completed' || p.status === 'failed' || p.status === 'skipped' || p.status === 'cancelled') continue;
    emit(ctx, { type: 'task.cancelled', phase: name, task_id: p.taskId, reason });
  }
  if (how.kind === 'failed') emit(ctx, { type: 'run.failed', failure: how.failure });
  else emit(ctx, { type: 'run.cancelled', reason: how.reason });
}

/** The run gate is evaluated once, when the last phase its condition reads settles (or at start). */
export function checkRunGate(ctx: Ctx, settled: string | undefined): void {
  const g = ctx.plan.runGate;
  if (!g || ctx.state.gates.has('approval')) return;
  if (settled === undefined ? g.phases.length > 0 : !g.phases.includes(settled)) return;
  let unavailable: string | undefined;
  for (const n of g.phases) {
    const s = ctx.state.phases.get(n)!.status;
    if (s === 'pending' || s === 'ready' || s === 'running' || s === 'awaiting_approval' || s === 'suspended_awaiting_input') return;
    if (s !== 'completed') unavailable ??= `phase \`${n}\` ${s}`;
  }
  let reason: string;
  if (!g.when) reason = 'governance.require_approval: the run requires approval';
  else if (unavailable) reason = `approval required (fail-closed): \`${g.when.source}\` cannot be evaluated because ${unavailable}`;
  else {
    const r = evaluate(ctx, g.when, undefined);
    if (!r.ok) reason = `approval required (fail-closed): \`${g.when.source}\` ${r.message}`;
    else if (r.value) reason = `approval required: \`${g.when.source}\` is true`;
    else return;
  }
  openGate(ctx, 'approval', 'run', g, reason, {});
}

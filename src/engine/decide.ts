/**
 * The decisions, as a pure function: from the stored run state and incoming facts (an outcome, a
 * claim request, a timer, a gate decision, ...) to the events to commit. No I/O, no clock: the time
 * is part of the facts. Events are applied to the state as they are made, so each decision sees
 * the ones before it; the caller commits them in one transaction, or discards the state.
 *
 * The worker loop (worker.ts) does the I/O around this: it claims, runs attempts, commits.
 */
import { cloneJson, isPlainObject, type Json, type JsonObject } from '../core/json.js';
import { checkTaskOutputs, tryResolveTaskInputs } from '../workflow/runtime.js';
import { UpstreamIntentSuspendedError } from '../workflow/errors.js';
import type { PhaseModel } from '../workflow/model.js';
import { BudgetExceededError } from './errors.js';
import type { FailureRecord, GateKind, NewEvent, OnTimeout, RunEvent } from './events.js';
import { checkAnswer } from './answers.js';
import { toJson } from './attempt.js';
import { contractOfPhase, type GateSpec, type Plan } from './plan.js';
import { backoffDelay, isRetryable } from './retry.js';
import { applyEvent, type GateState, type PhaseState, type RunState } from './state.js';
import { claimableAt, runGateOpen, type Claimant } from './due.js';

/** A task handed to a worker by a claim. */
export interface Claimed {
  phase: string;
  taskId: string;
  attempt: number;
  agent: string;
  input: JsonObject;
  /** The answer of the phase's last input gate, for an attempt that replaces one that asked (ctx.inputResponse). */
  inputResponse?: Json;
  /** The task's last checkpoint (`ctx.checkpoint`), for an attempt that follows one that saved it (ctx.lastCheckpoint). */
  lastCheckpoint?: Json;
}

export type Outcome = { ok: true; output: unknown; costUsd: number } | { ok: false; failure: FailureRecord };

export type Fact =
  /** A new run: run.started, then the roots (and the run gate when it reads only trigger / initial_state). */
  | { kind: 'start'; workflowHash?: string; deadlineAt?: number; autoApprove?: boolean; rerunOf?: { run_id: string; from: string; outputs: ReadonlyMap<string, { output: JsonObject; attempt: number }> } }
  /** Claim up to `max` ready tasks for a worker that binds `agents` (null: every agent). */
  | ({ kind: 'claim'; max: number; leaseMs: number } & Claimant)
  | { kind: 'outcome'; phase: string; attempt: number; worker: string; outcome: Outcome }
  | { kind: 'cost'; phase: string; attempt: number; usd: number }
  | { kind: 'log'; phase: string; attempt: number; message: string }
  | { kind: 'record'; phase: string; attempt: number; event: string; data: JsonObject }
  | { kind: 'sibling'; phase: string; attempt: number; sibling: string; found: boolean }
  /** `ctx.checkpoint(value)`: saved durably for the task's later attempts. */
  | { kind: 'checkpoint'; phase: string; attempt: number; value: Json }
  /** A warning about a running or just-finished attempt (task.warning). */
  | { kind: 'warn'; phase: string; attempt: number; code: string; message: string; details?: JsonObject }
  /** A running task whose worker is gone (its lease expired, or its process is known dead). */
  | { kind: 'lease_expired'; phase: string; attempt: number; owner: string; /** The owner's process is gone (no wait for its lease). */ dead?: boolean; /** The owner hands its own attempt back (a stopping worker). */ handBack?: boolean }
  /** Timers: the run deadline, gate expiries, escalations. */
  | { kind: 'tick' }
  | { kind: 'cancel'; reason: string }
  | { kind: 'decide_gate'; gateId: string; decision: 'approved' | 'denied'; by: string; comment?: string }
  | { kind: 'respond'; gateId: string; value: Json; by: string }
  | { kind: 'request_input'; phase: string; attempt: number; worker: string; index: number; question: string; choices?: Json[]; schema?: JsonObject; timeoutMs?: number }
  /** The process whose attempt asked for input continues it with the answer. */
  | { kind: 'resume'; phase: string; attempt: number; worker: string; leaseMs: number };

export type FactResult =
  | { kind: 'claimed'; tasks: Claimed[] }
  | { kind: 'gate'; ok: true }
  | { kind: 'gate'; ok: false; code: 'unknown-gate' | 'gate-refused'; message: string }
  | { kind: 'input'; gateId: string; answered: boolean; value?: Json }
  | { kind: 'input-refused'; message: string }
  | { kind: 'resumed'; ok: boolean }
  | { kind: 'checkpoint'; ok: boolean }
  | { kind: 'done' };

export interface DecideEnv {
  now: number;
  /** The run-level initial state (the run record's). */
  initialState: JsonObject | undefined;
  /** governance.escalation.contact / after_hours are read from the plan's model. */
}

export interface Decisions {
  events: RunEvent[];
  /** Phases whose task row changed. */
  touched: Set<string>;
  results: FactResult[];
}

interface Ctx {
  plan: Plan;
  state: RunState;
  env: DecideEnv;
  out: RunEvent[];
  touched: Set<string>;
  /** Phases whose dependencies all finished, waiting to be settled (a worklist: no recursion down long chains). */
  unblocked: string[];
}

/** Applies the facts in order; returns the events (already applied to `state`) and one result per fact. */
export function decide(plan: Plan, state: RunState, facts: readonly Fact[], env: DecideEnv): Decisions {
  const ctx: Ctx = { plan, state, env, out: [], touched: new Set(), unblocked: [] };
  const results: FactResult[] = [];
  for (const f of facts) {
    results.push(one(ctx, f));
    drain(ctx);
    maybeEnd(ctx);
  }
  return { events: ctx.out, touched: ctx.touched, results };
}

function one(ctx: Ctx, f: Fact): FactResult {
  const { state } = ctx;
  if (f.kind === 'start') {
    start(ctx, f);
    return { kind: 'done' };
  }
  if (state.status !== 'running') {
    // the run ended: nothing changes any more; gate commands get a clear refusal
    if (f.kind === 'decide_gate' || f.kind === 'respond') return { kind: 'gate', ok: false, code: 'gate-refused', message: `the run is ${state.status}` };
    if (f.kind === 'claim') return { kind: 'claimed', tasks: [] };
    if (f.kind === 'resume') return { kind: 'resumed', ok: false };
    // a late outcome is still recorded (never applied): the log shows every attempt that reported
    if (f.kind === 'outcome') {
      const p = state.phases.get(f.phase);
      if (p) emit(ctx, { type: 'task.stale_outcome', phase: f.phase, task_id: p.taskId, attempt: f.attempt, worker: f.worker, reason: `the run is ${state.status}`, outcome: f.outcome.ok ? 'completed' : 'failed' });
      return { kind: 'done' };
    }
    if (f.kind === 'request_input') return { kind: 'input-refused', message: `the run is ${state.status}` };
    if (f.kind === 'checkpoint') return { kind: 'checkpoint', ok: false };
    return { kind: 'done' };
  }
  switch (f.kind) {
    case 'claim':
      return { kind: 'claimed', tasks: claim(ctx, f) };
    case 'outcome':
      outcome(ctx, f);
      return { kind: 'done' };
    case 'cost':
      if (isCurrent(ctx, f.phase, f.attempt)) addCost(ctx, f.phase, f.attempt, f.usd);
      return { kind: 'done' };
    case 'log':
      if (isCurrent(ctx, f.phase, f.attempt)) emit(ctx, { type: 'task.log', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, message: f.message });
      return { kind: 'done' };
    case 'record':
      if (isCurrent(ctx, f.phase, f.attempt)) emit(ctx, { type: 'task.agent_event', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, kind: f.event, data: f.data });
      return { kind: 'done' };
    case 'sibling':
      if (isCurrent(ctx, f.phase, f.attempt)) emit(ctx, { type: 'task.sibling_output', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, sibling: f.sibling, found: f.found });
      return { kind: 'done' };
    case 'checkpoint': {
      if (!isCurrent(ctx, f.phase, f.attempt)) return { kind: 'checkpoint', ok: false };
      emit(ctx, { type: 'task.checkpoint', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, value: f.value });
      return { kind: 'checkpoint', ok: true };
    }
    case 'warn':
      if (isCurrent(ctx, f.phase, f.attempt) || lastAttemptOf(ctx, f.phase, f.attempt)) {
        emit(ctx, { type: 'task.warning', phase: f.phase, task_id: taskId(ctx, f.phase), attempt: f.attempt, code: f.code, message: f.message, ...(f.details !== undefined ? { details: f.details } : {}) });
      }
      return { kind: 'done' };
    case 'lease_expired': {
      const p = state.phases.get(f.phase);
      if (p && p.status === 'running' && p.attempts === f.attempt && p.leaseOwner === f.owner) {
        emit(ctx, { type: 'task.lease_expired', phase: f.phase, task_id: p.taskId, attempt: f.attempt, owner: f.owner });
      }
      return { kind: 'done' };
    }
    case 'tick':
      tick(ctx);
      return { kind: 'done' };
    case 'cancel':
      stop(ctx, { kind: 'cancelled', reason: f.reason });
      return { kind: 'done' };
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

// ---- events ---------------------------------------------------------------------------------

function emit(ctx: Ctx, e: NewEvent): RunEvent {
  const ev = e as RunEvent;
  ev.seq = ctx.state.seq + 1;
  ev.at = ctx.env.now;
  applyEvent(ctx.state, ev);
  ctx.out.push(ev);
  if (ROW_EVENTS.has(ev.type) && 'phase' in ev && ev.phase !== undefined) ctx.touched.add(ev.phase);
  else if (ev.type === 'gate.opened' || ev.type === 'gate.decided' || ev.type === 'gate.answered' || ev.type === 'gate.expired') {
    const g = ctx.state.gates.get(ev.gate_id);
    if (g?.phase !== undefined) ctx.touched.add(g.phase);
    // the run gate and access gates hold ready tasks: their rows' due times change with the gate
    if (g !== undefined && (g.kind === 'run' || g.kind === 'access')) for (const n of ctx.state.ready) ctx.touched.add(n);
  } else if (ev.type === 'run.started') for (const n of ctx.state.phases.keys()) ctx.touched.add(n);
  return ev;
}

/**
 * Events that change a task row. Others (cost, log, ...) must not rewrite the row: its lease expiry
 * is renewed in the store only, and a rewrite from the state would set it back.
 */
const ROW_EVENTS: ReadonlySet<string> = new Set([
  'task.ready',
  'task.claimed',
  'task.resumed',
  'task.retrying',
  'task.lease_expired',
  'task.completed',
  'task.failed',
  'task.skipped',
  'task.cancelled',
]);

function taskId(ctx: Ctx, phase: string): string {
  return ctx.state.phases.get(phase)!.taskId;
}

function isCurrent(ctx: Ctx, phase: string, attempt: number): boolean {
  const p = ctx.state.phases.get(phase);
  return p !== undefined && (p.status === 'running' || p.status === 'suspended_awaiting_input') && p.attempts === attempt;
}

/** The attempt is the task's latest (it may have just finished: a warning about what it left is still its own). */
function lastAttemptOf(ctx: Ctx, phase: string, attempt: number): boolean {
  const p = ctx.state.phases.get(phase);
  return p !== undefined && p.attempts === attempt;
}

function model(ctx: Ctx, phase: string): PhaseModel {
  return ctx.plan.byName.get(phase)!;
}

function initialStateOf(ctx: Ctx, p: PhaseModel): JsonObject {
  const run = ctx.env.initialState;
  return run ? { ...run, ...p.initialState } : p.initialState;
}

// ---- start and settling ---------------------------------------------------------------------

function start(ctx: Ctx, f: Extract<Fact, { kind: 'start' }>): void {
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

function drain(ctx: Ctx): void {
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

function evaluate(ctx: Ctx, expr: NonNullable<PhaseModel['skipWhen']>, p: PhaseModel | undefined): { ok: true; value: boolean } | { ok: false; message: string } {
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
function terminal(ctx: Ctx, e: NewEvent & { type: 'task.completed' | 'task.failed' | 'task.skipped' | 'task.cancelled' }): void {
  emit(ctx, e);
  if (ctx.state.status !== 'running') return;
  const g = ctx.state.graph!;
  for (const d of g.dependents.get(e.phase) ?? []) if (g.remaining.get(d) === 0) ctx.unblocked.push(d);
  checkRunGate(ctx, e.phase);
}

function maybeEnd(ctx: Ctx): void {
  const { state } = ctx;
  if (state.status !== 'running' || state.open > 0) return;
  const f = state.firstFailure;
  if (f) emit(ctx, { type: 'run.failed', failure: { code: f.failure.code, message: `phase '${f.phase}' failed: ${f.failure.message}`, retryable: false, details: { phase: f.phase } } });
  else emit(ctx, { type: 'run.completed' });
}

/** Stops the run (budget, timeout, cancellation, a denied run gate): every open task is cancelled. */
function stop(ctx: Ctx, how: { kind: 'failed'; failure: FailureRecord } | { kind: 'cancelled'; reason: string }): void {
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

// ---- gates ----------------------------------------------------------------------------------

const HOUR = 3_600_000;

function openGate(
  ctx: Ctx,
  id: string,
  kind: GateKind,
  spec: GateSpec | { approvers: string[]; timeoutHours: number | undefined; onTimeout: OnTimeout | undefined },
  reason: string,
  where: { phase?: string; task_id?: string; agent?: string; attempt?: number; index?: number; question?: string; choices?: Json[]; schema?: JsonObject; escalation?: { failure: FailureRecord } },
): GateState {
  const now = ctx.env.now;
  const esc = ctx.plan.model.governance.escalation;
  emit(ctx, {
    type: 'gate.opened',
    gate_id: id,
    kind,
    ...where,
    approvers: spec.approvers,
    reason,
    ...(spec.timeoutHours !== undefined ? { expires_at: now + spec.timeoutHours * HOUR } : {}),
    ...(spec.onTimeout !== undefined ? { on_timeout: spec.onTimeout } : {}),
    ...(esc?.afterHours !== undefined ? { escalate_at: now + esc.afterHours * HOUR } : {}),
  });
  if (ctx.state.autoApprove && kind !== 'input') emit(ctx, { type: 'gate.decided', gate_id: id, decision: 'approved', by: 'auto-approve', auto: true });
  return ctx.state.gates.get(id)!;
}

/** The run gate is evaluated once, when the last phase its condition reads settles (or at start). */
function checkRunGate(ctx: Ctx, settled: string | undefined): void {
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


function decideGate(ctx: Ctx, f: Extract<Fact, { kind: 'decide_gate' }>): FactResult {
  const g = ctx.state.gates.get(f.gateId);
  if (!g) return { kind: 'gate', ok: false, code: 'unknown-gate', message: `run ${ctx.state.runId} has no gate \`${f.gateId}\`${gateList(ctx)}` };
  if (g.kind === 'input') return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` asks for input: answer it with \`baton respond\`` };
  if (g.status !== 'open') return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` was already ${g.status}${g.decidedBy ? ` by ${g.decidedBy}` : ''}` };
  if (g.approvers.length > 0 && !g.approvers.includes(f.by)) {
    const reason = `${f.by} is not an approver of gate \`${g.id}\` (approvers: ${g.approvers.join(', ')})`;
    emit(ctx, { type: 'gate.refused', gate_id: g.id, by: f.by, reason });
    return { kind: 'gate', ok: false, code: 'gate-refused', message: reason };
  }
  emit(ctx, { type: 'gate.decided', gate_id: g.id, decision: f.decision, by: f.by, ...(f.comment !== undefined ? { comment: f.comment } : {}), auto: false });
  afterDecision(ctx, g);
  return { kind: 'gate', ok: true };
}

/** What a decided (or expired) gate leads to. */
function afterDecision(ctx: Ctx, g: GateState): void {
  if (g.status !== 'denied') return;
  const failure = (code: string, message: string): FailureRecord => ({ code, message, retryable: false, details: { gate_id: g.id, ...(g.decidedBy ? { by: g.decidedBy } : {}) } });
  switch (g.kind) {
    case 'run':
      stop(ctx, { kind: 'failed', failure: failure('ApprovalDenied', `the run was denied approval${g.decidedBy ? ` by ${g.decidedBy}` : ''}`) });
      return;
    case 'phase': {
      const p = ctx.state.phases.get(g.phase!)!;
      if (p.status === 'awaiting_approval') terminal(ctx, { type: 'task.failed', phase: g.phase!, task_id: p.taskId, attempts: p.attempts, failure: failure('ApprovalDenied', `phase '${g.phase!}' was denied approval${g.decidedBy ? ` by ${g.decidedBy}` : ''}`) });
      return;
    }
    case 'access':
      for (const name of [...ctx.state.ready]) {
        if (agentOf(ctx, name) === g.agent) failAccess(ctx, name, g);
      }
      return;
    case 'input':
      return;
  }
}

function failAccess(ctx: Ctx, name: string, g: GateState): void {
  const p = ctx.state.phases.get(name)!;
  terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: p.attempts, failure: { code: 'AccessDenied', message: `agent '${g.agent ?? ''}' was denied access${g.decidedBy ? ` by ${g.decidedBy}` : ''}`, retryable: false, details: { gate_id: g.id, agent: g.agent ?? null } } });
}

function gateList(ctx: Ctx): string {
  const ids = [...ctx.state.gates.keys()];
  return ids.length === 0 ? ' (it has no gates)' : ` (its gates: ${ids.join(', ')})`;
}

function respond(ctx: Ctx, f: Extract<Fact, { kind: 'respond' }>): FactResult {
  const g = ctx.state.gates.get(f.gateId);
  if (!g) return { kind: 'gate', ok: false, code: 'unknown-gate', message: `run ${ctx.state.runId} has no gate \`${f.gateId}\`${gateList(ctx)}` };
  if (g.kind !== 'input') return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` is an approval: decide it with \`baton approve\` or \`baton deny\`` };
  if (g.status !== 'open') return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` was already answered${g.decidedBy ? ` by ${g.decidedBy}` : ''}` };
  if (g.expired) return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` timed out: its question is no longer asked` };
  if (g.approvers.length > 0 && !g.approvers.includes(f.by)) {
    const reason = `${f.by} may not answer gate \`${g.id}\` (allowed: ${g.approvers.join(', ')})`;
    emit(ctx, { type: 'gate.refused', gate_id: g.id, by: f.by, reason });
    return { kind: 'gate', ok: false, code: 'gate-refused', message: reason };
  }
  // the answer is recorded: it must be JSON a store keeps exactly (a library caller may pass anything)
  const json = toJson(f.value);
  const wrong = !json.ok ? `the answer is not JSON: it ${json.message}` : checkAnswer(json.value, g.choices, g.schema);
  if (wrong !== undefined || !json.ok) {
    const reason = wrong ?? 'the answer is not JSON';
    emit(ctx, { type: 'gate.refused', gate_id: g.id, by: f.by, reason });
    return { kind: 'gate', ok: false, code: 'gate-refused', message: reason };
  }
  emit(ctx, { type: 'gate.answered', gate_id: g.id, value: json.value, by: f.by });
  if (g.escalation) afterEscalation(ctx, g, json.value, f.by);
  return { kind: 'gate', ok: true };
}

function requestInput(ctx: Ctx, f: Extract<Fact, { kind: 'request_input' }>): FactResult {
  const p = ctx.state.phases.get(f.phase);
  if (!p || p.status !== 'running' || p.attempts !== f.attempt || p.leaseOwner !== f.worker) return { kind: 'input-refused', message: 'the attempt no longer holds its task' };
  // the k-th request of any attempt is the latest gate opened for index k: an attempt that replaces one that
  // asked gets the answer again; a gate that timed out unanswered is asked anew
  for (let i = p.inputGates.length - 1; i >= 0; i--) {
    const g = ctx.state.gates.get(p.inputGates[i]!)!;
    if (g.index !== f.index) continue;
    if (g.status === 'answered') return { kind: 'input', gateId: g.id, answered: true, value: g.value ?? null };
    break;
  }
  const id = `input-${f.phase}-${p.inputGates.length + 1}`;
  const gate = openGate(
    ctx,
    id,
    'input',
    { approvers: [], timeoutHours: f.timeoutMs !== undefined ? f.timeoutMs / HOUR : undefined, onTimeout: undefined },
    f.question,
    {
      phase: f.phase,
      task_id: p.taskId,
      agent: p.agent ?? model(ctx, f.phase).assign,
      attempt: f.attempt,
      index: f.index,
      question: f.question,
      ...(f.choices !== undefined ? { choices: f.choices } : {}),
      ...(f.schema !== undefined ? { schema: f.schema } : {}),
    },
  );
  // RFC-0025: claims of downstream tasks are rejected while the upstream intent is suspended
  const expected = gate.expiresAt !== undefined ? new Date(gate.expiresAt).toISOString() : null;
  for (const d of ctx.plan.dependents.get(f.phase) ?? []) {
    const dp = ctx.state.phases.get(d)!;
    const err = new UpstreamIntentSuspendedError(dp.taskId, d, p.taskId, expected);
    emit(ctx, { type: 'task.claim_rejected', phase: d, task_id: dp.taskId, error: err.toJSON() });
  }
  return { kind: 'input', gateId: id, answered: false };
}

function tick(ctx: Ctx): void {
  const { state, env } = ctx;
  const now = env.now;
  if (state.deadlineAt !== undefined && now >= state.deadlineAt) {
    const ms = state.deadlineAt - state.startedAt;
    stop(ctx, { kind: 'failed', failure: { code: 'RunTimeout', message: `the run timed out after ${formatMs(ms)}`, retryable: false, details: { timeout_ms: ms } } });
    return;
  }
  const contact = ctx.plan.model.governance.escalation?.contact ?? null;
  for (const g of [...state.gates.values()]) {
    if (g.status !== 'open' || state.status !== 'running') continue;
    if (g.escalateAt !== undefined && !g.escalated && now >= g.escalateAt) {
      emit(ctx, { type: 'gate.escalated', gate_id: g.id, contact, waited_ms: now - g.openedAt });
    }
    if (g.expiresAt === undefined || g.expired || now < g.expiresAt) continue;
    if (g.kind === 'input') {
      emit(ctx, { type: 'gate.expired', gate_id: g.id, action: 'abort' });
      const p = state.phases.get(g.phase!)!;
      if (p.status === 'suspended_awaiting_input' && p.gate === g.id) {
        // retryable as a phase Timeout is: a retry asks again on a new gate (when the policy allows)
        const failure: FailureRecord = { code: 'InputTimeout', message: `no answer to \`${g.question ?? g.reason}\` within ${formatMs(g.expiresAt - g.openedAt)}`, retryable: true, details: { gate_id: g.id } };
        emit(ctx, { type: 'task.attempt_failed', phase: g.phase!, task_id: p.taskId, attempt: p.attempts, failure });
        retryOrFail(ctx, g.phase!, p.attempts, p.agent ?? model(ctx, g.phase!).assign, failure);
      }
      continue;
    }
    if (g.kind === 'access') {
      emit(ctx, { type: 'gate.expired', gate_id: g.id, action: 'abort' });
      emit(ctx, { type: 'gate.decided', gate_id: g.id, decision: 'denied', by: 'timeout', auto: true });
      afterDecision(ctx, g);
      continue;
    }
    const action = g.onTimeout ?? 'escalate';
    emit(ctx, { type: 'gate.expired', gate_id: g.id, action });
    if (action === 'escalate') {
      if (!g.escalated) emit(ctx, { type: 'gate.escalated', gate_id: g.id, contact, waited_ms: now - g.openedAt });
    } else if (action === 'proceed') {
      emit(ctx, { type: 'gate.decided', gate_id: g.id, decision: 'approved', by: 'timeout', auto: true });
    } else {
      stop(ctx, { kind: 'failed', failure: { code: 'ApprovalTimeout', message: `gate \`${g.id}\` was not decided within ${formatMs(g.expiresAt - g.openedAt)}`, retryable: false, details: { gate_id: g.id } } });
    }
  }
}

// ---- claims -----------------------------------------------------------------------------------

function agentOf(ctx: Ctx, name: string): string {
  return ctx.state.phases.get(name)!.nextAgent ?? model(ctx, name).assign;
}

function claim(ctx: Ctx, f: Extract<Fact, { kind: 'claim' }>): Claimed[] {
  const { state, env } = ctx;
  const out: Claimed[] = [];
  if (f.max <= 0 || runGateOpen(state)) return out;
  // the set itself, not a copy: claims delete what they take (safe while iterating) and add nothing to it
  for (const name of state.ready) {
    if (out.length >= f.max || state.status !== 'running') break;
    const p = state.phases.get(name)!;
    if (p.notBefore !== undefined && p.notBefore > env.now) continue;
    const agent = agentOf(ctx, name);
    if (ctx.plan.accessAgents.has(agent)) {
      // a claim opens the agent's access gate (its first task), and fails tasks whose access was denied
      const g = state.gates.get(`access-${agent}`);
      if (g === undefined) openAccessGate(ctx, agent, name);
      const now = state.gates.get(`access-${agent}`)!;
      if (now.status === 'denied') {
        failAccess(ctx, name, now);
        continue;
      }
    }
    // the one rule of when a task is due for this claimant (due.ts): the worker sleeps by the same one
    const at = claimableAt(ctx.plan, state, name, f);
    if (at === undefined || at > env.now) continue;
    const pm = model(ctx, name);
    const r = tryResolveTaskInputs(pm, outputsView(state), { trigger: state.trigger, initialState: initialStateOf(ctx, pm), taskId: p.taskId });
    if (!r.ok) {
      // upstream outputs never change once recorded: a rejected claim can never succeed, so the task fails now
      const payload = r.error.toJSON();
      emit(ctx, { type: 'task.claim_rejected', phase: name, task_id: p.taskId, error: payload });
      terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: p.attempts, failure: { code: r.error.error, error: r.error.error, message: r.error.message, retryable: false, details: payload } });
      continue;
    }
    let inputResponse: Json | undefined;
    if (p.resumable && p.inputGates.length > 0) inputResponse = state.gates.get(p.inputGates[p.inputGates.length - 1]!)?.value;
    // a later attempt resumes from the last checkpoint, unless the contract says a timeout starts over (`onTimeout: retry`)
    const fresh = contractOfPhase(ctx.plan, name)?.errorHandling.onTimeout?.action === 'retry' && p.lastFailure?.code === 'Timeout';
    const lastCheckpoint = p.checkpoint !== undefined && !fresh ? p.checkpoint.value : undefined;
    const attempt = p.attempts + 1;
    emit(ctx, { type: 'task.claimed', phase: name, task_id: p.taskId, attempt, agent, input: r.input, worker: f.worker, lease_expires_at: env.now + f.leaseMs });
    out.push({ phase: name, taskId: p.taskId, attempt, agent, input: r.input, ...(inputResponse !== undefined ? { inputResponse } : {}), ...(lastCheckpoint !== undefined ? { lastCheckpoint } : {}) });
  }
  return out;
}

function openAccessGate(ctx: Ctx, agent: string, phase: string): void {
  const ar = ctx.plan.model.governance.accessReview;
  const id = `access-${agent}`;
  const g = openGate(ctx, id, 'access', { approvers: ar?.approvers ?? [], timeoutHours: ar?.timeoutHours, onTimeout: undefined }, `agent \`${agent}\` requires access approval before its first task (phase \`${phase}\`)`, { agent });
  if (g.status !== 'open' || !ar || ar.onRequest === 'defer') return;
  emit(ctx, { type: 'gate.decided', gate_id: id, decision: ar.onRequest === 'approve' ? 'approved' : 'denied', by: 'access_review', auto: true });
}

/** Recorded outputs by phase name, for input resolution: a read-through view of the state, no copy. */
class OutputsView extends Map<string, unknown> {
  constructor(private readonly state: RunState) {
    super();
  }
  override get(k: string): unknown {
    return this.state.phases.get(k)?.output;
  }
  override has(k: string): boolean {
    return this.state.phases.get(k)?.output !== undefined;
  }
}

function outputsView(state: RunState): ReadonlyMap<string, unknown> {
  return new OutputsView(state);
}

// ---- outcomes -----------------------------------------------------------------------------------

function outcome(ctx: Ctx, f: Extract<Fact, { kind: 'outcome' }>): void {
  const p = ctx.state.phases.get(f.phase);
  if (!p) return;
  const stale = p.status !== 'running' ? `the task is ${p.status}` : p.attempts !== f.attempt ? `attempt ${p.attempts} replaced it` : p.leaseOwner !== undefined && p.leaseOwner !== f.worker ? `its lease passed to ${p.leaseOwner}` : undefined;
  if (stale !== undefined) {
    emit(ctx, { type: 'task.stale_outcome', phase: f.phase, task_id: p.taskId, attempt: f.attempt, worker: f.worker, reason: stale, outcome: f.outcome.ok ? 'completed' : 'failed' });
    return;
  }
  const pm = model(ctx, f.phase);
  const agent = p.agent ?? pm.assign;
  if (!f.outcome.ok) {
    emit(ctx, { type: 'task.attempt_failed', phase: f.phase, task_id: p.taskId, attempt: f.attempt, failure: f.outcome.failure });
    retryOrFail(ctx, f.phase, f.attempt, agent, f.outcome.failure);
    return;
  }
  if (f.outcome.costUsd > 0) {
    addCost(ctx, f.phase, f.attempt, f.outcome.costUsd);
    if (ctx.state.status !== 'running') return;
  }
  const checked = checkTaskOutputs(pm, f.outcome.output, { taskId: p.taskId });
  if (!checked.ok) {
    const payload = checked.error.toJSON();
    emit(ctx, { type: 'task.rejected', phase: f.phase, task_id: p.taskId, attempt: f.attempt, error: payload });
    retryOrFail(ctx, f.phase, f.attempt, agent, { code: checked.error.error, error: checked.error.error, message: checked.error.message, retryable: true, details: payload });
    return;
  }
  const recorded = checked.output;
  let partial = false;
  const pc = contractOfPhase(ctx.plan, f.phase)?.errorHandling.onPartialCompletion;
  if (pc && recorded['completionStatus'] === 'partial') {
    const missing = pc.action === 'return_partial' ? pc.requiresFlags.filter((k) => isEmpty(recorded[k])) : [];
    if (pc.action === 'fail' || missing.length > 0) {
      const failure: FailureRecord =
        pc.action === 'fail'
          ? { code: 'PartialCompletion', message: `agent \`${agent}\` returned a partial result (completionStatus: partial), which its contract does not accept (onPartialCompletion: fail)`, retryable: true, details: { agent } }
          : { code: 'PartialCompletionError', message: `agent \`${agent}\` returned a partial result without ${missing.map((k) => `\`${k}\``).join(', ')}, which its contract requires to flag what is missing`, retryable: true, details: { agent, missing } };
      emit(ctx, { type: 'task.attempt_failed', phase: f.phase, task_id: p.taskId, attempt: f.attempt, failure });
      retryOrFail(ctx, f.phase, f.attempt, agent, failure);
      return;
    }
    partial = true;
  }
  const declared = pm.outputs;
  const extra = declared ? Object.keys(recorded).filter((k) => !declared.some((d) => d.key === k)) : [];
  terminal(ctx, { type: 'task.completed', phase: f.phase, task_id: p.taskId, attempt: f.attempt, output: recorded, extra_keys: extra, cost_usd: roundCost(p.costUsd), ...(partial ? { partial: true } : {}) });
}

function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0) || (isPlainObject(v) && Object.keys(v).length === 0);
}

function roundCost(x: number): number {
  return Math.round(x * 1e9) / 1e9;
}

/**
 * After a failed attempt: retry (the phase's retry policy, or the contract's `onTimeout` for a
 * timeout), hand over to the fallback agent, ask a human (`onAgentFailure: escalate_to_user`), or
 * fail the phase.
 */
function retryOrFail(ctx: Ctx, name: string, attempt: number, agent: string, failure: FailureRecord): void {
  const pm = model(ctx, name);
  const p = ctx.state.phases.get(name)!;
  const policy = pm.retry;
  const eh = contractOfPhase(ctx.plan, name)?.errorHandling;
  const onFallback = agent !== pm.assign;
  // after a human chose `retry`, a new failure goes back to the human
  const escalated = p.escalations > 0;
  const ot = eh?.onTimeout;
  if (failure.code === 'Timeout' && ot !== undefined) {
    // the contract's `onTimeout` governs timeouts (counted apart from the retry policy's failures)
    if (!onFallback && !escalated && ot.action !== 'fail' && p.timeouts <= ot.maxRetries) {
      retry(ctx, name, attempt, agent, failure, backoffDelay(policy, p.timeouts));
      return;
    }
  } else {
    const counted = p.failures - (ot ? p.timeouts : 0);
    if (!onFallback && !escalated && eh?.onAgentFailure?.action !== 'fail' && counted < policy.maxAttempts && isRetryable(policy, failure)) {
      // a provider's retry-after (a rate limit) is honoured when it asks for longer than the backoff
      const after = failure.details?.['retry_after_ms'];
      retry(ctx, name, attempt, agent, failure, Math.max(backoffDelay(policy, counted), typeof after === 'number' && Number.isFinite(after) && after > 0 ? Math.min(after, 86_400_000) : 0));
      return;
    }
  }
  const fb = eh?.onAgentFailure?.fallbackAgent ?? policy.fallbackAgent;
  if (!onFallback && !escalated && fb !== undefined && fb !== pm.assign && eh?.onAgentFailure?.action !== 'fail') {
    emit(ctx, { type: 'task.retrying', phase: name, task_id: p.taskId, attempt, next_attempt: attempt + 1, delay_ms: 0, agent: fb, reason: failure.code });
    return;
  }
  if (eh?.onAgentFailure?.action === 'escalate_to_user' && failure.code !== 'InputValidationError') {
    escalate(ctx, name, failure);
    return;
  }
  terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: attempt, failure });
}

function retry(ctx: Ctx, name: string, attempt: number, agent: string, failure: FailureRecord, delay: number): void {
  const p = ctx.state.phases.get(name)!;
  emit(ctx, {
    type: 'task.retrying',
    phase: name,
    task_id: p.taskId,
    attempt,
    next_attempt: attempt + 1,
    delay_ms: delay,
    agent,
    reason: failure.code,
    ...(delay > 0 ? { not_before: ctx.env.now + delay } : {}),
  });
}

export const ESCALATION_CHOICES: readonly string[] = ['retry', 'skip', 'fail'];

/** `onAgentFailure: escalate_to_user`: an input gate asks a human whether to retry, skip or fail the phase. */
function escalate(ctx: Ctx, name: string, failure: FailureRecord): void {
  const p = ctx.state.phases.get(name)!;
  const question = `phase \`${name}\` failed after ${p.attempts} attempt${p.attempts === 1 ? '' : 's'} (${failure.code}: ${failure.message.slice(0, 500)}); retry, skip or fail it?`;
  openGate(ctx, `escalate-${name}-${p.escalations + 1}`, 'input', { approvers: [], timeoutHours: undefined, onTimeout: undefined }, question, {
    phase: name,
    task_id: p.taskId,
    agent: p.agent ?? model(ctx, name).assign,
    attempt: p.attempts,
    question,
    choices: [...ESCALATION_CHOICES],
    escalation: { failure },
  });
}

/** The human's answer to an escalation. */
function afterEscalation(ctx: Ctx, g: GateState, answer: Json, by: string): void {
  const name = g.phase!;
  const p = ctx.state.phases.get(name)!;
  if (p.status !== 'suspended_awaiting_input' || p.gate !== g.id) return;
  const failure = g.escalation!.failure;
  if (answer === 'retry') {
    emit(ctx, { type: 'task.retrying', phase: name, task_id: p.taskId, attempt: p.attempts, next_attempt: p.attempts + 1, delay_ms: 0, agent: model(ctx, name).assign, reason: 'EscalationRetry' });
  } else if (answer === 'skip') {
    terminal(ctx, { type: 'task.skipped', phase: name, task_id: p.taskId, reason: 'escalation', detail: `skipped by ${by} after ${failure.code}` });
  } else {
    terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: p.attempts, failure: { ...failure, retryable: false, details: { ...(failure.details ?? {}), escalation: g.id, decided_by: by } } });
  }
}

function addCost(ctx: Ctx, name: string, attempt: number, usd: number): void {
  if (usd === 0) return;
  const { state } = ctx;
  const pm = model(ctx, name);
  const ps: PhaseState = state.phases.get(name)!;
  const phaseTotal = ps.costUsd + usd;
  const runTotal = state.costUsd + usd;
  emit(ctx, { type: 'task.cost', phase: name, task_id: ps.taskId, attempt, usd, phase_total_usd: phaseTotal, run_total_usd: runTotal });
  const ct = pm.costTracking;
  if (ct && ct.enabled && ct.budgetUsd !== undefined) {
    const pct = ct.budgetUsd > 0 ? (phaseTotal / ct.budgetUsd) * 100 : Infinity;
    if (ct.alertAtPercent !== undefined && pct >= ct.alertAtPercent && !state.alerted.has(name)) {
      emit(ctx, { type: 'budget.alert', scope: 'phase', phase: name, budget_usd: ct.budgetUsd, spent_usd: phaseTotal, percent: Math.round(pct * 10) / 10 });
    }
    if (phaseTotal > ct.budgetUsd + 1e-12) {
      const err = new BudgetExceededError('phase', ct.budgetUsd, phaseTotal, name);
      stop(ctx, { kind: 'failed', failure: { code: err.error, error: err.error, message: err.message, retryable: false, details: err.toJSON() } });
      return;
    }
  }
  const max = ctx.plan.model.governance.maxCostUsd;
  if (max !== undefined) {
    if (!state.alerted.has('') && runTotal >= max * 0.8) {
      emit(ctx, { type: 'budget.alert', scope: 'run', budget_usd: max, spent_usd: runTotal, percent: Math.round((runTotal / max) * 1000) / 10 });
    }
    if (runTotal > max + 1e-12) {
      const err = new BudgetExceededError('run', max, runTotal);
      stop(ctx, { kind: 'failed', failure: { code: err.error, error: err.error, message: err.message, retryable: false, details: err.toJSON() } });
    }
  }
}

/** USD an attempt of `phase` may still spend before a phase or run budget is exceeded. */
export function remainingBudget(plan: Plan, state: RunState, phase: string): number | undefined {
  const pm = plan.byName.get(phase);
  let left: number | undefined;
  const ct = pm?.costTracking;
  if (ct && ct.enabled && ct.budgetUsd !== undefined) left = ct.budgetUsd - (state.phases.get(phase)?.costUsd ?? 0);
  const max = plan.model.governance.maxCostUsd;
  if (max !== undefined) left = Math.min(left ?? Infinity, max - state.costUsd);
  return left === undefined ? undefined : Math.max(0, left);
}

export function formatMs(ms: number): string {
  if (ms >= HOUR && ms % HOUR === 0) return `${ms / HOUR} h`;
  if (ms >= 1000) return `${Math.round(ms / 100) / 10} s`;
  return `${ms} ms`;
}


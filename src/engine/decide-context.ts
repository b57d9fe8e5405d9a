/**
 * What every part of the decisions shares: the context of one decide() call (the plan, the state the
 * events are applied to as they are made, the events so far), emit(), opening a gate, and small
 * lookups. The other decide-*.ts modules import it; of them it imports only the types (no cycles).
 */
import type { Json, JsonObject } from '../core/json.js';
import type { PhaseModel } from '../workflow/model.js';
import type { FailureRecord, GateKind, NewEvent, OnTimeout, RunEvent } from './events.js';
import { phaseModelOf, type GateSpec, type Plan } from './plan.js';
import { applyEvent, foldedItem, taskIdFor, type GateState, type RunState } from './state.js';
import type { DecideEnv } from './decide-types.js';

export interface Ctx {
  plan: Plan;
  state: RunState;
  env: DecideEnv;
  out: RunEvent[];
  touched: Set<string>;
  /** Phases whose dependencies all finished, waiting to be settled (a worklist: no recursion down long chains). */
  unblocked: string[];
}

// ---- events ---------------------------------------------------------------------------------

/**
 * Records an event: its seq and time set here, applied to the state, listed. The events every phase
 * makes (task.ready, task.claimed, task.completed) are written with `seq: 0, at: 0` last, set here: an
 * object made with room for them (two properties added later cost a second block of memory per event,
 * kept as long as the log is), and the keys in the same order.
 */
export function emit(ctx: Ctx, e: NewEvent | RunEvent): RunEvent {
  const ev = e as RunEvent;
  ev.seq = ctx.state.seq + 1;
  ev.at = ctx.env.now;
  applyEvent(ctx.state, ev);
  ctx.out.push(ev);
  if (ROW_EVENTS.has(ev.type) && 'phase' in ev && ev.phase !== undefined) ctx.touched.add(ev.phase);
  else if (ev.type === 'gate.opened' || ev.type === 'gate.decided' || ev.type === 'gate.answered' || ev.type === 'gate.expired' || ev.type === 'gate.withdrawn') {
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
  'task.fanned_out',
]);

export function taskId(ctx: Ctx, phase: string): string {
  return ctx.state.phases.get(phase)!.taskId;
}

export function isCurrent(ctx: Ctx, phase: string, attempt: number): boolean {
  const p = ctx.state.phases.get(phase);
  return p !== undefined && (p.status === 'running' || p.status === 'suspended_awaiting_input') && p.attempts === attempt;
}

/** The attempt is the task's latest (it may have just finished: a warning about what it left is still its own). */
export function lastAttemptOf(ctx: Ctx, phase: string, attempt: number): boolean {
  const p = ctx.state.phases.get(phase);
  return p !== undefined && p.attempts === attempt;
}

/**
 * The task id when `attempt` is the task's latest (running or ended), or the task is a fan-out item
 * already folded out of the state (it completed or was skipped; its attempt number is not kept).
 */
export function latestAttemptTask(ctx: Ctx, phase: string, attempt: number): string | undefined {
  const p = ctx.state.phases.get(phase);
  if (p) return p.attempts === attempt ? p.taskId : undefined;
  return foldedItem(ctx.state, phase) ? taskIdFor(ctx.state.runId, phase) : undefined;
}

export function model(ctx: Ctx, phase: string): PhaseModel {
  return phaseModelOf(ctx.plan, phase)!;
}

export function initialStateOf(ctx: Ctx, p: PhaseModel): JsonObject {
  const run = ctx.env.initialState;
  return run ? { ...run, ...p.initialState } : p.initialState;
}

export function agentOf(ctx: Ctx, name: string): string {
  return ctx.state.phases.get(name)!.nextAgent ?? model(ctx, name).assign;
}

// ---- gates and times -----------------------------------------------------------------------

export const HOUR = 3_600_000;

export function openGate(
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
    ...(spec.timeoutHours !== undefined ? { expires_at: now + Math.ceil(spec.timeoutHours * HOUR) } : {}),
    ...(spec.onTimeout !== undefined ? { on_timeout: spec.onTimeout } : {}),
    ...(esc?.afterHours !== undefined ? { escalate_at: now + Math.ceil(esc.afterHours * HOUR) } : {}),
  });
  if (ctx.state.autoApprove && kind !== 'input') emit(ctx, { type: 'gate.decided', gate_id: id, decision: 'approved', by: 'auto-approve', auto: true });
  return ctx.state.gates.get(id)!;
}

export function formatMs(ms: number): string {
  if (ms >= HOUR && ms % HOUR === 0) return `${ms / HOUR} h`;
  if (ms >= 1000) return `${Math.round(ms / 100) / 10} s`;
  return `${ms} ms`;
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

/** One view per state (a Map subclass costs a hash table each time it is made: once per claim, it was). */
const views = new WeakMap<RunState, OutputsView>();

export function outputsView(state: RunState): ReadonlyMap<string, unknown> {
  let v = views.get(state);
  if (v === undefined) views.set(state, (v = new OutputsView(state)));
  return v;
}

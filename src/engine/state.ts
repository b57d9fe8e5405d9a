/**
 * The run's state as a fold over its events. `applyEvent` is the only place task status changes,
 * so a run rebuilt from a store's events is the run that was recorded.
 */
import type { Json, JsonObject } from '../core/json.js';
import type { FailureRecord, RunEvent, RunStatus, TaskStatus } from './events.js';

export interface PhaseState {
  status: TaskStatus;
  taskId: string;
  attempts: number;
  agent: string | undefined;
  input: JsonObject | undefined;
  output: JsonObject | undefined;
  error: FailureRecord | undefined;
  skippedReason: 'skip_when' | 'upstream_skipped' | undefined;
  skippedDetail: string | undefined;
  costUsd: number;
  startedAt: number | undefined;
  endedAt: number | undefined;
}

export interface RunState {
  runId: string;
  workflow: string;
  trigger: Json;
  status: RunStatus;
  phases: Map<string, PhaseState>;
  costUsd: number;
  failure: FailureRecord | undefined;
  cancelReason: string | undefined;
  startedAt: number;
  endedAt: number | undefined;
  /** Sequence number of the last applied event. */
  seq: number;
}

export function newPhaseState(taskId: string): PhaseState {
  return {
    status: 'pending',
    taskId,
    attempts: 0,
    agent: undefined,
    input: undefined,
    output: undefined,
    error: undefined,
    skippedReason: undefined,
    skippedDetail: undefined,
    costUsd: 0,
    startedAt: undefined,
    endedAt: undefined,
  };
}

export function taskIdFor(runId: string, phase: string): string {
  return `${runId}:${phase}`;
}

export function initialState(runId: string): RunState {
  return { runId, workflow: '', trigger: null, status: 'running', phases: new Map(), costUsd: 0, failure: undefined, cancelReason: undefined, startedAt: 0, endedAt: undefined, seq: 0 };
}

function phaseOf(state: RunState, name: string, taskId: string): PhaseState {
  let p = state.phases.get(name);
  if (!p) {
    p = newPhaseState(taskId);
    state.phases.set(name, p);
  }
  return p;
}

/** Applies one event in place. Events must arrive in `seq` order. */
export function applyEvent(state: RunState, e: RunEvent): void {
  state.seq = e.seq;
  switch (e.type) {
    case 'run.started':
      state.runId = e.run_id;
      state.workflow = e.workflow;
      state.trigger = e.trigger;
      state.startedAt = e.at;
      for (const name of e.phases) phaseOf(state, name, taskIdFor(e.run_id, name));
      return;
    case 'task.ready':
      phaseOf(state, e.phase, e.task_id).status = 'ready';
      return;
    case 'task.claimed': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.status = 'running';
      p.attempts = e.attempt;
      p.agent = e.agent;
      p.input = e.input;
      p.startedAt ??= e.at;
      return;
    }
    case 'task.claim_rejected':
    case 'task.rejected':
    case 'task.attempt_failed':
    case 'task.retrying':
    case 'task.sibling_output':
    case 'task.log':
      return;
    case 'task.cost': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.costUsd = e.phase_total_usd;
      state.costUsd = e.run_total_usd;
      return;
    }
    case 'task.completed': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.status = 'completed';
      p.output = e.output;
      p.error = undefined;
      p.endedAt = e.at;
      return;
    }
    case 'task.failed': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.status = 'failed';
      p.error = e.failure;
      p.endedAt = e.at;
      return;
    }
    case 'task.skipped': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.status = 'skipped';
      p.skippedReason = e.reason;
      p.skippedDetail = e.detail;
      p.endedAt = e.at;
      return;
    }
    case 'task.cancelled': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.status = 'cancelled';
      p.endedAt = e.at;
      return;
    }
    case 'budget.alert':
      return;
    case 'run.completed':
      state.status = 'completed';
      state.endedAt = e.at;
      return;
    case 'run.failed':
      state.status = 'failed';
      state.failure = e.failure;
      state.endedAt = e.at;
      return;
    case 'run.cancelled':
      state.status = 'cancelled';
      state.cancelReason = e.reason;
      state.endedAt = e.at;
      return;
    default: {
      const never: never = e;
      throw new Error(`unknown event ${(never as { type: string }).type}`);
    }
  }
}

export function replay(runId: string, events: Iterable<RunEvent>): RunState {
  const s = initialState(runId);
  for (const e of events) applyEvent(s, e);
  return s;
}

export interface PhaseResult {
  status: TaskStatus;
  task_id: string;
  agent?: string;
  input: JsonObject | null;
  output: JsonObject | null;
  attempts: number;
  cost_usd: number;
  error?: FailureRecord;
  skipped_reason?: string;
  skipped_detail?: string;
  started_at?: number;
  ended_at?: number;
}

export interface RunResult {
  runId: string;
  workflow: string;
  status: Exclude<RunStatus, 'running'>;
  phases: Record<string, PhaseResult>;
  events: RunEvent[];
  cost_usd: number;
  error?: FailureRecord;
  started_at: number;
  ended_at: number;
  duration_ms: number;
}

export function toResult(state: RunState, events: RunEvent[]): RunResult {
  const phases: Record<string, PhaseResult> = {};
  for (const [name, p] of state.phases) {
    phases[name] = {
      status: p.status,
      task_id: p.taskId,
      ...(p.agent !== undefined ? { agent: p.agent } : {}),
      input: p.input ?? null,
      output: p.output ?? null,
      attempts: p.attempts,
      cost_usd: roundUsd(p.costUsd),
      ...(p.error ? { error: p.error } : {}),
      ...(p.skippedReason ? { skipped_reason: p.skippedReason } : {}),
      ...(p.skippedDetail ? { skipped_detail: p.skippedDetail } : {}),
      ...(p.startedAt !== undefined ? { started_at: p.startedAt } : {}),
      ...(p.endedAt !== undefined ? { ended_at: p.endedAt } : {}),
    };
  }
  const ended = state.endedAt ?? state.startedAt;
  return {
    runId: state.runId,
    workflow: state.workflow,
    status: state.status === 'running' ? 'failed' : state.status,
    phases,
    events,
    cost_usd: roundUsd(state.costUsd),
    ...(state.failure ? { error: state.failure } : {}),
    started_at: state.startedAt,
    ended_at: ended,
    duration_ms: ended - state.startedAt,
  };
}

/** Sums of many small float costs drift (0.1 + 0.2); report to a micro-dollar. */
export function roundUsd(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

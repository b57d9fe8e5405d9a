/**
 * A run's result as the package, the CLI and the server show it: built from the run's state (state.ts), never
 * stored. Field names are the wire's (snake_case), as RFC-0024's payloads and GET /runs/{id} have them.
 */
import type { Json, JsonObject } from '../core/json.js';
import type { FailureRecord, GateKind, OnTimeout, RunEvent, RunStatus, TaskStatus } from './events.js';
import { runStatusOf, type GateState, type GateStatus, type PhaseState, type RunState } from './state.js';

export interface PhaseResult {
  /** `partial`: completed with a partial result its agent's contract accepts (the stored task row says `completed`). */
  status: TaskStatus | 'partial';
  task_id: string;
  agent?: string;
  input: JsonObject | null;
  output: JsonObject | null;
  attempts: number;
  cost_usd: number;
  error?: FailureRecord;
  skipped_reason?: string;
  skipped_detail?: string;
  reused_from?: string;
  started_at?: number;
  ended_at?: number;
  /**
   * A fan-out phase (`for_each`) once its items are known: how many, and how many settled each way.
   * A result that keeps no event log (`keepEvents: false`) lists only the items still whole (failed,
   * cancelled, partial, unfinished); the rest are counted here and their outputs are in `output`.
   */
  items?: { count: number; completed: number; failed: number; skipped: number; cancelled: number };
}

export interface GateResult {
  id: string;
  kind: GateKind;
  status: GateStatus;
  phase?: string;
  agent?: string;
  approvers: string[];
  reason: string;
  opened_at: number;
  expires_at?: number;
  on_timeout?: OnTimeout;
  escalated: boolean;
  question?: string;
  choices?: Json[];
  schema?: JsonObject;
  decided_by?: string;
  decided_at?: number;
  comment?: string;
  auto?: boolean;
  value?: Json;
  /** The engine asked because the phase's agent failed (`onAgentFailure: escalate_to_user`): answer `retry`, `skip` or `fail`. */
  escalation?: { failure: FailureRecord };
}

export interface RunResult {
  runId: string;
  workflow: string;
  status: RunStatus;
  phases: Record<string, PhaseResult>;
  gates: GateResult[];
  /** Phases waiting for input (RFC-0025 suspension), in the shape of RFC-0024's RFC-0026 patch ("workflow progress"). */
  suspended_phases: SuspendedPhase[];
  events: RunEvent[];
  cost_usd: number;
  error?: FailureRecord;
  started_at: number;
  /** When the run ended (its terminal event); null while it runs or waits. */
  ended_at: number | null;
  /** `ended_at - started_at`; null while the run has not ended. */
  duration_ms: number | null;
}

/** One entry of `suspended_phases` (RFC-0024, RFC-0026 patch): times are ISO-8601, `expires_at` null without a deadline. */
export interface SuspendedPhase {
  phase_name: string;
  /** The suspended task's id (what `UpstreamIntentSuspendedError.suspended_intent_id` names). */
  intent_id: string;
  suspended_since: string;
  expires_at: string | null;
}

export function gateResult(g: GateState): GateResult {
  return {
    id: g.id,
    kind: g.kind,
    status: g.status,
    ...(g.phase !== undefined ? { phase: g.phase } : {}),
    ...(g.agent !== undefined ? { agent: g.agent } : {}),
    approvers: g.approvers,
    reason: g.reason,
    opened_at: g.openedAt,
    ...(g.expiresAt !== undefined && !g.expired ? { expires_at: g.expiresAt } : {}),
    ...(g.onTimeout !== undefined ? { on_timeout: g.onTimeout } : {}),
    escalated: g.escalated,
    ...(g.question !== undefined ? { question: g.question } : {}),
    ...(g.choices !== undefined ? { choices: g.choices } : {}),
    ...(g.schema !== undefined ? { schema: g.schema } : {}),
    ...(g.decidedBy !== undefined ? { decided_by: g.decidedBy } : {}),
    ...(g.decidedAt !== undefined ? { decided_at: g.decidedAt } : {}),
    ...(g.comment !== undefined ? { comment: g.comment } : {}),
    ...(g.status !== 'open' && g.status !== 'closed' && g.kind !== 'input' ? { auto: g.auto } : {}),
    ...(g.value !== undefined ? { value: g.value } : {}),
    ...(g.escalation !== undefined ? { escalation: g.escalation } : {}),
  };
}

function phaseResult(p: PhaseState): PhaseResult {
  const status = p.status === 'completed' && p.partial ? 'partial' : p.status;
  // the usual task (it ran and ended, and has nothing more to say) in one literal, not built up spread by
  // spread: a run's result holds one per task, and the spreads cost a run of thousands more than its commits
  if (p.agent !== undefined && !p.error && !p.skippedReason && !p.skippedDetail && p.reusedFrom === undefined && p.startedAt !== undefined && p.endedAt !== undefined && !p.fan) {
    return { status, task_id: p.taskId, agent: p.agent, input: p.input ?? null, output: p.output ?? null, attempts: p.attempts, cost_usd: roundUsd(p.costUsd), started_at: p.startedAt, ended_at: p.endedAt };
  }
  return {
    status,
    task_id: p.taskId,
    ...(p.agent !== undefined ? { agent: p.agent } : {}),
    input: p.input ?? null,
    output: p.output ?? null,
    attempts: p.attempts,
    cost_usd: roundUsd(p.costUsd),
    ...(p.error ? { error: p.error } : {}),
    ...(p.skippedReason ? { skipped_reason: p.skippedReason } : {}),
    ...(p.skippedDetail ? { skipped_detail: p.skippedDetail } : {}),
    ...(p.reusedFrom !== undefined ? { reused_from: p.reusedFrom } : {}),
    ...(p.startedAt !== undefined ? { started_at: p.startedAt } : {}),
    ...(p.endedAt !== undefined ? { ended_at: p.endedAt } : {}),
    ...(p.fan ? { items: { count: p.fan.count, completed: p.fan.completed, failed: p.fan.failed, skipped: p.fan.skipped, cancelled: p.fan.cancelled } } : {}),
  };
}

export function toResult(state: RunState, events: RunEvent[]): RunResult {
  const phases: Record<string, PhaseResult> = {};
  const suspended: SuspendedPhase[] = [];
  for (const [name, p] of state.phases) {
    if (p.status === 'suspended_awaiting_input') {
      const g = p.gate !== undefined ? state.gates.get(p.gate) : undefined;
      suspended.push({
        phase_name: name,
        intent_id: p.taskId,
        suspended_since: new Date(g?.openedAt ?? p.startedAt ?? state.startedAt).toISOString(),
        expires_at: g?.expiresAt !== undefined && !g.expired ? new Date(g.expiresAt).toISOString() : null,
      });
    }
    phases[name] = phaseResult(p);
  }
  // a run that has not ended has no end: not the time of its last event (GET /runs says null too)
  const ended = state.endedAt ?? null;
  return {
    runId: state.runId,
    workflow: state.workflow,
    status: runStatusOf(state),
    phases,
    gates: [...state.gates.values()].map(gateResult),
    suspended_phases: suspended,
    events,
    cost_usd: roundUsd(state.costUsd),
    ...(state.failure ? { error: state.failure } : {}),
    started_at: state.startedAt,
    ended_at: ended,
    duration_ms: ended === null ? null : ended - state.startedAt,
  };
}

/** Sums of many small float costs drift (0.1 + 0.2); report to a micro-dollar. */
export function roundUsd(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

/**
 * The run's event log: append-only, ordered by `seq`. Every transition and every rejection is an
 * event; the run's state is a fold over its events (state.ts), so a store that keeps the events
 * keeps the run.
 */
import type { Json, JsonObject } from '../core/json.js';

export type TaskStatus = 'pending' | 'ready' | 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled';
export type RunStatus = 'running' | 'completed' | 'failed' | 'cancelled';

/** A run failure record: serialisable, with a stable code (STYLE.md, errors of the second kind). */
export interface FailureRecord {
  /** The RFC error name (`MissingOutputError`) or an agent's code (`RateLimited`, `Timeout`, ...). */
  code: string;
  /** The error class name for the RFC's named errors and BudgetExceededError (the payload is in `details`). */
  error?: string;
  message: string;
  retryable: boolean;
  /** The RFC section 4 payload for contract errors, or adapter details (exit code, stderr). */
  details?: Record<string, unknown>;
}

interface Base {
  seq: number;
  /** Milliseconds since the epoch (from the injected clock). */
  at: number;
}
interface TaskBase extends Base {
  phase: string;
  task_id: string;
}

export type RunEvent =
  | (Base & { type: 'run.started'; run_id: string; workflow: string; trigger: Json; phases: string[] })
  | (TaskBase & { type: 'task.ready' })
  | (TaskBase & { type: 'task.claimed'; attempt: number; agent: string; input: JsonObject })
  /** Claim-time validation failed (RFC-0024 §3.1): `error` is the UnresolvableInputError / UpstreamIntentSuspendedError payload. */
  | (TaskBase & { type: 'task.claim_rejected'; error: Record<string, unknown> })
  /** Completion-time validation failed (§3.3): the MissingOutputError / OutputTypeMismatchError payload. The task stays running. */
  | (TaskBase & { type: 'task.rejected'; attempt: number; error: Record<string, unknown> })
  | (TaskBase & { type: 'task.attempt_failed'; attempt: number; failure: FailureRecord })
  | (TaskBase & { type: 'task.retrying'; attempt: number; next_attempt: number; delay_ms: number; agent: string; reason: string })
  | (TaskBase & { type: 'task.completed'; attempt: number; output: JsonObject; extra_keys: string[]; cost_usd: number })
  | (TaskBase & { type: 'task.failed'; attempts: number; failure: FailureRecord })
  | (TaskBase & { type: 'task.skipped'; reason: 'skip_when' | 'upstream_skipped'; detail: string })
  | (TaskBase & { type: 'task.cancelled'; reason: string })
  | (TaskBase & { type: 'task.cost'; attempt: number; usd: number; phase_total_usd: number; run_total_usd: number })
  | (TaskBase & { type: 'task.sibling_output'; attempt: number; sibling: string; found: boolean })
  | (TaskBase & { type: 'task.log'; attempt: number; message: string })
  | (Base & { type: 'budget.alert'; scope: 'phase' | 'run'; phase?: string; budget_usd: number; spent_usd: number; percent: number })
  | (Base & { type: 'run.completed' })
  | (Base & { type: 'run.failed'; failure: FailureRecord })
  | (Base & { type: 'run.cancelled'; reason: string });

export type RunEventType = RunEvent['type'];

/** Distributes Omit over the union so each event keeps its own fields. */
export type NewEvent = RunEvent extends infer E ? (E extends RunEvent ? Omit<E, 'seq' | 'at'> : never) : never;

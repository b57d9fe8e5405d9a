/**
 * The run's event log: append-only, ordered by `seq`. Every transition and every rejection is an
 * event; the run's state is a fold over its events (state.ts), so a store that keeps the events
 * keeps the run.
 */
import type { Json, JsonObject } from '../core/json.js';
import type { MissingOutputPayload, OutputTypeMismatchPayload, UnresolvableInputPayload, UpstreamIntentSuspendedPayload } from '../workflow/errors.js';

export type TaskStatus =
  | 'pending'
  | 'ready'
  | 'running'
  | 'awaiting_approval'
  | 'suspended_awaiting_input'
  | 'completed'
  | 'failed'
  | 'skipped'
  | 'cancelled';
/** `waiting`: open gates and nothing running or ready; any worker continues it once they are decided. */
export type RunStatus = 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';

/** `escalation`: a human chose to skip the phase after its agent failed (`onAgentFailure: escalate_to_user`). */
export type SkipReason = 'skip_when' | 'upstream_skipped' | 'escalation';

export type GateKind = 'run' | 'phase' | 'access' | 'input';
export type OnTimeout = 'escalate' | 'abort' | 'proceed';

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
  | (Base & {
      type: 'run.started';
      run_id: string;
      workflow: string;
      /** sha256 of the workflow source the run keeps. */
      workflow_hash?: string;
      trigger: Json;
      phases: string[];
      /** Absolute time the run times out (governance.timeout_hours or --timeout), if any. */
      deadline_at?: number;
      /** Every gate is approved as it opens, recorded as automatic (`--auto-approve`). */
      auto_approve?: boolean;
      /** `baton rerun`: the run whose outputs are reused, and the phase from which everything runs again. */
      rerun_of?: { run_id: string; from: string };
    })
  | (TaskBase & { type: 'task.ready'; /** Not claimed before (a retry delay), absolute ms. */ not_before?: number })
  | (TaskBase & {
      type: 'task.claimed';
      attempt: number;
      agent: string;
      input: JsonObject;
      /** The worker that holds the attempt, and its lease's first expiry (renewals are not events). */
      worker?: string;
      lease_expires_at?: number;
    })
  /** Claim-time validation failed (RFC-0024 §3.1): `error` is the UnresolvableInputError / UpstreamIntentSuspendedError payload. */
  | (TaskBase & { type: 'task.claim_rejected'; error: UnresolvableInputPayload | UpstreamIntentSuspendedPayload })
  /** Completion-time validation failed (§3.3): the MissingOutputError / OutputTypeMismatchError payload. The task stays running. */
  | (TaskBase & { type: 'task.rejected'; attempt: number; error: MissingOutputPayload | OutputTypeMismatchPayload })
  | (TaskBase & { type: 'task.attempt_failed'; attempt: number; failure: FailureRecord })
  /** `ctx.checkpoint(value)`: progress saved durably; a later attempt of the task receives it as `ctx.lastCheckpoint`. */
  | (TaskBase & { type: 'task.checkpoint'; attempt: number; value: Json })
  /**
   * Something a user should see that changes nothing: an attempt running past twice its contract's
   * estimated time (`EstimateExceeded`), a declared file the attempt did not produce (`DeclaredFileMissing`),
   * an output file its completion recorded that could not be synced (`FileNotSynced`), fan-out items whose
   * `$store` targets name one place (`StoreCollision`, attempt 0: the phase's own), fan-out items whose output
   * file paths name one file (`FileCollision`, attempt 0).
   */
  | (TaskBase & { type: 'task.warning'; attempt: number; code: string; message: string; details?: JsonObject })
  /**
   * `held_by` / `held_until`: the failed attempt's code was still running (an agent that did not stop at
   * its abort signal): until then only that worker may start the next attempt, once the code settled.
   */
  | (TaskBase & { type: 'task.retrying'; attempt: number; next_attempt: number; delay_ms: number; agent: string; reason: string; not_before?: number; held_by?: string; held_until?: number })
  | (TaskBase & {
      type: 'task.completed';
      attempt: number;
      output: JsonObject;
      extra_keys: string[];
      cost_usd: number;
      /** `baton rerun`: the output was recorded by this run, not produced again. */
      reused_from?: string;
      /** The agent's contract accepted a partial result (`onPartialCompletion: return_partial`): the task's status is `partial`. */
      partial?: boolean;
    })
  | (TaskBase & { type: 'task.failed'; attempts: number; failure: FailureRecord })
  | (TaskBase & { type: 'task.skipped'; reason: SkipReason; detail: string })
  /**
   * A fan-out phase (`for_each`) resolved its array: `items` item tasks, keyed `phase[index]`, follow as
   * slots free. The phase completes with their outputs gathered once every item has settled.
   */
  | (TaskBase & { type: 'task.fanned_out'; items: number })
  | (TaskBase & { type: 'task.cancelled'; reason: string })
  /**
   * The worker holding the attempt stopped renewing its lease (it died), or handed the attempt back itself
   * (`handed_back`: a stopping worker, a remote agent's release): the task is ready for a new attempt.
   * Handed back while it waits for an answer (suspended, or answered and not yet resumed), the task keeps
   * its status and its question; only the attempt's owner is dropped, so the answer is taken up at once by
   * any worker (no grace for a process that could continue the attempt: it is gone).
   */
  | (TaskBase & { type: 'task.lease_expired'; attempt: number; owner: string; handed_back?: boolean })
  /** An outcome that arrived after its attempt was taken over or the task settled: recorded, never applied. */
  | (TaskBase & { type: 'task.stale_outcome'; attempt: number; worker: string; reason: string; outcome: 'completed' | 'failed' })
  /** The attempt suspended on an input gate continues in the same process with the answer. */
  | (TaskBase & { type: 'task.resumed'; attempt: number; worker?: string; lease_expires_at?: number })
  | (TaskBase & { type: 'task.cost'; attempt: number; usd: number; phase_total_usd: number; run_total_usd: number })
  | (TaskBase & { type: 'task.sibling_output'; attempt: number; sibling: string; found: boolean })
  | (TaskBase & { type: 'task.log'; attempt: number; message: string })
  /**
   * AIP-16 provenance, recorded by the engine (not the agent): a declared input file `staged` from the
   * workspace into the attempt's scratch root, or a declared output `synced` back to it (committed with
   * the attempt's `task.completed`, before the copy: files.ts). `path` is workspace-relative with its
   * tokens replaced; `item` is the fan-out item's index.
   */
  | (TaskBase & { type: 'task.file'; attempt: number; direction: 'staged' | 'synced'; key: string; path: string; sha256: string; size: number; item?: number })
  /**
   * A structured event from the agent adapter (LLM usage, repairs, tool calls, ...). Kind
   * `remote_output_rejected` (OUTPUT_REJECTED_KIND) is the server's: a remote agent's completion that
   * its contract refused with 422 while the attempt goes on, `data` the RFC-0024 payload.
   */
  | (TaskBase & { type: 'task.agent_event'; attempt: number; kind: string; data: JsonObject })
  | (Base & {
      type: 'gate.opened';
      gate_id: string;
      kind: GateKind;
      phase?: string;
      task_id?: string;
      /** Access gates: the agent asking for access. Input gates: the attempt that asked. */
      agent?: string;
      attempt?: number;
      /** Who may decide (empty: anyone). */
      approvers: string[];
      reason: string;
      expires_at?: number;
      on_timeout?: OnTimeout;
      escalate_at?: number;
      /** Input gates: the attempt's k-th request (0-based) this gate asks; absent in logs written before it was recorded. */
      index?: number;
      question?: string;
      choices?: Json[];
      schema?: JsonObject;
      /**
       * Input gates opened by the engine, not by an attempt: the agent's contract says
       * `onAgentFailure: escalate_to_user`, and a human answers `retry`, `skip` or `fail`.
       */
      escalation?: { failure: FailureRecord };
    })
  | (Base & { type: 'gate.decided'; gate_id: string; decision: 'approved' | 'denied'; by: string; comment?: string; auto: boolean })
  /** `owner_gone`: the process whose attempt asked was known to be gone: any worker resumes the task at once (no grace). */
  | (Base & { type: 'gate.answered'; gate_id: string; value: Json; by: string; owner_gone?: true })
  | (Base & { type: 'gate.refused'; gate_id: string; by: string; reason: string })
  | (Base & { type: 'gate.expired'; gate_id: string; action: OnTimeout })
  /**
   * The attempt that asked ended (completed or failed) while its question was open: the question is
   * withdrawn (no answer is taken any more) and the attempt's outcome, which follows, is applied.
   */
  | (Base & { type: 'gate.withdrawn'; gate_id: string; phase: string; attempt: number; reason: string })
  | (Base & { type: 'gate.escalated'; gate_id: string; contact: string | null; waited_ms: number })
  | (Base & { type: 'budget.alert'; scope: 'phase' | 'run'; phase?: string; budget_usd: number; spent_usd: number; percent: number })
  | (Base & { type: 'run.completed' })
  | (Base & { type: 'run.failed'; failure: FailureRecord })
  | (Base & { type: 'run.cancelled'; reason: string });

export type RunEventType = RunEvent['type'];

/**
 * Every event type, for those who take them as words (`GET /runs/{id}/events?type=`): a typo there is
 * refused, not an empty page. The check below fails to compile when a type is added to RunEvent only.
 */
export const RUN_EVENT_TYPES = [
  'run.started', 'run.completed', 'run.failed', 'run.cancelled',
  'task.ready', 'task.claimed', 'task.claim_rejected', 'task.rejected', 'task.attempt_failed', 'task.checkpoint',
  'task.warning', 'task.retrying', 'task.completed', 'task.failed', 'task.skipped', 'task.cancelled',
  'task.lease_expired', 'task.resumed', 'task.fanned_out', 'task.file', 'task.log', 'task.cost',
  'task.agent_event', 'task.sibling_output', 'task.stale_outcome',
  'gate.opened', 'gate.decided', 'gate.answered', 'gate.refused', 'gate.withdrawn', 'gate.expired', 'gate.escalated',
  'budget.alert',
] as const satisfies readonly RunEventType[];
const everyEventType: [Exclude<RunEventType, (typeof RUN_EVENT_TYPES)[number]>] extends [never] ? true : never = true;
void everyEventType;

/** The `task.agent_event` kind of a completion its contract refused while the attempt goes on (a remote agent's 422): a contract rejection on the attempt span. */
export const OUTPUT_REJECTED_KIND = 'remote_output_rejected';

/** Distributes Omit over the union so each event keeps its own fields. */
export type NewEvent = RunEvent extends infer E ? (E extends RunEvent ? Omit<E, 'seq' | 'at'> : never) : never;

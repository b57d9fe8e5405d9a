/**
 * The vocabulary of the decisions (decide.ts): the facts that come in, the results that go back to the
 * caller, and the environment (the time) they are decided in. Re-exported by decide.ts.
 */
import type { Json, JsonObject } from '../core/json.js';
import type { FailureRecord, RunEvent } from './events.js';
import type { FileProvenance } from './files.js';
import type { Claimant } from './due.js';

/** A task handed to a worker by a claim. */
export interface Claimed {
  phase: string;
  taskId: string;
  attempt: number;
  agent: string;
  input: JsonObject;
  /** A fan-out item (`phase[index]` tasks): its element and index (`ctx.item`). */
  item?: { index: number; value: Json };
  /** The answer of the phase's last input gate, for an attempt that replaces one that asked (ctx.inputResponse). */
  inputResponse?: Json;
  /** The task's last checkpoint (`ctx.checkpoint`), for an attempt that follows one that saved it (ctx.lastCheckpoint). */
  lastCheckpoint?: Json;
}

export type Outcome = { ok: true; output: unknown; costUsd: number } | { ok: false; failure: FailureRecord };

export type Fact =
  /** A new run: run.started, then the roots (and the run gate when it reads only trigger / initial_state). */
  | { kind: 'start'; workflowHash?: string; deadlineAt?: number; autoApprove?: boolean; rerunOf?: RerunOf }
  /** Claim up to `max` ready tasks for a worker that binds `agents` (null: every agent). */
  | ({ kind: 'claim'; max: number; leaseMs: number } & Claimant)
  /** `files`: output files checked after the agent returned, recorded (`task.file`) only with the completion they belong to. */
  /**
   * `settlingMs`: the attempt was aborted (its timeout) while its agent's code still runs: a retry of
   * the task is kept for this worker that long (it starts it once that code settles), so that no other
   * worker runs the task beside it.
   */
  | { kind: 'outcome'; phase: string; attempt: number; worker: string; outcome: Outcome; files?: readonly FileProvenance[]; settlingMs?: number }
  | { kind: 'cost'; phase: string; attempt: number; usd: number }
  | { kind: 'log'; phase: string; attempt: number; message: string }
  | { kind: 'record'; phase: string; attempt: number; event: string; data: JsonObject }
  | { kind: 'sibling'; phase: string; attempt: number; sibling: string; found: boolean }
  /** `ctx.checkpoint(value)`: saved durably for the task's later attempts. */
  | { kind: 'checkpoint'; phase: string; attempt: number; value: Json }
  /** A file the engine staged or synced for an attempt (task.file, files.ts). */
  | { kind: 'file'; phase: string; attempt: number; file: FileProvenance }
  /** A warning about a running or just-finished attempt (task.warning). */
  | { kind: 'warn'; phase: string; attempt: number; code: string; message: string; details?: JsonObject }
  /** A running task whose worker is gone (its lease expired, or its process is known dead). */
  | { kind: 'lease_expired'; phase: string; attempt: number; owner: string; /** The owner's process is gone (no wait for its lease). */ dead?: boolean; /** The owner hands its own attempt back (a stopping worker). */ handBack?: boolean; /** A hand-back of an attempt that waits for an answer (suspended, or answered and not yet resumed): no lease in the store to check. */ waiting?: boolean }
  /** Timers: the run deadline, gate expiries, escalations. */
  | { kind: 'tick' }
  | { kind: 'cancel'; reason: string }
  | { kind: 'decide_gate'; gateId: string; decision: 'approved' | 'denied'; by: string; comment?: string }
  /** `ownerGone`: whether the process that asked is known to be gone (this host's check): its task is resumed at once, by any worker. */
  | { kind: 'respond'; gateId: string; value: Json; by: string; ownerGone?: ((owner: string) => boolean) | undefined }
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
  /** An outcome: `accepted` when it completed its task (its files are then to be synced), else it was stale, failed or rejected. */
  | { kind: 'outcome'; accepted: boolean }
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

/**
 * A rerun's start (`engine.rerun`): the run it reruns, the phase it runs again from, the outputs it reuses
 * (by task key), and the output files of those (by the task key their completion is recorded under)
 * that were brought to the paths this run's tokens name: recorded as synced with the reused completion.
 */
export interface RerunOf {
  run_id: string;
  from: string;
  outputs: ReadonlyMap<string, { output: JsonObject; attempt: number }>;
  files?: ReadonlyMap<string, readonly CarriedFile[]>;
}

/** An output file a reused phase (or item) synced in the first run, brought over; `failed`: why it could not be (a warning). */
export type CarriedFile = { key: string; path: string; item?: number } & ({ sha256: string; size: number } | { failed: string });

/**
 * The engine's ports: where runs are kept (this file), what agents look like (agent.ts) and time
 * (core/clock.ts). The engine imports no adapter; the composition root (api/) plugs them in.
 *
 * A store keeps, per run, an append-only event log with a gap-free `seq`, and projections of the
 * run's state that make it queryable without replaying the log (the run row, one row per task).
 * The engine computes every projection from the run state (projection.ts): a store writes what it
 * is given and answers queries; it makes no decisions.
 *
 * Durability invariant: every state change reaches a store through `createRun` or `transact`, and
 * each of those commits its events and projections in ONE transaction, or nothing.
 */
import type { asyncDispose } from '../core/dispose.js';
import type { Json, JsonObject } from '../core/json.js';
import type { FailureRecord, RunEvent, RunStatus, TaskStatus } from './events.js';
import type { StoredSnapshot } from './snapshot.js';

/** A workflow as it was when a run started: a run keeps its workflow even if the file changes. */
export interface WorkflowRecord {
  /** sha256 of `source`, hex. The key: saving the same text twice is a no-op. */
  hash: string;
  name: string;
  /** The file's text, exactly. */
  source: string;
  /** Absolute path of the file it was read from (agents' working directory, relative references). */
  path: string;
}

/** The run row: what `baton runs` lists without reading events. */
export interface RunRecord {
  runId: string;
  workflowHash: string;
  workflowName: string;
  status: RunStatus;
  trigger: Json;
  initialState: JsonObject | null;
  /** How agents were bound (module path, commands, stubs, ...), so a resume binds them the same way. */
  bindings: JsonObject;
  /** Run options that outlive the process (concurrency, timeout, auto-approve, ...). */
  options: JsonObject;
  createdAt: number;
  updatedAt: number;
  endedAt: number | null;
  costUsd: number;
  /** Seq of the last event. */
  seq: number;
  /**
   * Earliest time a timer of this run is due (run deadline, gate expiry, escalation), or null.
   * Retry delays are not here: they are `TaskRow.notBefore`.
   */
  wakeAt: number | null;
}

/** The mutable part of the run row, rewritten by every commit. */
export type RunUpdate = Pick<RunRecord, 'status' | 'updatedAt' | 'endedAt' | 'costUsd' | 'wakeAt'>;

/** One task (phase of a run). */
export interface TaskRow {
  phase: string;
  taskId: string;
  /** `partial`: completed with a partial result its agent's contract accepts. */
  status: TaskStatus | 'partial';
  /** Number of the current (or last) attempt; 0 before the first claim. */
  attempt: number;
  /** The agent that runs (or will run) the next attempt: `assign`, or the fallback agent. */
  agent: string;
  /** The worker holding the running attempt, and until when (ms since epoch). Null unless running. */
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  /**
   * A ready task is not claimed before this time (retry delays, another process's grace period).
   * Null: at once. `HELD` (Number.MAX_SAFE_INTEGER): held by a gate (the run gate, an access gate)
   * until a decision rewrites the row, so that `findWork` never offers it.
   */
  notBefore: number | null;
  input: JsonObject | null;
  /** The output exactly as validated and recorded. */
  output: JsonObject | null;
  failure: FailureRecord | null;
  updatedAt: number;
}

/** A condition the store checks inside the transaction; if one fails, nothing is written. */
export interface LeaseExpectation {
  phase: string;
  attempt: number;
  /** The lease must still be held by this owner... */
  owner: string;
  /** ...and have expired before this time (a takeover). Absent: it must not have expired (still mine). */
  expiredBefore?: number;
}

/** Everything one decision commits: the events and the projections they changed. */
export interface Commit {
  /** Seqs contiguous after the run's current seq. */
  events: RunEvent[];
  run: RunUpdate;
  /** Task rows that changed (upserted by phase). */
  tasks: TaskRow[];
  /** Checked before writing; a failed expectation aborts the commit (`transact` then reports it). */
  expect?: LeaseExpectation[];
}

export interface NewRun {
  run: RunRecord;
  workflow: WorkflowRecord;
  /** The first commit (run.started, ready tasks, ...): written with the run row. */
  commit: Commit;
}

/** Result of the `decide` callback of `transact`. */
export interface TxDecision<T> {
  /** What to write; null writes nothing. */
  commit: Commit | null;
  /** Handed back to the caller of `transact`. */
  value: T;
}

export type TxResult<T> = { ok: true; value: T } | { ok: false; reason: 'expectation'; failed: LeaseExpectation } | { ok: false; reason: 'busy' };

export interface TxOptions {
  /**
   * Do not wait when another transaction holds the run (PostgreSQL): return `{ok: false, reason:
   * 'busy'}` with nothing read or written. For a worker's claim-only transaction: the holder claims
   * for itself as it commits, and its commit wakes the others. Stores with one writer may ignore it.
   */
  skipIfBusy?: boolean;
}

/**
 * One run's commit decided on the caller's own state at `knownSeq`, without reading the run or
 * waiting for it (`commitMany`): it holds only if nothing was committed to the run since.
 */
export interface BatchCommit {
  runId: string;
  /** The run's seq the decision was made on: the commit's events follow it. */
  knownSeq: number;
  /** No lease expectations (takeovers go through `transact`). */
  commit: Commit;
  /**
   * Whether other processes should look (PostgreSQL: NOTIFY): false when the commit leaves nothing
   * for anyone else (its new tasks claimed by the committer itself, the run still running).
   */
  notify: boolean;
}

/** Per commit of a batch: written, or not written because the run moved on (or another writer holds it now). */
export type BatchResult = 'ok' | 'conflict';

/** `RunStore.activity`: the active runs' rows, counted. */
export interface ActivityCounts {
  /** Runs by status (running, waiting). */
  runs: { running: number; waiting: number };
  /** Tasks ready for a worker, none of them held by a gate, by agent. */
  ready: Record<string, number>;
  /** Tasks running (an attempt holds them), by agent. */
  running: Record<string, number>;
  /** The active runs that ever opened a gate: only they can have one open now (their state says which). */
  gated: string[];
}

/** What a worker can do in a run (from `findWork`). */
export interface WorkHint {
  runId: string;
  /** ready: claimable tasks for the agents asked; timer: `wakeAt` is due; lease: a running task's lease expired. */
  reason: 'ready' | 'timer' | 'lease';
  /** The run's seq when the store answered: a worker holding the run at this seq already knows what is due. */
  seq?: number;
  /** For `lease`: true when the lease has not expired and the hint comes only from `ownersLike` (check the owner is dead first). */
  live?: boolean;
  /** For `lease`: the task, its attempt and owner. */
  phase?: string;
  attempt?: number;
  owner?: string;
}

/** What `findWork` is asked. */
export interface FindWorkQuery {
  agents: readonly string[] | null;
  now: number;
  limit: number;
  ownersLike?: string;
  /**
   * A serving worker with free slots: the ready tasks behind the `ready` hints (at most `max`) are
   * reserved for `owner` until `until`, and tasks another worker reserved and whose reservation has
   * not passed are not offered, so that workers asking at once take up different runs instead of all
   * loading the same ones. A reservation is a hint, never a claim (claims are decided under the run's
   * lock or seq); any commit of the task clears it. Stores of one process or one machine may ignore it.
   */
  reserve?: { owner: string; until: number; max: number };
  /**
   * Ready tasks the worker asking cannot run, never offered as `ready` hints: those of `agent` in run
   * `runId` (`agent: null`: every task of the run). A serving worker names the runs it loaded and found
   * needing agents it does not bind, so that older runs it cannot serve do not fill every answer and
   * hide the newer runs it can (a task whose agent changes, or a task newly ready, is offered again).
   */
  skip?: readonly { runId: string; agent: string | null }[];
}

export interface RunFilter {
  status?: RunStatus[];
  /** Only the runs of this workflow (its `info.name`). */
  workflow?: string | undefined;
  /**
   * Only the runs listed after this one, most recent first: created before it, or at the same time with a
   * smaller id (a page's cursor). The store seeks to it in its index: a deep page costs what the first does.
   */
  before?: { createdAt: number; runId: string } | undefined;
  /** Most recent first; default 100. */
  limit?: number;
}

export interface RunStore {
  /** `memory`, `sqlite` or `postgres`. */
  readonly kind: string;
  /** A human-readable location (`.baton/baton.db`, `postgres://host/db`), no password. */
  readonly location: string;
  /**
   * Whether the store decides in a clock of its own (PostgreSQL: the database's), passed to
   * `transact`'s decide as `now`. A worker then estimates that clock between commits. Absent: the
   * caller's clock is the store's.
   */
  readonly hasClock?: boolean;

  /**
   * The store's clock now, for a store that has one (`hasClock`): PostgreSQL's `clock_timestamp()`, the
   * clock of the machine that holds a SQLite file. A worker that has not committed yet asks it before it
   * stamps a new run or looks for due timers.
   */
  clockNow?(): Promise<number>;

  /** Creates the run row, stores the workflow (if new) and the first commit, in one transaction. Throws StoreError `run-exists` for a taken id. */
  createRun(init: NewRun): Promise<void>;
  /**
   * Many `createRun`s in one transaction (one round trip, one fsync), each run independently: its entry
   * of the answer is undefined when it was created, or the error `createRun` would have thrown for it
   * alone (`run-exists`, a malformed first commit), and then nothing of it was written. Rejects, writing
   * nothing, when the store fails. The runs have distinct ids. Optional: without it each run is created
   * by `createRun`.
   */
  createRuns?(inits: readonly NewRun[]): Promise<(Error | undefined)[]>;
  run(runId: string): Promise<RunRecord | undefined>;
  runs(filter?: RunFilter): Promise<RunRecord[]>;
  workflow(hash: string): Promise<WorkflowRecord | undefined>;
  /**
   * Events with seq > afterSeq, in order; the first `limit` of them when given (a page of a long log is
   * then read without the rest of it). A store that does not know `limit` returns them all: callers slice.
   */
  events(runId: string, afterSeq?: number, limit?: number): Promise<RunEvent[]>;
  tasks(runId: string): Promise<TaskRow[]>;
  /**
   * What the active runs (running or waiting) hold now, counted where the rows are: for gauges
   * (`/metrics`), whatever the number of runs. Optional: without it a scrape reads the active runs one by one.
   */
  activity?(): Promise<ActivityCounts>;

  /**
   * The run's latest snapshot of `format` (engine/snapshot.ts) and the events after it, or every
   * event when it has none, read as of one moment. Optional: a store without it loads runs by
   * replaying their whole log.
   */
  readState?(runId: string, format: number): Promise<{ snapshot: StoredSnapshot | undefined; events: RunEvent[] }>;
  /**
   * Keeps a snapshot of the run's state unless one at the same or a later seq is kept. A cache,
   * outside every commit: a lost one costs a longer replay, nothing else.
   */
  saveSnapshot?(runId: string, snapshot: StoredSnapshot): Promise<void>;

  /**
   * The one write path after creation. Serialises against every other transaction on the run
   * (a row lock, or SQLite's single writer), reads the events committed since `knownSeq`, calls
   * `decide(delta)` synchronously with them, and commits what it returns, all in one transaction.
   * `now` is the store's own clock when it has one (PostgreSQL: the database's `clock_timestamp()`,
   * read in the same round trip), so that every process compares due times, leases and deadlines
   * in one clock; undefined for stores on this machine (the caller's clock is the store's).
   * If `decide` throws, nothing is written and the error propagates. If an expectation fails,
   * nothing is written and `{ok: false}` is returned (decide's in-memory effects are then the
   * caller's to discard). Throws StoreError `unknown-run` for an unknown run.
   */
  transact<T>(runId: string, knownSeq: number, decide: (delta: RunEvent[], now?: number) => TxDecision<T>, opts?: TxOptions): Promise<TxResult<T>>;

  /**
   * The fast path of a worker that already holds the runs' current state: writes each commit only if
   * its run's stored seq is still `knownSeq` and no other transaction holds the run at that moment,
   * all in one round trip, each run independently ('conflict': nothing of that run written; the
   * caller rebuilds its state from the store). `now`: the store's clock when it has one (PostgreSQL),
   * read as the batch committed. A batch names each run at most once. Optional: without it every
   * commit goes through `transact`.
   */
  commitMany?(items: readonly BatchCommit[]): Promise<{ results: BatchResult[]; now?: number }>;

  /**
   * What a worker could do now, oldest first: runs with a ready task for one of `agents` (null:
   * any agent) whose notBefore has passed, runs whose wakeAt is due, and running tasks whose lease
   * expired, or whose owner is named by `ownersLike` (a prefix: the workers of this host, whose
   * liveness the caller can check). Only runs in status running or waiting. Ready work comes in
   * the order it became due; tasks held by a gate never come. At most `limit` hints.
   */
  findWork(q: FindWorkQuery): Promise<WorkHint[]>;

  /**
   * Extends the leases `owner` holds on these running attempts to `until`. Returns the ones it no
   * longer holds (taken over, or the task left running): their attempts must stop.
   */
  renewLeases(owner: string, until: number, held: readonly { runId: string; phase: string; attempt: number }[]): Promise<{ runId: string; phase: string; attempt: number }[]>;

  /**
   * Resolves when another process may have changed something (PostgreSQL: LISTEN/NOTIFY on every
   * commit), or after `maxMs`, or when `signal` aborts. Never rejects.
   */
  waitForChange(maxMs: number, signal?: AbortSignal): Promise<void>;

  /**
   * The runs changed since `consumer`'s last call with their new seq, when the store knows them, or
   * 'unknown' (any run may have changed: a consumer's first call, a reconnect, an overflow, or a store
   * that cannot tell). Each consumer (a worker, a change hub) hears of every commit, whatever the others
   * took. Memory: kept per consumer at each commit; SQLite: the runs whose `changed_at` passed the
   * consumer's mark (other processes' commits included); PostgreSQL: the NOTIFY payloads. Optional: a
   * store without it is always 'unknown'.
   */
  takeChanged?(consumer?: object): ReadonlyMap<string, number> | 'unknown';
  /** Forgets a consumer of takeChanged (a worker that closed). Optional. */
  forgetChanged?(consumer: object): void;
  /**
   * True when `takeChanged` names every run with a new commit (memory, SQLite; PostgreSQL with
   * `listen: 'commits'`), so a reader may wait for its own run's changes only. False or absent: it names
   * some (PostgreSQL's default hears only commits that leave work), and a reader looks at every change.
   */
  readonly changesComplete?: boolean;

  close(): Promise<void>;
  /** close(): `await using store = ...`. */
  [asyncDispose](): Promise<void>;
}

/** `TaskRow.notBefore` of a ready task held by a gate: never due until a decision rewrites the row. */
export const HELD = Number.MAX_SAFE_INTEGER;

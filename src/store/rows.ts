/**
 * What the SQL stores share: the row shapes (both dialects hand JSON columns back as text and
 * times as numbers), their mapping to the port's records, and the checks every store makes on a
 * commit before writing it.
 */
import { BatonError } from '../core/errors.js';
import type { Json, JsonObject } from '../core/json.js';
import type { FailureRecord, RunEvent, RunStatus, TaskStatus } from '../engine/events.js';
import type { Commit, FindWorkQuery, LeaseExpectation, RunRecord, TaskRow, WorkflowRecord, WorkHint } from '../engine/ports.js';

export interface RunRow {
  run_id: string;
  workflow_hash: string;
  workflow_name: string;
  status: string;
  trigger_json: string;
  initial_state: string | null;
  bindings: string;
  options: string;
  created_at: number;
  updated_at: number;
  ended_at: number | null;
  cost_usd: number;
  seq: number;
  wake_at: number | null;
}

export interface TaskRowSql {
  run_id: string;
  phase: string;
  task_id: string;
  status: string;
  attempt: number;
  agent: string;
  lease_owner: string | null;
  lease_expires_at: number | null;
  not_before: number | null;
  input: string | null;
  output: string | null;
  failure: string | null;
  updated_at: number;
}

export interface WorkflowRow {
  hash: string;
  name: string;
  source: string;
  path: string;
}

export const RUN_COLUMNS =
  'run_id, workflow_hash, workflow_name, status, trigger_json, initial_state, bindings, options, created_at, updated_at, ended_at, cost_usd, seq, wake_at';
export const TASK_COLUMNS =
  'run_id, phase, task_id, status, attempt, agent, lease_owner, lease_expires_at, not_before, input, output, failure, updated_at';

/** JSON text of a value, null kept as SQL NULL (for nullable columns). */
export function jsonOrNull(v: Json | FailureRecord | null): string | null {
  return v === null ? null : JSON.stringify(v);
}

function parse<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

export function runFromRow(r: RunRow): RunRecord {
  return {
    runId: r.run_id,
    workflowHash: r.workflow_hash,
    workflowName: r.workflow_name,
    status: r.status as RunStatus,
    trigger: JSON.parse(r.trigger_json) as Json,
    initialState: parse<JsonObject>(r.initial_state),
    bindings: JSON.parse(r.bindings) as JsonObject,
    options: JSON.parse(r.options) as JsonObject,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    endedAt: r.ended_at,
    costUsd: r.cost_usd,
    seq: r.seq,
    wakeAt: r.wake_at,
  };
}

export function taskFromRow(r: TaskRowSql): TaskRow {
  return {
    phase: r.phase,
    taskId: r.task_id,
    status: r.status as TaskStatus,
    attempt: r.attempt,
    agent: r.agent,
    // a ready row's lease columns hold a findWork reservation (a hint among workers), not a lease
    leaseOwner: r.status === 'running' ? r.lease_owner : null,
    leaseExpiresAt: r.status === 'running' ? r.lease_expires_at : null,
    notBefore: r.not_before,
    input: parse<JsonObject>(r.input),
    output: parse<JsonObject>(r.output),
    failure: parse<FailureRecord>(r.failure),
    updatedAt: r.updated_at,
  };
}

export function workflowFromRow(r: WorkflowRow): WorkflowRecord {
  return { hash: r.hash, name: r.name, source: r.source, path: r.path };
}

export function eventFromBody(body: string): RunEvent {
  return JSON.parse(body) as RunEvent;
}

/** The task's phase for an event (task events carry one), for the `phase` column. */
export function eventPhase(e: RunEvent): string | null {
  return 'phase' in e && typeof e.phase === 'string' ? e.phase : null;
}

/**
 * Gap-free seq: the commit's events must follow `lastSeq` one by one. Checked before anything is
 * written, so a bad commit writes nothing. Returns the run's seq after the commit.
 */
export function checkSeq(runId: string, lastSeq: number, events: readonly RunEvent[]): number {
  let last = lastSeq;
  for (const e of events) {
    if (e.seq !== last + 1) throw new BatonError('store', `run ${runId}: event seq ${e.seq} does not follow ${last}`);
    last = e.seq;
  }
  return last;
}

/** A commit's task rows, one per phase (the last one given wins, as an upsert by phase would). */
export function tasksByPhase(c: Commit): TaskRow[] {
  if (c.tasks.length < 2) return c.tasks;
  const m = new Map<string, TaskRow>();
  for (const t of c.tasks) m.set(t.phase, t);
  return [...m.values()];
}

/** FindWorkQuery.skip as keys `run \x1f agent` (`run \x1f`: every task of the run), as each store matches them; null when none. */
export function skipKeys(q: FindWorkQuery): string[] | null {
  return q.skip && q.skip.length > 0 ? q.skip.map((k) => `${k.runId}\u001f${k.agent ?? ''}`) : null;
}

/** A findWork row as a hint (every store): `live` is a running task of a local owner whose lease has not expired. */
export function hintFromRow(h: { run_id: string; reason: string; phase: string | null; attempt: number | null; owner: string | null; seq: number | string | null }): WorkHint {
  const seq = h.seq === null ? {} : { seq: Number(h.seq) };
  if (h.reason === 'lease' || h.reason === 'live') return { runId: h.run_id, reason: 'lease', phase: h.phase!, attempt: h.attempt!, owner: h.owner!, ...(h.reason === 'live' ? { live: true } : {}), ...seq };
  return { runId: h.run_id, reason: h.reason as 'ready' | 'timer', ...seq };
}

/** Whether a task row meets an expectation (the same rule in every store; memory.ts keeps it too). */
export function meets(t: Pick<TaskRowSql, 'status' | 'attempt' | 'lease_owner' | 'lease_expires_at'> | undefined, x: LeaseExpectation): boolean {
  if (t === undefined || t.status !== 'running' || t.attempt !== x.attempt || t.lease_owner !== x.owner) return false;
  return x.expiredBefore === undefined || (t.lease_expires_at ?? 0) < x.expiredBefore;
}

/** Waiters for `waitForChange` inside one process: woken by local commits, a timeout or an abort. */
export class Waiters {
  private readonly set = new Set<() => void>();

  get size(): number {
    return this.set.size;
  }

  wait(maxMs: number, signal?: AbortSignal, onDone?: () => void): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.set.delete(done);
        onDone?.();
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, Math.min(maxMs, 2 ** 31 - 1)));
      signal?.addEventListener('abort', done, { once: true });
      this.set.add(done);
    });
  }

  wakeAll(): void {
    for (const w of [...this.set]) w();
  }
}

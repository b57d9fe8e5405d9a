/**
 * The embedded default store: one SQLite file (`.baton/baton.db`) through node:sqlite or better-sqlite3 (sqlite-driver.ts).
 *
 * Concurrency and durability: SQLite has one writer. Every write (createRun, transact,
 * renewLeases) is ONE synchronous `BEGIN IMMEDIATE` transaction, so the run's seq read, the
 * engine's decision and the writes happen under the write lock, and a commit is one fsync of the
 * WAL (synchronous=FULL: an acknowledged commit survives power loss; NORMAL: survives a crash of
 * the process only). Another process (`baton approve` in a second terminal) waits up to the busy
 * timeout for the lock instead of failing; past it, `store-locked`. WAL keeps readers unblocked.
 * `decide` is synchronous, so no await ever happens while the lock is held.
 */
import { checkSchema, openReadonly } from './sqlite-readonly.js';
import { dirname } from 'node:path';
import { makeDirs } from '../core/make-dirs.js';
import * as Database from './sqlite-driver.js';
import { asyncDispose } from '../core/dispose.js';
import { BatonError } from '../core/errors.js';
import type { RunEvent } from '../engine/events.js';
import type { StoredSnapshot } from '../engine/snapshot.js';
import type { ActivityCounts, BatchCommit, BatchResult, Commit, FindWorkQuery, LeaseExpectation, NewRun, RunFilter, RunRecord, RunStore, TaskRow, TxDecision, TxResult, WorkflowRecord, WorkHint } from '../engine/ports.js';
import { latestVersion, MIGRATIONS, pending, type Migration } from './migrations.js';
import {
  checkSeq,
  eventFromBody,
  hintFromRow,
  skipKeys,
  eventPhase,
  jsonOrNull,
  meets,
  RUN_COLUMNS,
  runFromRow,
  TASK_COLUMNS,
  taskFromRow,
  tasksByPhase,
  Waiters,
  workflowFromRow,
  type RunRow,
  type TaskRowSql,
  type WorkflowRow,
} from './rows.js';

export interface SqliteStoreOptions {
  /** `full` (default): every commit is fsync'd. `normal`: faster, survives process crashes only. */
  sync?: 'full' | 'normal' | undefined;
  /** How long a write waits for another process's lock before `store-locked`. Default 5 s. */
  busyTimeoutMs?: number | undefined;
  /** How often `waitForChange` looks for commits of other processes. Default 100 ms. */
  pollMs?: number | undefined;
  /** Shown in messages and as `location`; default: the file path. */
  location?: string | undefined;
  /** The schema's migrations (tests add a fake next version). */
  migrations?: readonly Migration[] | undefined;
  /** Open to read only (`baton runs`, `show`): nothing is created, migrated or written (sqlite-readonly.ts). */
  readonly?: boolean | undefined;
  /**
   * Decide in the clock of the machine that holds the file (default true), read inside each
   * transaction: every process on the file compares due times, leases and deadlines in that one
   * clock, whatever clock its engine was given (a `BATON_CLOCK_OFFSET_MS`, a library caller's own), as
   * PostgreSQL's store decides in the database's. Tests that drive time by hand turn it off.
   */
  databaseClock?: boolean | undefined;
}

type Stmt = Database.Statement<unknown[], unknown>;

/**
 * CHANGES: which runs changed since a point, across processes. Every write of a run row (createRun,
 * transact, commitMany) sets its changed_at one above the largest in the table, read under the write
 * lock (SQLite has one writer, and max() is one probe of the runs_changed index), so changed_at grows in
 * commit order and a reader's `WHERE changed_at > mark` finds every run written since `mark`.
 */
const NEXT_CHANGE = 'SELECT coalesce(max(changed_at), 0) + 1 FROM runs';
/** Runs takeChanged names at most; past this it says 'unknown'. */
const MAX_CHANGED = 10_000;
type Decide = (delta: RunEvent[], now?: number) => TxDecision<unknown>;
interface HintRow {
  run_id: string;
  reason: WorkHint['reason'];
  phase: string | null;
  attempt: number | null;
  owner: string | null;
  seq: number | null;
}
interface LeaseRow {
  status: string;
  attempt: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
}

/**
 * findWork: due timers, runs with ready tasks and expired (or this host's) leases of live runs, each part
 * through its partial index. The oldest first, but each kind is sure of a quarter of the limit (`rk`, its
 * rank among its kind): many older runs' timers coming due at once no longer hide a newer run's ready work.
 */
export const FIND_WORK_SQL = `
SELECT run_id, reason, phase, attempt, owner, seq FROM (SELECT h.*, row_number() OVER (PARTITION BY k ORDER BY created_at, run_id, phase) AS rk FROM (
  SELECT w.run_id, w.created_at, 0 AS k, 'timer' AS reason, NULL AS phase, NULL AS attempt, NULL AS owner, w.seq AS seq
    FROM (SELECT r.run_id, r.created_at, r.seq FROM runs r WHERE r.status IN ('running', 'waiting') AND r.wake_at IS NOT NULL AND r.wake_at <= :now
      ORDER BY r.wake_at LIMIT :limit) w
  UNION ALL
  SELECT r.run_id, r.created_at, 1, 'ready', NULL, NULL, NULL, r.seq
    FROM (SELECT DISTINCT d.run_id FROM (
        SELECT t.run_id FROM tasks t
        WHERE t.status = 'ready' AND (t.not_before IS NULL OR t.not_before < 9007199254740991)
          AND (:agents IS NULL OR t.agent IN (SELECT value FROM json_each(:agents)))
          AND (:skip IS NULL OR (t.run_id || char(31) || t.agent) NOT IN (SELECT value FROM json_each(:skip)) AND (t.run_id || char(31)) NOT IN (SELECT value FROM json_each(:skip)))
          AND (t.not_before IS NULL OR t.not_before <= :now)
        ORDER BY COALESCE(t.not_before, t.updated_at) LIMIT :limit * 8) d) x
    JOIN runs r ON r.run_id = x.run_id WHERE r.status IN ('running', 'waiting')
  UNION ALL
  SELECT t.run_id, r.created_at, 2, CASE WHEN t.lease_expires_at < :now THEN 'lease' ELSE 'live' END, t.phase, t.attempt, t.lease_owner, r.seq
    FROM tasks t JOIN runs r ON r.run_id = t.run_id
    WHERE t.status = 'running' AND t.lease_owner IS NOT NULL AND r.status IN ('running', 'waiting')
      AND (t.lease_expires_at < :now OR (:owners IS NOT NULL AND substr(t.lease_owner, 1, length(:owners)) = :owners))
) h)
ORDER BY (rk > :limit / 4), created_at, run_id, k, phase LIMIT :limit`;

/** RunStore.activity's three counts over the active runs (`p` prepares; 9007199254740991 is HELD). */
const ACTIVITY_SQL = (p: (sql: string) => Stmt): Record<'activityRuns' | 'activityTasks' | 'activityGated', Stmt> => ({
  activityRuns: p("SELECT status, count(*) AS n FROM runs WHERE status IN ('running', 'waiting') AND seq >= 0 GROUP BY status"),
  // each side through its partial index (tasks_due: ready and not held; tasks_lease: running), as findWork reads them
  activityTasks: p(
    `SELECT t.agent, 'ready' AS status, count(*) AS n FROM tasks t JOIN runs r ON r.run_id = t.run_id
       WHERE t.status = 'ready' AND (t.not_before IS NULL OR t.not_before < 9007199254740991) AND r.status IN ('running', 'waiting') GROUP BY t.agent
     UNION ALL
     SELECT t.agent, 'running', count(*) FROM tasks t JOIN runs r ON r.run_id = t.run_id
       WHERE t.status = 'running' AND r.status IN ('running', 'waiting') GROUP BY t.agent`,
  ),
  activityGated: p(
    "SELECT r.run_id FROM runs r WHERE r.status IN ('running', 'waiting') AND r.seq >= 0 AND EXISTS (SELECT 1 FROM events e WHERE e.run_id = r.run_id AND e.type = 'gate.opened')",
  ).pluck(),
});

/** Opens (creating and migrating if needed) a SQLite store. Throws store-corrupt, store-version, store-locked. */
export function openSqliteStore(file: string, opts: SqliteStoreOptions = {}): SqliteStore {
  return new SqliteStore(file, opts);
}

export class SqliteStore implements RunStore {
  readonly kind = 'sqlite';
  readonly location: string;
  private readonly databaseClock: boolean;
  get hasClock(): boolean {
    return this.databaseClock;
  }
  private readonly db: Database.Database;
  private readonly busyMs: number;
  private readonly pollMs: number;
  private readonly waiters = new Waiters();
  private poll: ReturnType<typeof setInterval> | undefined;
  private dataVersion = 0;
  private readonly s: Record<
    | 'runSeq'
    | 'eventsAfter'
    | 'eventsAfterLimit'
    | 'insertEvent'
    | 'upsertTask'
    | 'updateRun'
    | 'insertRun'
    | 'insertWorkflow'
    | 'taskLease'
    | 'run'
    | 'runs'
    | 'runsOfWorkflow'
    | 'workflow'
    | 'tasks'
    | 'findWork'
    | 'renew'
    | 'dataVersion'
    | 'changedSince'
    | 'lastChange'
    | 'activityRuns'
    | 'activityTasks'
    | 'activityGated',
    Stmt
  >;
  /** Per consumer of takeChanged: the largest changed_at it has been told of (CHANGES). */
  private readonly marks = new Map<object, number>();
  readonly changesComplete = true;
  private readonly txTransact: Database.Transaction<(runId: string, knownSeq: number, decide: Decide) => { result: TxResult<unknown>; wrote: boolean }>;
  private readonly txMany: Database.Transaction<(items: readonly BatchCommit[]) => { results: BatchResult[]; wrote: boolean }>;
  private readonly txCreate: Database.Transaction<(init: NewRun) => void>;
  private readonly txCreateMany: Database.Transaction<(inits: readonly NewRun[]) => (Error | undefined)[]>;
  private readonly txRenew: Database.Transaction<(owner: string, until: number, held: readonly { runId: string; phase: string; attempt: number }[]) => { runId: string; phase: string; attempt: number }[]>;

  constructor(file: string, opts: SqliteStoreOptions = {}) {
    this.location = opts.location ?? file;
    this.databaseClock = opts.databaseClock ?? true;
    this.busyMs = opts.busyTimeoutMs ?? 5_000;
    this.pollMs = opts.pollMs ?? 100;
    try {
      if (opts.readonly) this.db = pinned(openReadonly(file, this.busyMs));
      else {
        if (file !== ':memory:') makeDirs(dirname(file));
        this.db = pinned(Database.open(file, { timeout: this.busyMs }));
      }
    } catch (err) {
      throw this.fault(err);
    }
    try {
      // any read of a file that is not a database fails here (SQLITE_NOTADB)
      // exec, not pragma(): pragma() prepares a statement of its own each time (see pinned())
      this.db.exec('PRAGMA schema_version');
      if (opts.readonly) checkSchema(this.db, this.location, opts.migrations ?? MIGRATIONS);
      else {
        if (file !== ':memory:') this.db.exec('PRAGMA journal_mode = WAL');
        this.db.exec(`PRAGMA synchronous = ${opts.sync === 'normal' ? 'NORMAL' : 'FULL'}`);
        migrate(this.db, this.location, opts.migrations ?? MIGRATIONS);
      }
      this.s = this.prepare();
      this.dataVersion = this.s.dataVersion.get() as number;
    } catch (err) {
      this.db.close();
      throw this.fault(err);
    }
    this.txTransact = this.db.transaction((runId: string, knownSeq: number, decide: Decide) => this.transactIn(runId, knownSeq, decide));
    this.txCreate = this.db.transaction((init: NewRun) => this.createIn(init));
    this.txCreateMany = this.db.transaction((inits: readonly NewRun[]) => this.createManyIn(inits));
    this.txMany = this.db.transaction((items: readonly BatchCommit[]) => this.commitManyIn(items));
    this.txRenew = this.db.transaction((owner: string, until: number, held: readonly { runId: string; phase: string; attempt: number }[]) => {
      const lost: { runId: string; phase: string; attempt: number }[] = [];
      for (const h of held) if (this.s.renew.run(until, h.runId, h.phase, h.attempt, owner).changes === 0) lost.push(h);
      return lost;
    });
  }

  private prepare(): SqliteStore['s'] {
    const p = (sql: string): Stmt => this.db.prepare(sql);
    return {
      runSeq: p('SELECT seq FROM runs WHERE run_id = ?').pluck(),
      eventsAfter: p('SELECT body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq').pluck(),
      eventsAfterLimit: p('SELECT body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?').pluck(),
      insertEvent: p('INSERT INTO events (run_id, seq, type, at, phase, body) VALUES (?, ?, ?, ?, ?, ?)'),
      upsertTask: p(
        `INSERT INTO tasks (${TASK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (run_id, phase) DO UPDATE SET task_id = excluded.task_id, status = excluded.status, attempt = excluded.attempt,
           agent = excluded.agent, lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
           not_before = excluded.not_before, input = excluded.input, output = excluded.output, failure = excluded.failure,
           updated_at = excluded.updated_at`,
      ),
      // changed_at: see CHANGES (the top of this file)
      updateRun: p(`UPDATE runs SET status = ?, updated_at = ?, ended_at = ?, cost_usd = ?, wake_at = ?, seq = ?, changed_at = (${NEXT_CHANGE}) WHERE run_id = ?`),
      insertRun: p(`INSERT INTO runs (${RUN_COLUMNS}, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (${NEXT_CHANGE}))`),
      insertWorkflow: p('INSERT INTO workflows (hash, name, source, path, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING'),
      taskLease: p('SELECT status, attempt, lease_owner, lease_expires_at FROM tasks WHERE run_id = ? AND phase = ?'),
      run: p(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`),
      runs: p(
        // the cursor as a row value, never NULL (no cursor: after the largest time there is), so the
        // scan of runs_recent starts at it rather than filtering every newer run on the way
        `SELECT ${RUN_COLUMNS} FROM runs WHERE (created_at, run_id) < (:beforeAt, :beforeId)
           AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
         ORDER BY created_at DESC, run_id DESC LIMIT :limit`,
      ),
      // one workflow's: a seek in runs_workflow_recent, past no other workflow's runs
      runsOfWorkflow: p(
        `SELECT ${RUN_COLUMNS} FROM runs WHERE workflow_name = :workflow AND (created_at, run_id) < (:beforeAt, :beforeId)
           AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
         ORDER BY created_at DESC, run_id DESC LIMIT :limit`,
      ),
      workflow: p('SELECT hash, name, source, path FROM workflows WHERE hash = ?'),
      tasks: p(`SELECT ${TASK_COLUMNS} FROM tasks WHERE run_id = ? ORDER BY phase`),
      findWork: p(FIND_WORK_SQL),
      renew: p("UPDATE tasks SET lease_expires_at = ? WHERE run_id = ? AND phase = ? AND attempt = ? AND status = 'running' AND lease_owner = ?"),
      dataVersion: p('PRAGMA data_version').pluck(),
      changedSince: p('SELECT run_id, seq, changed_at FROM runs WHERE changed_at > ? ORDER BY changed_at LIMIT ?'),
      lastChange: p('SELECT coalesce(max(changed_at), 0) FROM runs').pluck(),
      ...ACTIVITY_SQL(p),
    };
  }

  /** The clock of the machine that holds the file, which every process on it shares (see `databaseClock`). */
  clockNow(): Promise<number> {
    return Promise.resolve(Date.now());
  }

  createRun(init: NewRun): Promise<void> {
    try {
      this.txCreate.immediate(init);
    } catch (err) {
      return Promise.reject(this.fault(err));
    }
    if (init.commit.events.length > 0) this.waiters.wakeAll();
    return Promise.resolve();
  }

  createRuns(inits: readonly NewRun[]): Promise<(Error | undefined)[]> {
    let out: (Error | undefined)[];
    try {
      out = this.txCreateMany.immediate(inits);
    } catch (err) {
      return Promise.reject(this.fault(err));
    }
    if (inits.some((init, i) => out[i] === undefined && init.commit.events.length > 0)) this.waiters.wakeAll();
    return Promise.resolve(out);
  }

  /** Each run whose checks pass is written; one that fails them is answered with the error, nothing of it written. */
  private createManyIn(inits: readonly NewRun[]): (Error | undefined)[] {
    return inits.map((init) => {
      let seq: number;
      try {
        seq = this.createChecks(init);
      } catch (err) {
        if (err instanceof BatonError) return err;
        throw err;
      }
      this.writeNew(init, seq);
      return undefined;
    });
  }

  /** What refuses a new run before anything of it is written: a taken id, a first commit whose seqs are wrong. Its seq. */
  private createChecks(init: NewRun): number {
    const id = init.run.runId;
    if (this.s.runSeq.get(id) !== undefined) throw new BatonError('run-exists', `a run with id ${id} already exists`);
    return checkSeq(id, 0, init.commit.events);
  }

  private createIn(init: NewRun): void {
    this.writeNew(init, this.createChecks(init));
  }

  private writeNew(init: NewRun, seq: number): void {
    const id = init.run.runId;
    const w = init.workflow;
    this.s.insertWorkflow.run(w.hash, w.name, w.source, w.path, init.run.createdAt);
    const r = { ...init.run, ...init.commit.run };
    this.s.insertRun.run(
      id,
      r.workflowHash,
      r.workflowName,
      r.status,
      JSON.stringify(r.trigger),
      jsonOrNull(r.initialState),
      JSON.stringify(r.bindings),
      JSON.stringify(r.options),
      r.createdAt,
      r.updatedAt,
      r.endedAt,
      r.costUsd,
      seq,
      r.wakeAt,
    );
    this.writeRows(id, init.commit);
  }

  private writeRows(runId: string, c: Commit): void {
    for (const e of c.events) this.s.insertEvent.run(runId, e.seq, e.type, e.at, eventPhase(e), JSON.stringify(e));
    for (const t of tasksByPhase(c)) {
      this.s.upsertTask.run(
        runId,
        t.phase,
        t.taskId,
        t.status,
        t.attempt,
        t.agent,
        t.leaseOwner,
        t.leaseExpiresAt,
        t.notBefore,
        jsonOrNull(t.input),
        jsonOrNull(t.output),
        jsonOrNull(t.failure),
        t.updatedAt,
      );
    }
  }

  run(runId: string): Promise<RunRecord | undefined> {
    return this.read(() => {
      const r = this.s.run.get(runId) as RunRow | undefined;
      return r ? runFromRow(r) : undefined;
    });
  }

  runs(filter: RunFilter = {}): Promise<RunRecord[]> {
    return this.read(() =>
      (filter.workflow === undefined
        ? (this.s.runs.all({ statuses: filter.status ? JSON.stringify(filter.status) : null, beforeAt: filter.before?.createdAt ?? Number.MAX_SAFE_INTEGER, beforeId: filter.before?.runId ?? '', limit: filter.limit ?? 100 }) as RunRow[])
        : (this.s.runsOfWorkflow.all({ workflow: filter.workflow, statuses: filter.status ? JSON.stringify(filter.status) : null, beforeAt: filter.before?.createdAt ?? Number.MAX_SAFE_INTEGER, beforeId: filter.before?.runId ?? '', limit: filter.limit ?? 100 }) as RunRow[])
      ).map(runFromRow),
    );
  }

  activity(): Promise<ActivityCounts> {
    return this.read(() => {
      const out: ActivityCounts = { runs: { running: 0, waiting: 0 }, ready: {}, running: {}, gated: [] };
      for (const r of this.s.activityRuns.all() as { status: 'running' | 'waiting'; n: number }[]) out.runs[r.status] = Number(r.n);
      for (const r of this.s.activityTasks.all() as { agent: string; status: 'ready' | 'running'; n: number }[]) out[r.status][r.agent] = Number(r.n);
      out.gated = this.s.activityGated.all() as string[];
      return out;
    });
  }

  workflow(hash: string): Promise<WorkflowRecord | undefined> {
    return this.read(() => {
      const w = this.s.workflow.get(hash) as WorkflowRow | undefined;
      return w ? workflowFromRow(w) : undefined;
    });
  }

  events(runId: string, afterSeq = 0, limit?: number): Promise<RunEvent[]> {
    return this.read(() => ((limit !== undefined ? this.s.eventsAfterLimit.all(runId, afterSeq, limit) : this.s.eventsAfter.all(runId, afterSeq)) as string[]).map(eventFromBody));
  }

  tasks(runId: string): Promise<TaskRow[]> {
    return this.read(() => (this.s.tasks.all(runId) as TaskRowSql[]).map(taskFromRow));
  }

  transact<T>(runId: string, knownSeq: number, decide: (delta: RunEvent[], now?: number) => TxDecision<T>): Promise<TxResult<T>> {
    let out: { result: TxResult<unknown>; wrote: boolean };
    try {
      out = this.txTransact.immediate(runId, knownSeq, decide);
    } catch (err) {
      return Promise.reject(this.fault(err));
    }
    if (out.wrote) this.waiters.wakeAll();
    return Promise.resolve(out.result as TxResult<T>);
  }

  /** Inside BEGIN IMMEDIATE: read, decide, check, write. A throw rolls everything back. */
  private transactIn(runId: string, knownSeq: number, decide: Decide): { result: TxResult<unknown>; wrote: boolean } {
    const seq = this.s.runSeq.get(runId) as number | undefined;
    if (seq === undefined) throw new BatonError('unknown-run', `no run ${runId}`);
    const delta = seq > knownSeq ? (this.s.eventsAfter.all(runId, knownSeq) as string[]).map(eventFromBody) : [];
    // the machine's clock, read under the write lock
    const d = decide(delta, this.databaseClock ? Date.now() : undefined);
    if (!d.commit) return { result: { ok: true, value: d.value }, wrote: false };
    const failed = this.failedExpectation(runId, d.commit.expect);
    if (failed) return { result: { ok: false, reason: 'expectation', failed }, wrote: false };
    const last = checkSeq(runId, seq, d.commit.events);
    this.writeRows(runId, d.commit);
    const r = d.commit.run;
    this.s.updateRun.run(r.status, r.updatedAt, r.endedAt, r.costUsd, r.wakeAt, last, runId);
    return { result: { ok: true, value: d.value }, wrote: d.commit.events.length > 0 };
  }

  /**
   * Many runs' commits in one transaction (one sync to disk for all of them): each only if its run's
   * seq is still the one it was decided on.
   */
  commitMany(items: readonly BatchCommit[]): Promise<{ results: BatchResult[] }> {
    let out: { results: BatchResult[]; wrote: boolean };
    try {
      out = this.txMany.immediate(items);
    } catch (err) {
      return Promise.reject(this.fault(err));
    }
    if (out.wrote) this.waiters.wakeAll();
    return Promise.resolve(this.databaseClock ? { results: out.results, now: Date.now() } : { results: out.results });
  }

  private commitManyIn(items: readonly BatchCommit[]): { results: BatchResult[]; wrote: boolean } {
    const results: BatchResult[] = [];
    let wrote = false;
    for (const it of items) {
      const seq = this.s.runSeq.get(it.runId) as number | undefined;
      if (seq === undefined) throw new BatonError('unknown-run', `no run ${it.runId}`);
      if (it.commit.expect?.length) throw new BatonError('internal', 'commitMany takes no lease expectations');
      if (seq !== it.knownSeq) {
        results.push('conflict');
        continue;
      }
      const last = checkSeq(it.runId, seq, it.commit.events);
      this.writeRows(it.runId, it.commit);
      const r = it.commit.run;
      this.s.updateRun.run(r.status, r.updatedAt, r.endedAt, r.costUsd, r.wakeAt, last, it.runId);
      results.push('ok');
      // every commit wakes this process's waiters (live streams among them); other processes see data_version move
      if (it.commit.events.length > 0) wrote = true;
    }
    return { results, wrote };
  }

  private failedExpectation(runId: string, expect: readonly LeaseExpectation[] | undefined): LeaseExpectation | undefined {
    for (const x of expect ?? []) if (!meets(this.s.taskLease.get(runId, x.phase) as LeaseRow | undefined, x)) return x;
    return undefined;
  }

  findWork(q: FindWorkQuery): Promise<WorkHint[]> {
    return this.read(() => {
      const rows = this.s.findWork.all({ agents: q.agents ? JSON.stringify(q.agents) : null, now: q.now, limit: q.limit, owners: q.ownersLike ?? null, skip: jsonList(skipKeys(q)) }) as HintRow[];
      return rows.map(hintFromRow);
    });
  }

  renewLeases(owner: string, until: number, held: readonly { runId: string; phase: string; attempt: number }[]): Promise<{ runId: string; phase: string; attempt: number }[]> {
    if (held.length === 0) return Promise.resolve([]);
    try {
      return Promise.resolve(this.txRenew.immediate(owner, until, held));
    } catch (err) {
      return Promise.reject(this.fault(err));
    }
  }

  /**
   * Local commits wake waiters at once; commits of other processes (or other connections) are seen
   * by polling `PRAGMA data_version` (a read of a counter in shared memory: cheap) while someone waits.
   */
  waitForChange(maxMs: number, signal?: AbortSignal): Promise<void> {
    if (!this.db.open) return Promise.resolve();
    const p = this.waiters.wait(maxMs, signal, () => {
      if (this.waiters.size === 0 && this.poll) {
        clearInterval(this.poll);
        this.poll = undefined;
      }
    });
    if (!this.poll && this.waiters.size > 0) {
      this.poll = setInterval(() => this.checkDataVersion(), this.pollMs);
      this.poll.unref();
    }
    return p;
  }

  /**
   * The runs whose row was written since `consumer`'s last take (by any process on the file), with their
   * seq. One statement, so one snapshot: a row at changed_at c is there only if every write below c
   * committed before it (one writer), so the largest c read is a mark nothing at or below is missing from.
   */
  takeChanged(consumer: object = this.marks): ReadonlyMap<string, number> | 'unknown' {
    try {
      const mark = this.marks.get(consumer);
      if (mark === undefined) {
        // what changed before the first take is unknown to this consumer
        this.marks.set(consumer, this.s.lastChange.get() as number);
        return 'unknown';
      }
      const rows = this.s.changedSince.all(mark, MAX_CHANGED + 1) as { run_id: string; seq: number; changed_at: number }[];
      if (rows.length > MAX_CHANGED) {
        // too many to name: the consumer looks at everything (after this take, so nothing before the new mark is missed)
        this.marks.set(consumer, this.s.lastChange.get() as number);
        return 'unknown';
      }
      const out = new Map<string, number>();
      for (const r of rows) out.set(r.run_id, r.seq);
      if (rows.length > 0) this.marks.set(consumer, rows[rows.length - 1]!.changed_at);
      return out;
    } catch {
      // a closed or failing store: the consumer looks at everything (its reads say what is wrong)
      return 'unknown';
    }
  }

  forgetChanged(consumer: object): void {
    this.marks.delete(consumer);
  }

  private checkDataVersion(): void {
    let v: number;
    try {
      v = this.s.dataVersion.get() as number;
    } catch {
      return; // never reject a wait: the waiters' own timeouts still run
    }
    if (v !== this.dataVersion) {
      this.dataVersion = v;
      this.waiters.wakeAll();
    }
  }

  [asyncDispose](): Promise<void> {
    return this.close();
  }

  close(): Promise<void> {
    this.waiters.wakeAll();
    if (this.poll) clearInterval(this.poll);
    this.poll = undefined;
    if (this.db.open) this.db.close();
    return Promise.resolve();
  }

  /** Prepared on first use: a database opened read-only may predate the snapshots table (null then). */
  private snapStmts: { get: Stmt; put: Stmt; tx: Database.Transaction<(runId: string, format: number) => { snapshot: StoredSnapshot | undefined; events: RunEvent[] }> } | null | undefined;

  private snapshots(): NonNullable<SqliteStore['snapStmts']> | null {
    if (this.snapStmts !== undefined) return this.snapStmts;
    try {
      const get = this.db.prepare('SELECT seq, format, body FROM snapshots WHERE run_id = ? AND format = ?');
      const put = this.db.prepare(
        'INSERT INTO snapshots (run_id, seq, format, body) VALUES (?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, format = excluded.format, body = excluded.body WHERE snapshots.seq < excluded.seq',
      );
      // one read transaction: the snapshot and the events after it as of one moment
      const tx = this.db.transaction((runId: string, format: number) => {
        const row = get.get(runId, format) as { seq: number; format: number; body: Buffer } | undefined;
        const snapshot = row ? { seq: row.seq, format: row.format, body: new Uint8Array(row.body) } : undefined;
        return { snapshot, events: (this.s.eventsAfter.all(runId, snapshot?.seq ?? 0) as string[]).map(eventFromBody) };
      });
      return (this.snapStmts = { get, put, tx });
    } catch {
      return (this.snapStmts = null);
    }
  }

  readState(runId: string, format: number): Promise<{ snapshot: StoredSnapshot | undefined; events: RunEvent[] }> {
    return this.read(() => {
      const st = this.snapshots();
      return st ? st.tx(runId, format) : { snapshot: undefined, events: (this.s.eventsAfter.all(runId, 0) as string[]).map(eventFromBody) };
    });
  }

  saveSnapshot(runId: string, snapshot: StoredSnapshot): Promise<void> {
    return this.read(() => {
      const st = this.snapshots();
      if (!st) return;
      // a cache is not worth waiting for: another process holding the write lock means no snapshot this time
      this.db.exec('PRAGMA busy_timeout = 0');
      try {
        st.put.run(runId, snapshot.seq, snapshot.format, Buffer.from(snapshot.body.buffer, snapshot.body.byteOffset, snapshot.body.byteLength));
      } finally {
        this.db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(this.busyMs))}`);
      }
    });
  }

  private read<R>(f: () => R): Promise<R> {
    try {
      return Promise.resolve(f());
    } catch (err) {
      return Promise.reject(this.fault(err));
    }
  }

  /** SQLite's errors as Baton faults with the file named; other errors (decide's) pass through. */
  private fault(err: unknown): unknown {
    return sqliteFault(err, this.location, this.busyMs);
  }
}

function sqliteFault(err: unknown, location: string, busyMs: number): unknown {
  if (err instanceof BatonError) return err;
  if (err instanceof Database.SqliteError) {
    const code = err.code;
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))
      return new BatonError('store-locked', `the store ${location} is locked by another process (waited ${busyMs} ms); try again when it is done`, { cause: err });
    if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT'))
      return new BatonError('store-corrupt', `${location} is not a Baton store or is damaged: ${err.message}`, { cause: err });
    if (code.startsWith('SQLITE_CANTOPEN')) return new BatonError('store', `cannot open the store ${location}: ${err.message}`, { cause: err });
    return new BatonError('store', `store ${location}: ${err.message} (${code})`, { cause: err });
  }
  if (err instanceof TypeError && /database connection is not open/.test(err.message)) return new BatonError('store', `store ${location} is closed`, { cause: err });
  return err;
}

/**
 * Node 24.19+ headers made every `node::ObjectWrap` remove an environment cleanup hook in its
 * destructor, which aborts the process (`Assertion failed: (env) != nullptr`) when V8 collects the
 * object outside a JavaScript context (an idle GC, teardown). better-sqlite3 12 (the last major that
 * supports Node 20) wraps Database and Statement that way when it is compiled against those headers.
 * So none of them is ever left for the GC: the database and every statement prepared on it stay
 * reachable for the process's life (`transaction()` keeps its own statements with the database;
 * `pragma()`, which prepares one per call, is not used). A store prepares a fixed set of statements
 * when it opens, so this holds a few dozen small objects per store.
 */
const PINNED = new Set<object>();

/** @internal (tests): not in the published types, which must not need @types/better-sqlite3. */
export function pinned(db: Database.Database): Database.Database {
  PINNED.add(db);
  const prepare = db.prepare.bind(db);
  (db as { prepare: (source: string) => Database.Statement }).prepare = (source: string) => {
    const st = prepare(source);
    PINNED.add(st);
    return st;
  };
  return db;
}

/**
 * Brings the schema to the newest version this code knows, in one BEGIN IMMEDIATE transaction (two
 * processes opening a fresh file at once: the second waits, then finds it migrated).
 */
function migrate(db: Database.Database, location: string, migrations: readonly Migration[]): void {
  const known = latestVersion(migrations);
  const run = db.transaction(() => {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    let current = 0;
    if (tables.includes('baton_schema')) {
      current = (db.prepare('SELECT max(version) FROM baton_schema').pluck().get() as number | null) ?? 0;
    } else if (tables.length > 0) {
      throw new BatonError('store-corrupt', `${location} is a SQLite database but not a Baton store (it has tables ${tables.slice(0, 3).join(', ')} and no baton_schema)`);
    } else {
      db.exec('CREATE TABLE baton_schema (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    }
    if (current > known)
      throw new BatonError('store-version', `${location} has store schema version ${current}, written by a newer Baton; this Baton knows versions up to ${known}: upgrade Baton`);
    const add = db.prepare('INSERT INTO baton_schema (version, description, applied_at) VALUES (?, ?, ?)');
    for (const m of pending(migrations, current)) {
      for (const sql of m.sqlite) db.exec(sql);
      add.run(m.version, m.description, Date.now());
    }
  });
  run.immediate();
}

function jsonList(keys: string[] | null): string | null {
  return keys ? JSON.stringify(keys) : null;
}

export { makeDirs };

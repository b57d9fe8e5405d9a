/**
 * The PostgreSQL store (`--store postgres://...`): many workers on many machines share one database.
 *
 * Round trips. A transact is two network round trips, five statements, on one pooled connection in
 * pg's pipeline mode (statements written back to back, answered in order):
 *   1. BEGIN + take the run's lock (pg_advisory_xact_lock) + read the run's seq and the events after
 *      knownSeq (one statement, which takes its snapshot once the lock is held, so it sees every
 *      commit made under the lock before it);
 *   -- decide(delta), synchronously, in this process --
 *   2. one write statement (data-modifying CTEs over unnest() arrays: check the lease expectations
 *      on the expected task rows, locked FOR UPDATE; insert the events; upsert the tasks; rewrite the
 *      run row; pg_notify) + COMMIT.
 * Why an advisory lock rather than SELECT ... FOR UPDATE of the run row: a row lock is a write (it
 * marks the tuple and is WAL-logged), so even a transact that commits nothing would cost a WAL
 * flush; the advisory lock costs nothing on disk. Every write of a run's events, tasks and run row
 * goes through createRun or transact, so the lock serialises them all, across processes.
 * The expectations are checked inside the write statement on locked task rows, so a takeover and a
 * lease renewal cannot interleave; a failed expectation writes nothing (every write is conditional
 * on the check); a failed statement turns the pipelined COMMIT into a ROLLBACK.
 *
 * Statements are parameterised and prepared once per connection (named). Tables live in their own
 * PostgreSQL schema (`baton` by default), so Baton can share a database with an application.
 *
 * `pg` is an optional peer dependency, loaded when the first store opens (`pgModule()`): importing this
 * module (`@baton-run/baton/postgres`) never needs it.
 */
import { Socket } from 'node:net';
import type pg from 'pg';
import { asyncDispose } from '../core/dispose.js';
import { BatonError } from '../core/errors.js';
import { requireOptional } from '../core/optional.js';
import type { RunEvent } from '../engine/events.js';
import type { StoredSnapshot } from '../engine/snapshot.js';
import type { ActivityCounts, BatchCommit, BatchResult, Commit, FindWorkQuery, NewRun, RunFilter, RunRecord, RunStore, TaskRow, TxDecision, TxOptions, TxResult, WorkflowRecord, WorkHint } from '../engine/ports.js';
import { latestVersion, MIGRATIONS, pending, type Migration } from './migrations.js';
import { sqlFor, type StatementName } from './postgres-sql.js';
import { checkSeq, eventFromBody, hintFromRow, skipKeys, eventPhase, jsonOrNull, runFromRow, taskFromRow, tasksByPhase, Waiters, workflowFromRow, type RunRow, type TaskRowSql, type WorkflowRow } from './rows.js';

/** The largest value of PostgreSQL's `integer` (the seq columns). */
const INT4_MAX = 2_147_483_647;

export interface PostgresStoreOptions {
  /** The PostgreSQL schema holding Baton's tables. Default `baton`. */
  schema?: string | undefined;
  /** Connections in the pool. Default 10. */
  poolSize?: number | undefined;
  /** Fail fast when the server cannot be reached. Default 3 s. */
  connectTimeoutMs?: number | undefined;
  /**
   * How long a statement may wait for its answer before its connection is taken for dead: a connection
   * cut without a reset (a partition, a NAT or firewall that forgot it) answers nothing and closes
   * nothing, and TCP would notice only after minutes to hours. The connection is then dropped and the
   * call fails as `store-unreachable`, which the worker retries on a new one. Default 60 s; 0: never.
   */
  queryTimeoutMs?: number | undefined;
  /**
   * How often the LISTEN connection is asked a `SELECT 1` (answered within 10 s or this period if shorter),
   * so that a connection gone dead without a reset is replaced and workers are woken by NOTIFY again (until
   * then they only find work at their periodic looks). Default 30 s; 0: never.
   */
  listenCheckMs?: number | undefined;
  /** The schema's migrations (tests add a fake next version). */
  migrations?: readonly Migration[] | undefined;
  /**
   * Decide in the database's clock (default true): every process compares due times, leases and
   * deadlines in one clock, whatever its own says. Tests that drive time by hand turn it off.
   */
  databaseClock?: boolean | undefined;
  /**
   * What `waitForChange` and `takeChanged` hear of: `work` (default: commits that leave work for
   * others, end a run or change anything but a worker's own tasks moving on; what workers need) or
   * `commits` (every commit with events: live streams of runs).
   */
  listen?: 'work' | 'commits' | undefined;
}

let loaded: typeof pg | undefined;
/** The `pg` package, required on first use (a CommonJS package: its ESM entry wraps this same object). */
function pgModule(): typeof pg {
  return (loaded ??= requireOptional<typeof pg>('pg', 'PostgreSQL support'));
}

/** int8 as a number (times in ms fit), json as its text (parsed by rows.ts, exactly as stored). */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown => {
    if (oid === 20) return (v: string) => Number(v);
    if (oid === 114) return (v: string) => v;
    return pgModule().types.getTypeParser(oid, format) as unknown;
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** queryTimeoutMs's default. */
export const DEFAULT_QUERY_TIMEOUT_MS = 60_000;
/**
 * How long close() waits for the connections' goodbyes, and a dropped connection for its own, before
 * their sockets are destroyed: one cut without a reset answers none, and an open socket keeps the
 * process alive for ever (a `baton run` that printed its result would never exit).
 */
export const CLOSE_WAIT_MS = 1_000;
/** The backoff before a LISTEN connection that failed to open is tried again: this, doubling, up to LISTEN_RETRY_MAX_MS. */
const LISTEN_RETRY_MS = 100;
const LISTEN_RETRY_MAX_MS = 1_000;
/**
 * TCP keepalive probes an idle connection after this long (pg's default, 0, leaves it to the system:
 * two hours on Linux): a pooled or LISTEN connection across a partition is then found dead by the
 * kernel too, besides the statement bound and the LISTEN check.
 */
const KEEPALIVE_DELAY_MS = 10_000;

/** Opens a PostgreSQL store, creating or migrating its schema. Throws store-unreachable, store-version. */
export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const schema = opts.schema ?? 'baton';
  if (!/^[a-z_][a-z0-9_]{0,50}$/.test(schema)) throw new BatonError('usage', `invalid PostgreSQL schema name ${JSON.stringify(schema)} (lower-case letters, digits, _)`);
  const location = redact(url);
  const config: pg.ClientConfig = {
    connectionString: url,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 3_000,
    types: TYPES,
    application_name: 'baton',
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    // A transact never idles inside its transaction (decide is synchronous): a session that does is a
    // frozen process holding a run's lock, and the server ends it so that other workers go on.
    idle_in_transaction_session_timeout: 30_000,
  };
  const client = new (pgModule().Client)(config);
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => undefined);
    throw pgFault(err, location);
  }
  try {
    await migrate(client, schema, location, opts.migrations ?? MIGRATIONS);
  } catch (err) {
    throw pgFault(err, location);
  } finally {
    await client.end().catch(() => undefined);
  }
  return new PostgresStore(config, location, schema, opts.poolSize ?? 10, opts.databaseClock ?? true, opts.listen ?? 'work', opts.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS, opts.listenCheckMs ?? 30_000);
}

/**
 * Creates the schema or brings it to the newest version this code knows, in one transaction under
 * an advisory lock: two processes starting at once on a fresh database do it once, in turn.
 */
async function migrate(client: pg.Client, schema: string, location: string, migrations: readonly Migration[]): Promise<void> {
  const known = latestVersion(migrations);
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [0x6261746f, schema]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(`SET LOCAL search_path TO "${schema}"`);
    await client.query('CREATE TABLE IF NOT EXISTS baton_schema (version integer PRIMARY KEY, description text NOT NULL, applied_at bigint NOT NULL)');
    const current = (await client.query<{ v: number | null }>('SELECT max(version) AS v FROM baton_schema')).rows[0]?.v ?? 0;
    if (current > known)
      throw new BatonError('store-version', `${location} (schema ${schema}) has store schema version ${current}, written by a newer Baton; this Baton knows versions up to ${known}: upgrade Baton`);
    for (const m of pending(migrations, current)) {
      for (const sql of m.postgres) await client.query(sql);
      await client.query('INSERT INTO baton_schema (version, description, applied_at) VALUES ($1, $2, $3)', [m.version, m.description, Date.now()]);
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

export class PostgresStore implements RunStore {
  readonly kind = 'postgres';
  /** takeChanged names every run with a new commit only when listening to every commit (`listen: 'commits'`). */
  readonly changesComplete: boolean;
  get hasClock(): boolean {
    return this.databaseClock;
  }
  private readonly pool: pg.Pool;
  private readonly sql: ReturnType<typeof sqlFor>;
  private readonly channel: string;
  private readonly waiters = new Waiters();
  private listener: pg.Client | undefined;
  private listening: Promise<void> | undefined;
  /** LISTEN connections that failed to open in a row, and when (monotonic ms) the next may be tried. */
  private listenFailures = 0;
  private listenRetryAt = 0;
  /** A notification arrived while nobody waited: the next wait returns at once. */
  private changed = false;
  /** NOTIFY payloads (`run_id seq`) since the last takeChanged, or unknown (a reconnect, an overflow). */
  /**
   * Per consumer of `takeChanged` (each worker, a server's change hub): the payloads since its last
   * call, or unknown. Several engines may share one store object, and each must hear of every commit.
   */
  private readonly consumers = new Map<object, { runs: Map<string, number>; unknown: boolean }>();
  private closed = false;
  /** Every socket of the store's connections (pool and LISTEN) until it closes: close() destroys those left. */
  private readonly sockets = new Set<Socket>();
  /** pg's ClientConfig with the socket factory that records them (typed structurally, as `config`). */
  private readonly clientConfig: object;

  /** `config`: pg's ClientConfig (typed structurally so the published types do not need @types/pg). */
  constructor(
    config: object,
    readonly location: string,
    readonly schema: string,
    poolSize: number,
    private readonly databaseClock = true,
    listen: 'work' | 'commits' = 'work',
    queryTimeoutMs = DEFAULT_QUERY_TIMEOUT_MS,
    private readonly listenCheckMs = 30_000,
  ) {
    this.channel = listen === 'commits' ? `${schema}_commits` : `${schema}_runs`;
    this.changesComplete = listen === 'commits';
    this.sql = sqlFor(`"${schema}"`, `${schema}_runs`, `${schema}_commits`);
    const stream = (): Socket => {
      const s = new Socket();
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
      // a connection ended (dropped by the pool, broken, timed out, idle; the LISTEN one replaced) says
      // goodbye; one dead without a reset never answers it, and its socket would stay open, and the process
      // alive, for ever
      s.once('finish', () => {
        const t = setTimeout(() => s.destroy(), CLOSE_WAIT_MS);
        t.unref();
        s.once('close', () => clearTimeout(t));
      });
      return s;
    };
    this.clientConfig = { ...(config as pg.ClientConfig), stream };
    // the pool's statements only: the migrations (which may take long on a big schema) and the LISTEN
    // connection (idle by design) go without
    this.pool = new (pgModule().Pool)({ ...(this.clientConfig as pg.ClientConfig), max: poolSize, pipeline: true, ...(queryTimeoutMs > 0 ? { query_timeout: queryTimeoutMs } : {}) });
    // an idle connection that breaks is dropped by the pool; the next query reports the cause
    this.pool.on('error', () => undefined);
    // Every statement is key-driven and prepared once per connection: plan it once too. (With the
    // default, PostgreSQL re-plans the write statement at each execution, which costs about as much as
    // running it.) Queued first on the new connection, so it precedes every statement of the store.
    this.pool.on('connect', (c) => {
      // a connection that breaks while checked out rejects its queries (reported there); without a
      // listener its 'error' event would crash the process
      c.on('error', () => undefined);
      void c.query('SET plan_cache_mode = force_generic_plan').catch(() => undefined);
    });
  }

  private async query<R extends pg.QueryResultRow>(name: StatementName, values: unknown[]): Promise<R[]> {
    try {
      return (await this.pool.query<R>({ name: `baton_${name}`, text: this.sql[name], values })).rows;
    } catch (err) {
      throw this.fault(err);
    }
  }

  /** pg's error as a Baton fault; after close() a use of the store is a mistake to say, not a network to wait out. */
  private fault(err: unknown): unknown {
    if (this.closed && !(err instanceof BatonError)) return new BatonError('store', `the PostgreSQL store ${this.location} is closed`, { cause: err });
    return pgFault(err, this.location);
  }

  async clockNow(): Promise<number> {
    const rows = await this.query<{ db_now: string }>('clockNow', []);
    return Number(rows[0]!.db_now);
  }

  async createRun(init: NewRun): Promise<void> {
    const id = init.run.runId;
    const seq = checkSeq(id, 0, init.commit.events);
    const r = { ...init.run, ...init.commit.run };
    const w = init.workflow;
    const runValues = [id, r.workflowHash, r.workflowName, r.status, JSON.stringify(r.trigger), jsonOrNull(r.initialState), JSON.stringify(r.bindings), JSON.stringify(r.options), r.createdAt, r.updatedAt, r.endedAt, r.costUsd, seq, r.wakeAt];
    const rows = await this.query<{ created: number }>('create', [...runValues, w.hash, w.name, w.source, w.path, ...eventArrays(init.commit.events), ...taskArrays(tasksByPhase(init.commit))]);
    if (Number(rows[0]?.created ?? 0) === 0) throw new BatonError('run-exists', `a run with id ${id} already exists`);
    if (init.commit.events.length > 0) this.waiters.wakeAll();
  }

  async createRuns(inits: readonly NewRun[]): Promise<(Error | undefined)[]> {
    const out: (Error | undefined)[] = inits.map(() => undefined);
    const wf = new Map<string, WorkflowRecord & { at: number }>();
    const runs: unknown[][] = Array.from({ length: 14 }, () => []);
    const ev: unknown[][] = Array.from({ length: 6 }, () => []);
    const tk: unknown[][] = Array.from({ length: 13 }, () => []);
    const sent: number[] = [];
    const ids = new Set<string>();
    inits.forEach((init, i) => {
      const id = init.run.runId;
      // the second of two runs with one id in a batch is refused as it would be after the first
      if (ids.has(id)) {
        out[i] = new BatonError('run-exists', `a run with id ${id} already exists`);
        return;
      }
      let seq: number;
      try {
        seq = checkSeq(id, 0, init.commit.events);
      } catch (err) {
        out[i] = err instanceof Error ? err : new Error(String(err));
        return;
      }
      sent.push(i);
      ids.add(id);
      if (!wf.has(init.workflow.hash)) wf.set(init.workflow.hash, { ...init.workflow, at: init.run.createdAt });
      const r = { ...init.run, ...init.commit.run };
      [id, r.workflowHash, r.workflowName, r.status, r.trigger, r.initialState, r.bindings, r.options, r.createdAt, r.updatedAt, r.endedAt, r.costUsd, seq, r.wakeAt].forEach((v, k) => runs[k]!.push(v));
      for (const e of init.commit.events) [id, e.seq, e.type, e.at, eventPhase(e), e].forEach((v, k) => ev[k]!.push(v));
      for (const t of tasksByPhase(init.commit))
        [id, t.phase, t.taskId, t.status, t.attempt, t.agent, t.leaseOwner, t.leaseExpiresAt, t.notBefore, t.input, t.output, t.failure, t.updatedAt].forEach((v, k) => tk[k]!.push(v));
    });
    if (sent.length === 0) return out;
    const w = [...wf.values()];
    // JSON columns go as one JSON array each (postgres-sql.ts says why)
    const json = (cols: unknown[][], at: readonly number[]): unknown[] => cols.map((c, k) => (at.includes(k) ? JSON.stringify(c) : c));
    const row = (
      await this.query<{ created: string[] }>('createMany', [
        w.map((x) => x.hash),
        w.map((x) => x.name),
        w.map((x) => x.source),
        w.map((x) => x.path),
        w.map((x) => x.at),
        ...json(runs, [4, 5, 6, 7]),
        ...json(ev, [5]),
        ...json(tk, [9, 10, 11]),
      ])
    )[0]!;
    const created = new Set(row.created);
    for (const i of sent) {
      const id = inits[i]!.run.runId;
      if (!created.has(id)) out[i] = new BatonError('run-exists', `a run with id ${id} already exists`);
    }
    if (created.size > 0) this.waiters.wakeAll();
    return out;
  }

  async run(runId: string): Promise<RunRecord | undefined> {
    const r = (await this.query<RunRow>('run', [runId]))[0];
    return r ? runFromRow(r) : undefined;
  }

  async runs(filter: RunFilter = {}): Promise<RunRecord[]> {
    const args = [filter.status ?? null, filter.limit ?? 100, filter.before?.createdAt ?? Number.MAX_SAFE_INTEGER, filter.before?.runId ?? ''];
    return (await (filter.workflow === undefined ? this.query<RunRow>('runs', args) : this.query<RunRow>('runsOfWorkflow', [...args, filter.workflow]))).map(runFromRow);
  }

  async activity(): Promise<ActivityCounts> {
    const [runs, tasks, gated] = await Promise.all([
      this.query<{ status: 'running' | 'waiting'; n: number }>('activityRuns', []),
      this.query<{ agent: string; status: 'ready' | 'running'; n: number }>('activityTasks', []),
      this.query<{ run_id: string }>('activityGated', []),
    ]);
    const out: ActivityCounts = { runs: { running: 0, waiting: 0 }, ready: {}, running: {}, gated: gated.map((r) => r.run_id) };
    for (const r of runs) out.runs[r.status] = r.n;
    for (const r of tasks) out[r.status][r.agent] = r.n;
    return out;
  }

  async workflow(hash: string): Promise<WorkflowRecord | undefined> {
    const w = (await this.query<WorkflowRow>('workflow', [hash]))[0];
    return w ? workflowFromRow(w) : undefined;
  }

  async events(runId: string, afterSeq = 0, limit?: number): Promise<RunEvent[]> {
    // seq is an `integer` column: a caller's seq past it (`?after=`, Last-Event-ID) has nothing after it, where
    // PostgreSQL would refuse the parameter (22003); a seq before the first has every event
    const after = afterSeq >= INT4_MAX ? INT4_MAX : afterSeq > 0 ? Math.floor(afterSeq) : 0;
    const rows = limit !== undefined ? await this.query<{ body: string }>('eventsLimit', [runId, after, limit]) : await this.query<{ body: string }>('events', [runId, after]);
    return rows.map((r) => eventFromBody(r.body));
  }

  async readState(runId: string, format: number): Promise<{ snapshot: StoredSnapshot | undefined; events: RunEvent[] }> {
    const rows = await this.query<{ k: number; seq: number; snap: Buffer | null; body: string | null }>('readState', [runId, format]);
    const first = rows[0];
    const snapshot = first !== undefined && first.k === 0 && first.snap !== null ? { seq: first.seq, format, body: new Uint8Array(first.snap) } : undefined;
    return { snapshot, events: (snapshot ? rows.slice(1) : rows).map((r) => eventFromBody(r.body!)) };
  }

  async saveSnapshot(runId: string, snapshot: StoredSnapshot): Promise<void> {
    await this.query('saveSnapshot', [runId, snapshot.seq, snapshot.format, Buffer.from(snapshot.body.buffer, snapshot.body.byteOffset, snapshot.body.byteLength)]);
  }

  async tasks(runId: string): Promise<TaskRow[]> {
    return (await this.query<TaskRowSql>('tasks', [runId])).map(taskFromRow);
  }

  async transact<T>(runId: string, knownSeq: number, decide: (delta: RunEvent[], now?: number) => TxDecision<T>, opts: TxOptions = {}): Promise<TxResult<T>> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.fault(err);
    }
    let broken: Error | undefined;
    /** A fault; a connection that failed at the connection level is discarded, not pooled. */
    const fault = (err: unknown): unknown => {
      const f = this.fault(err);
      if (f instanceof BatonError && f.code === 'store-unreachable') broken = f;
      return f;
    };
    const q = <R extends pg.QueryResultRow>(name: StatementName, values: unknown[]): Promise<pg.QueryResult<R>> =>
      client.query<R>({ name: `baton_${name}`, text: this.sql[name], values });
    /** Commits a transaction that wrote nothing (it only held the lock). */
    const commit = async (): Promise<void> => {
      try {
        await client.query('COMMIT');
      } catch (err) {
        broken = err as Error;
        throw fault(err);
      }
    };
    /** Rolls back, never throwing (the caller has a better error to report); a connection that cannot is discarded. */
    const rollback = async (): Promise<void> => {
      if (broken) return;
      try {
        await client.query('ROLLBACK');
      } catch (err) {
        broken = err as Error;
      }
    };
    try {
      let rows: { run_seq: number; db_now: number; seq: number | null; body: string | null }[];
      try {
        // pipelined: the read starts (and takes its snapshot) only once the lock is held
        const [, lock, read] = await settled(
          client.query('BEGIN'),
          q<{ got?: boolean }>(opts.skipIfBusy ? 'tryLock' : 'lock', [`${this.schema}/${runId}`]),
          q<{ run_seq: number; db_now: number; seq: number | null; body: string | null }>('read', [runId, knownSeq]),
        );
        if (opts.skipIfBusy && lock.rows[0]?.got !== true) {
          await rollback();
          return { ok: false, reason: 'busy' };
        }
        rows = read.rows;
      } catch (err) {
        const f = fault(err);
        await rollback();
        throw f;
      }
      if (rows.length === 0) {
        await rollback();
        throw new BatonError('unknown-run', `no run ${runId}`);
      }
      const runSeq = rows[0]!.run_seq;
      const bodies = rows.filter((r) => r.seq !== null).map((r) => r.body!);
      let d: TxDecision<T>;
      let last: number;
      try {
        d = decide(bodies.map(eventFromBody), this.databaseClock ? Number(rows[0]!.db_now) : undefined);
        last = d.commit ? checkSeq(runId, runSeq, d.commit.events) : runSeq;
      } catch (err) {
        await rollback();
        throw err;
      }
      if (!d.commit) {
        await commit();
        return { ok: true, value: d.value };
      }
      const c = d.commit;
      const expect = c.expect ?? [];
      let res: { ok: boolean; held: string[] | null }[];
      try {
        res = (await settled(q<{ ok: boolean; held: string[] | null }>('write', writeValues(runId, c, last)), client.query('COMMIT')))[0].rows;
      } catch (err) {
        // the pipelined COMMIT answered ROLLBACK (a failed statement aborts the transaction)
        throw fault(err);
      }
      const r = res[0]!;
      if (!r.ok) {
        const held = new Set((r.held ?? []).map(Number));
        const failed = expect.find((_, i) => !held.has(i + 1)) ?? expect[0]!;
        return { ok: false, reason: 'expectation', failed };
      }
      if (c.events.length > 0) this.waiters.wakeAll();
      return { ok: true, value: d.value };
    } finally {
      client.release(broken ?? false);
    }
  }

  async commitMany(items: readonly BatchCommit[]): Promise<{ results: BatchResult[]; now?: number }> {
    if (items.length === 0) return { results: [] };
    const runs: unknown[][] = [[], [], [], [], [], [], [], [], []];
    const ev: unknown[][] = [[], [], [], [], [], []];
    const tk: unknown[][] = Array.from({ length: 13 }, () => []);
    for (const it of items) {
      if (it.commit.expect?.length) throw new BatonError('internal', 'commitMany takes no lease expectations');
      const last = checkSeq(it.runId, it.knownSeq, it.commit.events);
      const r = it.commit.run;
      [it.runId, it.knownSeq, last, r.status, r.updatedAt, r.endedAt, r.costUsd, r.wakeAt, it.notify && it.commit.events.length > 0].forEach((v, i) => runs[i]!.push(v));
      for (const e of it.commit.events) [it.runId, e.seq, e.type, e.at, eventPhase(e), e].forEach((v, i) => ev[i]!.push(v));
      for (const t of tasksByPhase(it.commit))
        [it.runId, t.phase, t.taskId, t.status, t.attempt, t.agent, t.leaseOwner, t.leaseExpiresAt, t.notBefore, t.input, t.output, t.failure, t.updatedAt].forEach((v, i) => tk[i]!.push(v));
    }
    // JSON columns go as one JSON array each (postgres-sql.ts says why)
    const json = (cols: unknown[][], at: readonly number[]): unknown[] => cols.map((c, i) => (at.includes(i) ? JSON.stringify(c) : c));
    const row = (await this.query<{ ok: string[]; db_now: number }>('many', [...runs, ...json(ev, [5]), ...json(tk, [9, 10, 11]), `${this.schema}/`]))[0]!;
    const ok = new Set(row.ok);
    const results = items.map((it): BatchResult => (ok.has(it.runId) ? 'ok' : 'conflict'));
    if (ok.size > 0) this.waiters.wakeAll();
    return { results, ...(this.databaseClock ? { now: Number(row.db_now) } : {}) };
  }

  async findWork(q: FindWorkQuery): Promise<WorkHint[]> {
    type Row = { run_id: string; reason: WorkHint['reason'] | 'live'; phase: string | null; attempt: number | null; owner: string | null; seq: number | null };
    const rsv = q.reserve;
    const rows = rsv
      ? await this.query<Row>('findWorkReserve', [q.agents, q.now, q.limit, q.ownersLike ?? null, rsv.owner, Math.round(rsv.until), Math.max(0, Math.floor(rsv.max)), skipKeys(q)])
      : await this.query<Row>('findWork', [q.agents, q.now, q.limit, q.ownersLike ?? null, skipKeys(q)]);
    return rows.map(hintFromRow);
  }

  async renewLeases(owner: string, until: number, held: readonly { runId: string; phase: string; attempt: number }[]): Promise<{ runId: string; phase: string; attempt: number }[]> {
    if (held.length === 0) return [];
    const rows = await this.query<{ i: string }>('renew', [owner, until, held.map((h) => h.runId), held.map((h) => h.phase), held.map((h) => h.attempt)]);
    return rows.map((r) => held[Number(r.i) - 1]!);
  }

  /**
   * Woken by NOTIFY on `<schema>_runs` (every commit with events sends one, in its transaction),
   * through one LISTEN connection per store, opened at the first wait. Never rejects: if the
   * listener cannot connect, the wait simply lasts maxMs (and the next wait tries again).
   */
  waitForChange(maxMs: number, signal?: AbortSignal): Promise<void> {
    if (this.closed || signal?.aborted) return Promise.resolve();
    if (this.changed) {
      this.changed = false;
      return Promise.resolve();
    }
    const p = this.waiters.wait(maxMs, signal);
    this.listen();
    return p;
  }

  private noteChanged(payload: string | undefined): void {
    const sp = payload?.lastIndexOf(' ') ?? -1;
    const seq = sp > 0 ? Number(payload!.slice(sp + 1)) : NaN;
    const id = sp > 0 ? payload!.slice(0, sp) : '';
    for (const c of this.consumers.values()) {
      if (!Number.isFinite(seq) || c.runs.size >= 10_000) c.unknown = true;
      else if ((c.runs.get(id) ?? -1) < seq) c.runs.set(id, seq);
    }
  }

  /** Every consumer's payloads say nothing now (a reconnect): each looks at everything once. */
  private markUnknown(): void {
    for (const c of this.consumers.values()) c.unknown = true;
  }

  takeChanged(consumer: object = this.consumers): ReadonlyMap<string, number> | 'unknown' {
    let c = this.consumers.get(consumer);
    if (!c) {
      // a new consumer heard nothing before now
      c = { runs: new Map(), unknown: true };
      this.consumers.set(consumer, c);
    }
    // without a live LISTEN connection the payloads say nothing about what was missed
    const out: ReadonlyMap<string, number> | 'unknown' = c.unknown || !this.listener ? 'unknown' : c.runs;
    c.runs = new Map();
    c.unknown = false;
    return out;
  }

  /** Forgets a consumer of takeChanged (a worker that closed). */
  forgetChanged(consumer: object): void {
    this.consumers.delete(consumer);
  }

  /**
   * Opens the LISTEN connection, unless one is open or opening. One that failed to open (the database
   * is away) is tried again only after a backoff (100 ms doubling to 1 s), not at every wait: a busy
   * worker waits many times a second while its commits back off, and each wait used to open a new
   * connection against a database that was refusing them (35-40 a second, beside the commits' own).
   * Meanwhile the waits last their maxMs, and takeChanged says `unknown` (nothing is missed).
   */
  private listen(): void {
    if (this.listening || this.closed || performance.now() < this.listenRetryAt) return;
    const c = new (pgModule().Client)(this.clientConfig);
    let check: NodeJS.Timeout | undefined;
    let dropped = false;
    const drop = (): void => {
      if (dropped) return;
      dropped = true;
      clearInterval(check);
      this.markUnknown();
      if (this.listener === c) this.listener = undefined;
      else {
        // it never listened: the next try waits (a live listener that drops is replaced at the next wait)
        this.listenFailures++;
        this.listenRetryAt = performance.now() + Math.min(LISTEN_RETRY_MAX_MS, LISTEN_RETRY_MS * 2 ** (this.listenFailures - 1));
      }
      this.listening = undefined;
      c.end().catch(() => undefined);
    };
    c.on('error', drop);
    c.on('end', () => {
      if (this.listener === c) drop();
    });
    c.on('notification', (n) => {
      this.noteChanged(n.payload);
      if (this.waiters.size > 0) this.waiters.wakeAll();
      else this.changed = true;
    });
    this.listening = c
      .connect()
      // (answered at once when the connection lives: one that dies as it listens is dropped, not waited on for ever)
      .then(() => c.query({ text: `LISTEN "${this.channel}"`, query_timeout: 10_000 } as pg.QueryConfig))
      .then(() => {
        if (this.closed) return drop();
        this.listener = c;
        this.listenFailures = 0;
        // what changed before we listened is unknown: whoever waits looks again
        this.markUnknown();
        this.waiters.wakeAll();
        // a connection gone dead without a reset hears nothing and says nothing: asked now and then, it
        // is dropped when it does not answer (the next wait listens on a new one)
        if (this.listenCheckMs > 0) {
          let asking = false;
          check = setInterval(() => {
            if (asking) return;
            asking = true;
            c.query({ text: 'SELECT 1', query_timeout: Math.min(10_000, this.listenCheckMs) } as pg.QueryConfig).then(
              () => (asking = false),
              () => drop(),
            );
          }, this.listenCheckMs);
          check.unref();
        }
      })
      .catch(drop);
  }

  [asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * Ends the connections, waiting at most CLOSE_WAIT_MS for their goodbyes: a connection across a
   * partition answers none, and then its socket is destroyed. Bounded, so that a process that is done
   * (a `baton run` that printed its result, a stopping worker) can exit.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.waiters.wakeAll();
    const ended = (async () => {
      await this.listening?.catch(() => undefined);
      // (its liveness check stops with it: an 'end' drops it)
      await this.listener?.end().catch(() => undefined);
      this.listener = undefined;
      await this.pool.end().catch(() => undefined);
    })();
    // the pool's end does not wait for the server's answers: the sockets' closes do
    const closed = (): Promise<unknown> => Promise.all([...this.sockets].map((s) => new Promise((r) => s.once('close', r))));
    if (await within(ended.then(closed), CLOSE_WAIT_MS)) return;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    // with their sockets gone the clients end at once; a client checked out and never released would not
    await within(ended, CLOSE_WAIT_MS);
  }
}

/** Whether `p` settled within `ms`. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([p.then(() => true), new Promise<false>((r) => (timer = setTimeout(() => r(false), ms)))]);
  clearTimeout(timer);
  return settled;
}

/** Waits for every pipelined query (never leaves one unobserved); throws the first error. */
async function settled<A, B, C = undefined>(a: Promise<A>, b: Promise<B>, c?: Promise<C>): Promise<[A, B, C]> {
  const all = await Promise.allSettled([a, b, c]);
  for (const r of all) if (r.status === 'rejected') throw r.reason;
  return all.map((r) => (r as PromiseFulfilledResult<unknown>).value) as [A, B, C];
}

function eventArrays(events: readonly RunEvent[]): unknown[] {
  // JSON columns go as one JSON array each (postgres-sql.ts says why)
  return [events.map((e) => e.seq), events.map((e) => e.type), events.map((e) => e.at), events.map(eventPhase), JSON.stringify(events)];
}

function taskArrays(tasks: readonly TaskRow[]): unknown[] {
  return [
    tasks.map((t) => t.phase),
    tasks.map((t) => t.taskId),
    tasks.map((t) => t.status),
    tasks.map((t) => t.attempt),
    tasks.map((t) => t.agent),
    tasks.map((t) => t.leaseOwner),
    tasks.map((t) => t.leaseExpiresAt),
    tasks.map((t) => t.notBefore),
    JSON.stringify(tasks.map((t) => t.input)),
    JSON.stringify(tasks.map((t) => t.output)),
    JSON.stringify(tasks.map((t) => t.failure)),
    tasks.map((t) => t.updatedAt),
  ];
}

function writeValues(runId: string, c: Commit, seq: number): unknown[] {
  const x = c.expect ?? [];
  const r = c.run;
  return [
    runId,
    x.map((e) => e.phase),
    x.map((e) => e.attempt),
    x.map((e) => e.owner),
    x.map((e) => e.expiredBefore ?? null),
    ...eventArrays(c.events),
    ...taskArrays(tasksByPhase(c)),
    r.status,
    r.updatedAt,
    r.endedAt,
    r.costUsd,
    r.wakeAt,
    seq,
  ];
}

/** The URL without its password, for messages and `location`. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    u.search = '';
    return u.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//');
  }
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', '3D000', '28P01', '28000', '57P01', '57P02', '57P03']);

/** pg's errors as Baton faults: connection problems are store-unreachable (no password in messages). */
export function pgFault(err: unknown, location: string): unknown {
  if (err instanceof BatonError) return err;
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : String(err);
  // (`Query read timeout`: no answer within queryTimeoutMs, the connection dropped as dead)
  if (UNREACHABLE.has(code) || code.startsWith('08') || /Connection terminated|connection timeout|timeout expired|not queryable|Client was closed|pool after calling end|Query read timeout/i.test(message))
    return new BatonError('store-unreachable', `cannot reach the PostgreSQL store ${location}: ${message || code}`, { cause: err });
  // serialization failures, deadlocks, lock timeouts, too many connections: try again later
  if (code === '40001' || code === '40P01' || code === '55P03' || code === '53300' || code === '53400')
    return new BatonError('store-locked', `the PostgreSQL store ${location} is busy: ${message} (${code})`, { cause: err });
  // pg-pool's wait for a free connection ran past connectTimeoutMs: every connection of this process is
  // in use (waiting on a run's lock, a burst of commands beside workers), a busy store to wait out. It
  // was a plain store error, so engine.approve()/cancel() and a run's creation failed at once.
  if (code === '' && /timeout exceeded when trying to connect/i.test(message))
    return new BatonError('store-locked', `the PostgreSQL store ${location} is busy: no connection of the pool came free in time (${message})`, { cause: err });
  return new BatonError('store', `PostgreSQL store ${location}: ${message}${code ? ` (${code})` : ''}`, { cause: err });
}

/**
 * The store schema, as numbered migrations, for both dialects side by side (one place to read the
 * schema; see docs/stores.md). A store records every version it applied in `baton_schema`; opening
 * a store applies the missing ones in one transaction under a lock (SQLite: BEGIN IMMEDIATE,
 * PostgreSQL: pg_advisory_xact_lock), and refuses a store whose version is above the last one here
 * (`store-version`: written by a newer Baton).
 *
 * Rules: never edit a released migration, only append; every shape change of a stored row or event
 * comes with a migration and a golden store file (test/fixtures/stores/).
 *
 * The schema:
 * - workflows(hash PK, name, source, path, created_at): a run keeps the workflow it started with.
 * - runs(run_id PK, ...every RunRecord field...): trigger, initial_state, bindings and options as JSON text;
 *   SQLite's also changed_at (version 4: the order of the last write of each run, for takeChanged).
 * - tasks((run_id, phase) PK, ...every TaskRow field...): input, output, failure as JSON text.
 * - events((run_id, seq) PK, type, at, phase, body): body is the whole event as JSON text, exactly as
 *   given; type/at/phase are copies for queries.
 * Partial indexes match findWork's filters exactly (ready tasks by due time, running leases, live
 * runs' timers), so finished and gated work costs nothing to the claim path. No foreign keys: every write goes through
 * createRun/transact, which hold the run's lock, and an FK check would cost a lookup per event row.
 */

export interface Migration {
  version: number;
  description: string;
  /** Statements for SQLite and for PostgreSQL (no parameters: DDL only). */
  sqlite: readonly string[];
  postgres: readonly string[];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'workflows, runs, tasks, events',
    sqlite: [
      `CREATE TABLE workflows (
        hash TEXT PRIMARY KEY, name TEXT NOT NULL, source TEXT NOT NULL, path TEXT NOT NULL, created_at INTEGER NOT NULL)`,
      `CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, workflow_hash TEXT NOT NULL, workflow_name TEXT NOT NULL, status TEXT NOT NULL,
        trigger_json TEXT NOT NULL, initial_state TEXT, bindings TEXT NOT NULL, options TEXT NOT NULL,
        created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, ended_at INTEGER, cost_usd REAL NOT NULL,
        seq INTEGER NOT NULL, wake_at INTEGER)`,
      `CREATE INDEX runs_recent ON runs (created_at DESC, run_id DESC)`,
      `CREATE INDEX runs_live_wake ON runs (wake_at) WHERE status IN ('running', 'waiting') AND wake_at IS NOT NULL`,
      `CREATE TABLE tasks (
        run_id TEXT NOT NULL, phase TEXT NOT NULL, task_id TEXT NOT NULL, status TEXT NOT NULL,
        attempt INTEGER NOT NULL, agent TEXT NOT NULL, lease_owner TEXT, lease_expires_at INTEGER,
        not_before INTEGER, input TEXT, output TEXT, failure TEXT, updated_at INTEGER NOT NULL,
        PRIMARY KEY (run_id, phase))`,
      `CREATE INDEX tasks_ready ON tasks (run_id, agent, not_before) WHERE status = 'ready'`,
      `CREATE INDEX tasks_lease ON tasks (lease_expires_at) WHERE status = 'running'`,
      `CREATE TABLE events (
        run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, at INTEGER NOT NULL, phase TEXT,
        body TEXT NOT NULL, PRIMARY KEY (run_id, seq))`,
    ],
    postgres: [
      `CREATE TABLE workflows (
        hash text PRIMARY KEY, name text NOT NULL, source text NOT NULL, path text NOT NULL, created_at bigint NOT NULL)`,
      // json (not jsonb) keeps the text as given: key order and spelling survive a round trip
      `CREATE TABLE runs (
        run_id text PRIMARY KEY, workflow_hash text NOT NULL, workflow_name text NOT NULL, status text NOT NULL,
        trigger_json json NOT NULL, initial_state json, bindings json NOT NULL, options json NOT NULL,
        created_at bigint NOT NULL, updated_at bigint NOT NULL, ended_at bigint, cost_usd double precision NOT NULL,
        seq integer NOT NULL, wake_at bigint) WITH (fillfactor = 80)`,
      // fillfactor: room on the page, so that rewriting the run row on every commit is a HOT update
      `CREATE INDEX runs_recent ON runs (created_at DESC, run_id DESC)`,
      `CREATE INDEX runs_live_wake ON runs (wake_at) WHERE status IN ('running', 'waiting') AND wake_at IS NOT NULL`,
      `CREATE TABLE tasks (
        run_id text NOT NULL, phase text NOT NULL, task_id text NOT NULL, status text NOT NULL,
        attempt integer NOT NULL, agent text NOT NULL, lease_owner text, lease_expires_at bigint,
        not_before bigint, input json, output json, failure json, updated_at bigint NOT NULL,
        PRIMARY KEY (run_id, phase))`,
      `CREATE INDEX tasks_ready ON tasks (run_id, agent, not_before) WHERE status = 'ready'`,
      `CREATE INDEX tasks_lease ON tasks (lease_expires_at) WHERE status = 'running'`,
      `CREATE TABLE events (
        run_id text NOT NULL, seq integer NOT NULL, type text NOT NULL, at bigint NOT NULL, phase text,
        body json NOT NULL, PRIMARY KEY (run_id, seq))`,
    ],
  },
  {
    version: 2,
    description: 'ready tasks by due time',
    // findWork takes the earliest-due ready tasks from one index (however many runs are live or gated),
    // rather than one probe per run with ready work; tasks held by a gate (not_before = HELD) are not in it
    sqlite: [
      `CREATE INDEX tasks_due ON tasks (COALESCE(not_before, updated_at)) WHERE status = 'ready' AND (not_before IS NULL OR not_before < 9007199254740991)`,
      `DROP INDEX tasks_ready`,
    ],
    postgres: [
      `CREATE INDEX tasks_due ON tasks ((COALESCE(not_before, updated_at))) WHERE status = 'ready' AND (not_before IS NULL OR not_before < 9007199254740991)`,
      `DROP INDEX tasks_ready`,
    ],
  },
  {
    version: 3,
    description: 'run state snapshots',
    // a run loads from its latest snapshot plus the events after it (engine/snapshot.ts): a cache of
    // replay(), never written in a commit, ignored when its format is not the engine's
    sqlite: [`CREATE TABLE snapshots (run_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, format INTEGER NOT NULL, body BLOB NOT NULL)`],
    postgres: [`CREATE TABLE snapshots (run_id text PRIMARY KEY, seq integer NOT NULL, format integer NOT NULL, body bytea NOT NULL)`],
  },
  {
    version: 4,
    description: 'runs by last change',
    // SQLite: every write of a run row sets changed_at one above the largest (one writer: they grow in
    // commit order), so a reader learns which runs changed since a point, other processes' commits
    // included (takeChanged: `WHERE changed_at > mark`). Rows of before are 0. PostgreSQL: nothing (its
    // NOTIFY payloads say which runs changed).
    sqlite: [`ALTER TABLE runs ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0`, `CREATE INDEX runs_changed ON runs (changed_at)`],
    postgres: [],
  },
  {
    version: 5,
    description: 'runs of a workflow, newest first',
    // GET /runs?workflow=NAME and `baton runs --workflow` page through one workflow's runs from a cursor
    // (RunFilter.workflow, .before) without walking the other workflows' runs in runs_recent
    sqlite: [`CREATE INDEX runs_workflow_recent ON runs (workflow_name, created_at DESC, run_id DESC)`],
    postgres: [`CREATE INDEX runs_workflow_recent ON runs (workflow_name, created_at DESC, run_id DESC)`],
  },
  {
    version: 6,
    description: 'the active runs',
    // RunStore.activity (the gauges of /metrics) counts the runs running or waiting and reads those that
    // opened a gate, through this index: as many entries as live runs, however many have ended. `seq >= 0`
    // (always true) is in its predicate so that only statements that say it can use it: findWork's plans
    // (runs_live_wake, tasks_lease) stay as they are
    sqlite: [`CREATE INDEX runs_active ON runs (status) WHERE status IN ('running', 'waiting') AND seq >= 0`],
    postgres: [`CREATE INDEX runs_active ON runs (status) WHERE status IN ('running', 'waiting') AND seq >= 0`],
  },
];

/** The version this code writes. */
export function latestVersion(migrations: readonly Migration[]): number {
  return migrations.reduce((v, m) => Math.max(v, m.version), 0);
}

/** The migrations to apply on a store at `current`, in order. */
export function pending(migrations: readonly Migration[], current: number): Migration[] {
  return migrations.filter((m) => m.version > current).sort((a, b) => a.version - b.version);
}

/**
 * The PostgreSQL store's statements, one per operation (see postgres.ts for the transaction they
 * make up, and docs/stores.md). `s` is the quoted schema name, `channel` the NOTIFY channel of work
 * for workers (every commit but a worker's own quiet progress), `commits` the channel of every commit
 * (live streams); all
 * are checked identifiers, everything else is a parameter.
 */
import { RUN_COLUMNS, TASK_COLUMNS } from './rows.js';

/** HELD (ports.ts) as SQL: the partial index tasks_due leaves such tasks out, and findWork says so to use it. */
export const HELD_SQL = '9007199254740991';

export type StatementName = 'lock' | 'tryLock' | 'read' | 'write' | 'create' | 'createMany' | 'run' | 'runs' | 'runsOfWorkflow' | 'workflow' | 'events' | 'eventsLimit' | 'tasks' | 'findWork' | 'findWorkReserve' | 'renew' | 'many' | 'readState' | 'saveSnapshot' | 'clockNow' | 'activityRuns' | 'activityTasks' | 'activityGated';

/**
 * JSON columns travel as one JSON array per column (`JSON.stringify` of the whole batch, sent as one
 * text parameter) rather than as `json[]`: node-postgres escapes every element of an array literal
 * character by character, which cost more than the rest of a wide fan's commit. `json_array_elements`
 * (zipped with the other columns by ROWS FROM) gives them back one per row; a JSON `null` in a nullable
 * column is stored as SQL NULL, as before.
 */
const nullable = (col: string): string => `CASE WHEN json_typeof(${col}) = 'null' THEN NULL ELSE ${col} END`;
const TASK_VALUES = (t: string): string =>
  `${t}.phase, ${t}.task_id, ${t}.status, ${t}.attempt, ${t}.agent, ${t}.lease_owner, ${t}.lease_expires_at, ${t}.not_before, ${nullable(`${t}.input`)}, ${nullable(`${t}.output`)}, ${nullable(`${t}.failure`)}, ${t}.updated_at`;
/** ROWS FROM over the task columns' parameters, starting at $first (phase ... updated_at: 12 parameters). */
const taskRows = (first: number, t: string): string => {
  const p = (k: number): string => `$${first + k}`;
  return `ROWS FROM (unnest(${p(0)}::text[]), unnest(${p(1)}::text[]), unnest(${p(2)}::text[]), unnest(${p(3)}::integer[]), unnest(${p(4)}::text[]), unnest(${p(5)}::text[]),
          unnest(${p(6)}::bigint[]), unnest(${p(7)}::bigint[]), json_array_elements(${p(8)}::json), json_array_elements(${p(9)}::json), json_array_elements(${p(10)}::json), unnest(${p(11)}::bigint[]))
          AS ${t}(phase, task_id, status, attempt, agent, lease_owner, lease_expires_at, not_before, input, output, failure, updated_at)`;
};
/** ROWS FROM over the event columns' parameters, starting at $first (seq, type, at, phase, body: 5 parameters). */
const eventRows = (first: number, e: string): string =>
  `ROWS FROM (unnest($${first}::integer[]), unnest($${first + 1}::text[]), unnest($${first + 2}::bigint[]), unnest($${first + 3}::text[]), json_array_elements($${first + 4}::json)) AS ${e}(seq, type, at, phase, body)`;

export function sqlFor(s: string, channel: string, commits: string): Record<StatementName, string> {
  // $skip: FindWorkQuery.skip as `run \x1f agent` keys (`run \x1f`: the whole run); NOT IN a subquery is hashed
  const ready = (skip: number): string =>
    `t.status = 'ready' AND ($1::text[] IS NULL OR t.agent = ANY($1::text[])) AND (t.not_before IS NULL OR t.not_before <= $2)` +
    ` AND ($${skip}::text[] IS NULL OR (t.run_id || chr(31) || t.agent) NOT IN (SELECT unnest($${skip}::text[])) AND (t.run_id || chr(31)) NOT IN (SELECT unnest($${skip}::text[])))`;
  return {
    // a transaction-scoped advisory lock per run (bigint key space; migrations use the two-int one)
    lock: `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
    tryLock: `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS got`,
    // db_now: the database's clock, read under the lock; every due time, lease and deadline is compared in it
    read: `SELECT r.seq AS run_seq, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS db_now, e.seq, e.body FROM ${s}.runs r
      LEFT JOIN ${s}.events e ON e.run_id = r.run_id AND e.seq > $2 WHERE r.run_id = $1 ORDER BY e.seq`,
    write: `WITH
      held AS (
        -- one primary-key probe per expectation (LATERAL; LIMIT 1 keeps the status test out of the
        -- probe, so the planner cannot pick the partial index of all running tasks instead)
        SELECT x.i FROM unnest($2::text[], $3::integer[], $4::text[], $5::bigint[]) WITH ORDINALITY AS x(phase, attempt, owner, before, i)
        CROSS JOIN LATERAL (
          SELECT t.status, t.attempt, t.lease_owner, t.lease_expires_at FROM ${s}.tasks t WHERE t.run_id = $1 AND t.phase = x.phase LIMIT 1 FOR UPDATE) t
        WHERE t.status = 'running' AND t.attempt = x.attempt AND t.lease_owner = x.owner
          AND (x.before IS NULL OR COALESCE(t.lease_expires_at, 0) < x.before)),
      ok AS (SELECT count(*) = cardinality($2::text[]) AS ok, array_agg(i) AS held FROM held),
      ev AS (
        INSERT INTO ${s}.events (run_id, seq, type, at, phase, body)
        SELECT $1, e.* FROM ${eventRows(6, 'e')}
        WHERE (SELECT ok FROM ok)),
      tk AS (
        INSERT INTO ${s}.tasks (${TASK_COLUMNS})
        SELECT $1, ${TASK_VALUES('t')} FROM ${taskRows(11, 't')}
        WHERE (SELECT ok FROM ok)
        ON CONFLICT (run_id, phase) DO UPDATE SET task_id = excluded.task_id, status = excluded.status, attempt = excluded.attempt,
          agent = excluded.agent, lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
          not_before = excluded.not_before, input = excluded.input, output = excluded.output, failure = excluded.failure,
          updated_at = excluded.updated_at),
      ru AS (
        UPDATE ${s}.runs SET status = $23, updated_at = $24, ended_at = $25, cost_usd = $26, wake_at = $27, seq = $28
        WHERE run_id = $1 AND (SELECT ok FROM ok))
      SELECT ok.ok, ok.held, (SELECT count(*) FROM (SELECT pg_notify(c.ch, $1 || ' ' || ($28::integer)::text) FROM (VALUES ('${channel}'), ('${commits}')) c(ch)
        WHERE ok.ok AND cardinality($6::integer[]) > 0) n) AS notified FROM ok`,
    create: `WITH
      wf AS (INSERT INTO ${s}.workflows (hash, name, source, path, created_at) VALUES ($15, $16, $17, $18, $9) ON CONFLICT (hash) DO NOTHING),
      r AS (
        INSERT INTO ${s}.runs (${RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
        ON CONFLICT (run_id) DO NOTHING RETURNING run_id),
      ev AS (
        INSERT INTO ${s}.events (run_id, seq, type, at, phase, body)
        SELECT r.run_id, e.* FROM r, ${eventRows(19, 'e')}),
      tk AS (
        INSERT INTO ${s}.tasks (${TASK_COLUMNS})
        SELECT r.run_id, ${TASK_VALUES('t')} FROM r, ${taskRows(24, 't')})
      SELECT count(*) AS created, (SELECT count(*) FROM (SELECT pg_notify(c.ch, r.run_id || ' ' || ($13::integer)::text) FROM r, (VALUES ('${channel}'), ('${commits}')) c(ch)) n) AS notified FROM r`,
    // createRuns: many runs created in one statement (its own transaction). A taken id is skipped (ON
    // CONFLICT DO NOTHING): its events and tasks are written only for the runs inserted, which come back.
    // The batch names each run once. JSON columns go as one JSON array each, as everywhere.
    createMany: `WITH
      wf AS (
        INSERT INTO ${s}.workflows (hash, name, source, path, created_at)
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
        ON CONFLICT (hash) DO NOTHING),
      r AS (
        INSERT INTO ${s}.runs (${RUN_COLUMNS})
        SELECT x.run_id, x.workflow_hash, x.workflow_name, x.status, x.trigger_json, ${nullable('x.initial_state')}, x.bindings, x.options,
          x.created_at, x.updated_at, x.ended_at, x.cost_usd, x.seq, x.wake_at
        FROM ROWS FROM (unnest($6::text[]), unnest($7::text[]), unnest($8::text[]), unnest($9::text[]), json_array_elements($10::json),
          json_array_elements($11::json), json_array_elements($12::json), json_array_elements($13::json), unnest($14::bigint[]), unnest($15::bigint[]),
          unnest($16::bigint[]), unnest($17::double precision[]), unnest($18::integer[]), unnest($19::bigint[]))
          AS x(run_id, workflow_hash, workflow_name, status, trigger_json, initial_state, bindings, options, created_at, updated_at, ended_at, cost_usd, seq, wake_at)
        ON CONFLICT (run_id) DO NOTHING RETURNING run_id, seq),
      ev AS (
        INSERT INTO ${s}.events (run_id, seq, type, at, phase, body)
        SELECT e.* FROM ROWS FROM (unnest($20::text[]), unnest($21::integer[]), unnest($22::text[]), unnest($23::bigint[]), unnest($24::text[]), json_array_elements($25::json))
          AS e(run_id, seq, type, at, phase, body)
        WHERE e.run_id IN (SELECT r.run_id FROM r)),
      tk AS (
        INSERT INTO ${s}.tasks (${TASK_COLUMNS})
        SELECT t.run_id, ${TASK_VALUES('t')} FROM ROWS FROM (unnest($26::text[]), unnest($27::text[]), unnest($28::text[]), unnest($29::text[]), unnest($30::integer[]),
          unnest($31::text[]), unnest($32::text[]), unnest($33::bigint[]), unnest($34::bigint[]), json_array_elements($35::json), json_array_elements($36::json),
          json_array_elements($37::json), unnest($38::bigint[]))
          AS t(run_id, phase, task_id, status, attempt, agent, lease_owner, lease_expires_at, not_before, input, output, failure, updated_at)
        WHERE t.run_id IN (SELECT r.run_id FROM r))
      SELECT (SELECT coalesce(array_agg(r.run_id), '{}') FROM r) AS created,
        (SELECT count(*) FROM (SELECT pg_notify(c.ch, r.run_id || ' ' || r.seq::text) FROM r, (VALUES ('${channel}'), ('${commits}')) c(ch) WHERE r.seq > 0) n) AS notified`,
    // commitMany: many runs' commits in one statement (its own transaction), each under its run's
    // advisory lock taken without waiting (a run another transaction holds is a conflict, as is a
    // run whose seq moved), so it never deadlocks with transact or another batch. The run row's
    // UPDATE re-reads the newest row version (READ COMMITTED), so a commit made since this
    // statement's snapshot is seen; events and tasks are written only for the runs it updated.
    many: `WITH
      b AS MATERIALIZED (
        SELECT * FROM unnest($1::text[], $2::integer[], $3::integer[], $4::text[], $5::bigint[], $6::bigint[], $7::double precision[], $8::bigint[], $9::boolean[])
          AS b(run_id, known, seq, status, updated_at, ended_at, cost_usd, wake_at, notify)),
      got AS MATERIALIZED (SELECT b.* FROM b WHERE pg_try_advisory_xact_lock(hashtextextended($29 || b.run_id, 0))),
      ru AS (
        UPDATE ${s}.runs r SET status = g.status, updated_at = g.updated_at, ended_at = g.ended_at, cost_usd = g.cost_usd, wake_at = g.wake_at, seq = g.seq
        FROM got g WHERE r.run_id = g.run_id AND r.seq = g.known
        RETURNING r.run_id, g.seq, g.notify),
      ev AS (
        INSERT INTO ${s}.events (run_id, seq, type, at, phase, body)
        SELECT e.* FROM ROWS FROM (unnest($10::text[]), unnest($11::integer[]), unnest($12::text[]), unnest($13::bigint[]), unnest($14::text[]), json_array_elements($15::json))
          AS e(run_id, seq, type, at, phase, body)
        WHERE e.run_id IN (SELECT ru.run_id FROM ru)),
      tk AS (
        INSERT INTO ${s}.tasks (${TASK_COLUMNS})
        SELECT t.run_id, ${TASK_VALUES('t')} FROM ROWS FROM (unnest($16::text[]), unnest($17::text[]), unnest($18::text[]), unnest($19::text[]), unnest($20::integer[]),
          unnest($21::text[]), unnest($22::text[]), unnest($23::bigint[]), unnest($24::bigint[]), json_array_elements($25::json), json_array_elements($26::json),
          json_array_elements($27::json), unnest($28::bigint[]))
          AS t(run_id, phase, task_id, status, attempt, agent, lease_owner, lease_expires_at, not_before, input, output, failure, updated_at)
        WHERE t.run_id IN (SELECT ru.run_id FROM ru)
        ON CONFLICT (run_id, phase) DO UPDATE SET task_id = excluded.task_id, status = excluded.status, attempt = excluded.attempt,
          agent = excluded.agent, lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
          not_before = excluded.not_before, input = excluded.input, output = excluded.output, failure = excluded.failure,
          updated_at = excluded.updated_at)
      SELECT (SELECT coalesce(array_agg(ru.run_id), '{}') FROM ru) AS ok,
        (SELECT count(*) FROM (SELECT pg_notify('${channel}', ru.run_id || ' ' || ru.seq::text) FROM ru WHERE ru.notify) n) AS notified,
        (SELECT count(*) FROM (SELECT pg_notify('${commits}', ru.run_id || ' ' || ru.seq::text) FROM ru) n) AS told,
        (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS db_now`,
    clockNow: `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS db_now`,
    run: `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE run_id = $1`,
    // the cursor as a row value, never NULL (no cursor: after the largest time there is): an index
    // condition on runs_recent, so a deep page starts where it is and does not filter the newer runs
    runs: `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE (created_at, run_id) < ($3::bigint, $4::text) AND ($1::text[] IS NULL OR status = ANY($1::text[])) ORDER BY created_at DESC, run_id DESC LIMIT $2`,
    // one workflow's: a seek in runs_workflow_recent, past no other workflow's runs
    runsOfWorkflow: `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE workflow_name = $5::text AND (created_at, run_id) < ($3::bigint, $4::text) AND ($1::text[] IS NULL OR status = ANY($1::text[])) ORDER BY created_at DESC, run_id DESC LIMIT $2`,
    workflow: `SELECT hash, name, source, path FROM ${s}.workflows WHERE hash = $1`,
    // RunStore.activity: the active runs' rows counted (gauges), and the ones that ever opened a gate
    activityRuns: `SELECT status, count(*)::int AS n FROM ${s}.runs WHERE status IN ('running', 'waiting') AND seq >= 0 GROUP BY status`,
    // each side through its partial index (tasks_due: ready and not held; tasks_lease: running), as findWork reads them
    activityTasks: `SELECT t.agent, 'ready' AS status, count(*)::int AS n FROM ${s}.tasks t JOIN ${s}.runs r ON r.run_id = t.run_id
        WHERE t.status = 'ready' AND (t.not_before IS NULL OR t.not_before < ${HELD_SQL}) AND r.status IN ('running', 'waiting') GROUP BY t.agent
      UNION ALL
      SELECT t.agent, 'running', count(*)::int FROM ${s}.tasks t JOIN ${s}.runs r ON r.run_id = t.run_id
        WHERE t.status = 'running' AND r.status IN ('running', 'waiting') GROUP BY t.agent`,
    activityGated: `SELECT r.run_id FROM ${s}.runs r WHERE r.status IN ('running', 'waiting') AND r.seq >= 0 AND EXISTS (SELECT 1 FROM ${s}.events e WHERE e.run_id = r.run_id AND e.type = 'gate.opened')`,
    events: `SELECT body FROM ${s}.events WHERE run_id = $1 AND seq > $2 ORDER BY seq`,
    eventsLimit: `SELECT body FROM ${s}.events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    // the latest snapshot of the format asked and the events after it, in one statement (one moment):
    // the snapshot's row comes first (k = 0), then the events in order
    readState: `WITH sn AS (SELECT seq, format, body FROM ${s}.snapshots WHERE run_id = $1 AND format = $2)
      SELECT 0 AS k, sn.seq, sn.body AS snap, NULL::json AS body FROM sn
      UNION ALL
      SELECT 1, e.seq, NULL, e.body FROM ${s}.events e WHERE e.run_id = $1 AND e.seq > COALESCE((SELECT seq FROM sn), 0)
      ORDER BY 1, 2`,
    saveSnapshot: `INSERT INTO ${s}.snapshots (run_id, seq, format, body) VALUES ($1, $2, $3, $4)
      ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, format = excluded.format, body = excluded.body WHERE ${s}.snapshots.seq < excluded.seq`,
    tasks: `SELECT ${TASK_COLUMNS} FROM ${s}.tasks WHERE run_id = $1 ORDER BY phase`,
    // Each part follows one partial index and reads at most $3 rows of it (or $3 * 8 ready tasks):
    // tasks_due (the earliest-due ready tasks; tasks held by a gate are not in it), runs_live_wake,
    // tasks_lease. Its cost does not grow with the number of live, gated or finished runs.
    findWork: hints(
      s,
      `SELECT d.run_id FROM (
            SELECT t.run_id FROM ${s}.tasks t
            WHERE ${ready(5)} AND (t.not_before IS NULL OR t.not_before < ${HELD_SQL})
            ORDER BY COALESCE(t.not_before, t.updated_at) LIMIT $3 * 8) d
          GROUP BY d.run_id`,
      // the oldest first, but each kind (timers, ready runs, leases) is sure of a quarter of the limit: 300 gated
      // runs whose expiries came due at once filled every answer with older timers, and a run started meanwhile
      // was not offered until they had all fired (seconds)
      '(rk > $3 / 4), created_at, run_id, k, phase LIMIT $3',
    ),
    // findWork for a serving worker with free slots ($5 owner, $6 until, $7 how many): the ready tasks
    // it is offered are reserved for it in the same statement (SKIP LOCKED: two workers asking at once
    // get different ones), and reservations not yet passed are skipped (its own too: a run it could not
    // take up goes to another worker when the reservation passes). The reservation uses
    // the lease columns of a ready row, which no projection of a ready task sets (any commit clears it).
    // Every task reserved comes back as a hint: the limit is $3 beyond them.
    findWorkReserve: `WITH rsv AS (
        UPDATE ${s}.tasks t SET lease_owner = $5, lease_expires_at = $6
        FROM (
          SELECT t.run_id, t.phase FROM ${s}.tasks t
          WHERE ${ready(8)} AND (t.not_before IS NULL OR t.not_before < ${HELD_SQL})
            AND (t.lease_owner IS NULL OR t.lease_expires_at < $2)
          ORDER BY COALESCE(t.not_before, t.updated_at) LIMIT $7
          FOR UPDATE SKIP LOCKED) x
        WHERE t.run_id = x.run_id AND t.phase = x.phase
        RETURNING t.run_id)
      ${hints(s, 'SELECT DISTINCT rsv.run_id FROM rsv', '(k <> 1), created_at, run_id, k, phase LIMIT $3 + $7')}`,
    // Never waits for a lock: a task row locked by a transaction in flight is left for the next
    // renewal (and reported lost only once that transaction took it).
    renew: `WITH
      h AS (SELECT * FROM unnest($3::text[], $4::text[], $5::integer[]) WITH ORDINALITY AS h(run_id, phase, attempt, i)),
      lk AS (
        SELECT l.run_id, l.phase FROM h CROSS JOIN LATERAL (
          SELECT t.run_id, t.phase, t.attempt, t.status, t.lease_owner FROM ${s}.tasks t
          WHERE t.run_id = h.run_id AND t.phase = h.phase LIMIT 1 FOR UPDATE SKIP LOCKED) l
        WHERE l.attempt = h.attempt AND l.status = 'running' AND l.lease_owner = $1),
      u AS (UPDATE ${s}.tasks t SET lease_expires_at = $2 FROM lk WHERE t.run_id = lk.run_id AND t.phase = lk.phase)
      SELECT h.i FROM h WHERE NOT EXISTS (
        SELECT 1 FROM ${s}.tasks t WHERE t.run_id = h.run_id AND t.phase = h.phase AND t.attempt = h.attempt AND t.status = 'running' AND t.lease_owner = $1)
      ORDER BY h.i`,
  };
}

/**
 * findWork's hints: due timers, the runs of `readyRuns` (a query of run_id), and expired leases (or
 * the live leases of owners like $4), each with its run's created_at and seq, in the `order` given
 * (`rk`: a hint's rank among those of its kind, oldest first).
 */
function hints(s: string, readyRuns: string, order: string): string {
  return `SELECT run_id, reason, phase, attempt, owner, seq FROM (SELECT h.*, row_number() OVER (PARTITION BY k ORDER BY created_at, run_id, phase) AS rk FROM (
        SELECT w.run_id, w.created_at, 0 AS k, 'timer' AS reason, NULL::text AS phase, NULL::integer AS attempt, NULL::text AS owner, w.seq
          FROM (SELECT r.run_id, r.created_at, r.seq FROM ${s}.runs r WHERE r.status IN ('running', 'waiting') AND r.wake_at IS NOT NULL AND r.wake_at <= $2
            ORDER BY r.wake_at LIMIT $3) w
        UNION ALL
        SELECT x.run_id, r.created_at, 1, 'ready', NULL, NULL, NULL, r.seq FROM (${readyRuns}) x
          -- LATERAL ... LIMIT 1: one primary-key probe per run found (a join may scan runs)
          CROSS JOIN LATERAL (SELECT r.created_at, r.seq FROM ${s}.runs r WHERE r.run_id = x.run_id AND r.status IN ('running', 'waiting') LIMIT 1) r
        UNION ALL
        SELECT y.run_id, y.created_at, 2, CASE WHEN y.expired THEN 'lease' ELSE 'live' END, y.phase, y.attempt, y.lease_owner, y.seq FROM (
          SELECT t.run_id, t.phase, t.attempt, t.lease_owner, t.lease_expires_at < $2 AS expired, r.created_at, r.seq
          FROM ${s}.tasks t CROSS JOIN LATERAL (
            SELECT r.created_at, r.seq FROM ${s}.runs r WHERE r.run_id = t.run_id AND r.status IN ('running', 'waiting') LIMIT 1) r
          WHERE t.status = 'running' AND t.lease_owner IS NOT NULL
            AND (t.lease_expires_at < $2 OR ($4::text IS NOT NULL AND starts_with(t.lease_owner, $4::text)))
          ORDER BY t.lease_expires_at LIMIT $3) y
      ) h) h ORDER BY ${order}`;
}

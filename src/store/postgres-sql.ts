/**
 * The PostgreSQL store's statements, one per operation (see postgres.ts for the transaction they
 * make up, and docs/stores.md). `s` is the quoted schema name, `channel` the NOTIFY channel; both
 * are checked identifiers, everything else is a parameter.
 */
import { RUN_COLUMNS, TASK_COLUMNS } from './rows.js';

export type StatementName = 'lock' | 'tryLock' | 'read' | 'write' | 'create' | 'run' | 'runs' | 'workflow' | 'events' | 'tasks' | 'findWork' | 'renew';

export function sqlFor(s: string, channel: string): Record<StatementName, string> {
  const ready = `t.status = 'ready' AND ($1::text[] IS NULL OR t.agent = ANY($1::text[])) AND (t.not_before IS NULL OR t.not_before <= $2)`;
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
        SELECT $1, e.* FROM unnest($6::integer[], $7::text[], $8::bigint[], $9::text[], $10::json[]) AS e
        WHERE (SELECT ok FROM ok)),
      tk AS (
        INSERT INTO ${s}.tasks (${TASK_COLUMNS})
        SELECT $1, t.* FROM unnest($11::text[], $12::text[], $13::text[], $14::integer[], $15::text[], $16::text[], $17::bigint[],
          $18::bigint[], $19::json[], $20::json[], $21::json[], $22::bigint[]) AS t
        WHERE (SELECT ok FROM ok)
        ON CONFLICT (run_id, phase) DO UPDATE SET task_id = excluded.task_id, status = excluded.status, attempt = excluded.attempt,
          agent = excluded.agent, lease_owner = excluded.lease_owner, lease_expires_at = excluded.lease_expires_at,
          not_before = excluded.not_before, input = excluded.input, output = excluded.output, failure = excluded.failure,
          updated_at = excluded.updated_at),
      ru AS (
        UPDATE ${s}.runs SET status = $23, updated_at = $24, ended_at = $25, cost_usd = $26, wake_at = $27, seq = $28
        WHERE run_id = $1 AND (SELECT ok FROM ok))
      SELECT ok.ok, ok.held, (SELECT count(*) FROM (SELECT pg_notify('${channel}', $1 || ' ' || ($28::integer)::text) WHERE ok.ok AND cardinality($6::integer[]) > 0) n) AS notified FROM ok`,
    create: `WITH
      wf AS (INSERT INTO ${s}.workflows (hash, name, source, path, created_at) VALUES ($15, $16, $17, $18, $9) ON CONFLICT (hash) DO NOTHING),
      r AS (
        INSERT INTO ${s}.runs (${RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
        ON CONFLICT (run_id) DO NOTHING RETURNING run_id),
      ev AS (
        INSERT INTO ${s}.events (run_id, seq, type, at, phase, body)
        SELECT r.run_id, e.* FROM r, unnest($19::integer[], $20::text[], $21::bigint[], $22::text[], $23::json[]) AS e),
      tk AS (
        INSERT INTO ${s}.tasks (${TASK_COLUMNS})
        SELECT r.run_id, t.* FROM r, unnest($24::text[], $25::text[], $26::text[], $27::integer[], $28::text[], $29::text[], $30::bigint[],
          $31::bigint[], $32::json[], $33::json[], $34::json[], $35::bigint[]) AS t)
      SELECT count(*) AS created, (SELECT count(*) FROM (SELECT pg_notify('${channel}', r.run_id || ' ' || ($13::integer)::text) FROM r) n) AS notified FROM r`,
    run: `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE run_id = $1`,
    runs: `SELECT ${RUN_COLUMNS} FROM ${s}.runs WHERE $1::text[] IS NULL OR status = ANY($1::text[]) ORDER BY created_at DESC, run_id DESC LIMIT $2`,
    workflow: `SELECT hash, name, source, path FROM ${s}.workflows WHERE hash = $1`,
    events: `SELECT body FROM ${s}.events WHERE run_id = $1 AND seq > $2 ORDER BY seq`,
    tasks: `SELECT ${TASK_COLUMNS} FROM ${s}.tasks WHERE run_id = $1 ORDER BY phase`,
    // Each part follows one partial index: tasks_ready (a skip scan: one probe per run with ready
    // work, however many tasks are ready), runs_live_wake, tasks_lease. Finished work is in none.
    findWork: `WITH RECURSIVE ready(run_id) AS (
        (SELECT t.run_id FROM ${s}.tasks t WHERE ${ready} ORDER BY t.run_id LIMIT 1)
        UNION ALL
        SELECT (SELECT t.run_id FROM ${s}.tasks t WHERE ${ready} AND t.run_id > ready.run_id ORDER BY t.run_id LIMIT 1)
        FROM ready WHERE ready.run_id IS NOT NULL)
      SELECT run_id, reason, phase, attempt, owner, seq FROM (
        SELECT r.run_id, r.created_at, 0 AS k, 'timer' AS reason, NULL::text AS phase, NULL::integer AS attempt, NULL::text AS owner, r.seq
          FROM ${s}.runs r WHERE r.status IN ('running', 'waiting') AND r.wake_at IS NOT NULL AND r.wake_at <= $2
        UNION ALL
        SELECT x.run_id, x.created_at, 1, 'ready', NULL, NULL, NULL, x.seq FROM (
          -- LATERAL ... LIMIT 1: one primary-key probe per run with ready work (a join may scan runs)
          SELECT ready.run_id, r.created_at, r.seq FROM ready CROSS JOIN LATERAL (
            SELECT r.created_at, r.seq FROM ${s}.runs r WHERE r.run_id = ready.run_id AND r.status IN ('running', 'waiting') LIMIT 1) r
          WHERE ready.run_id IS NOT NULL) x
        UNION ALL
        SELECT y.run_id, y.created_at, 2, CASE WHEN y.expired THEN 'lease' ELSE 'live' END, y.phase, y.attempt, y.lease_owner, y.seq FROM (
          SELECT t.run_id, t.phase, t.attempt, t.lease_owner, t.lease_expires_at < $2 AS expired, r.created_at, r.seq
          FROM ${s}.tasks t CROSS JOIN LATERAL (
            SELECT r.created_at, r.seq FROM ${s}.runs r WHERE r.run_id = t.run_id AND r.status IN ('running', 'waiting') LIMIT 1) r
          WHERE t.status = 'running' AND t.lease_owner IS NOT NULL
            AND (t.lease_expires_at < $2 OR ($4::text IS NOT NULL AND starts_with(t.lease_owner, $4::text)))) y
      ) h ORDER BY created_at, run_id, k, phase LIMIT $3`,
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

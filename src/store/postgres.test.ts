/**
 * The PostgreSQL store against the real server on 127.0.0.1:5432 (user postgres, trust auth; `.ci/run`
 * starts it). This file creates its own database and drops it at the end. If the server cannot be
 * reached the tests FAIL: they never skip.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunStore } from '../engine/ports.js';
import { newRun, storeConformance, task } from './conformance.js';
import { log } from './testing.js';
import { latestVersion, MIGRATIONS, type Migration } from './migrations.js';

const NOW_V = latestVersion(MIGRATIONS);
import { openPostgresStore, PostgresStore } from './postgres.js';
import { concurrentWriters, consistency, killedWriter } from './processes.js';

const SERVER = process.env.BATON_TEST_PG ?? 'postgres://postgres@127.0.0.1:5432';
const DB = `baton_test_${randomBytes(4).toString('hex')}`;
const URL_ = `${SERVER}/${DB}`;

async function admin<T>(f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: `${SERVER}/postgres`, connectionTimeoutMillis: 3_000 });
  try {
    await c.connect();
  } catch (err) {
    throw new Error(`PostgreSQL at ${SERVER} cannot be reached (${(err as Error).message}): start it (pg_ctlcluster --skip-systemctl-redirect 15 main start); these tests never skip`);
  }
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

// When the server is down every test fails with this error (counted as failed, not skipped).
let unreachable: Error | undefined;
beforeAll(async () => {
  try {
    await admin((c) => c.query(`CREATE DATABASE ${DB}`));
  } catch (err) {
    unreachable = err as Error;
  }
});
beforeEach(() => {
  if (unreachable) throw unreachable;
});
afterAll(async () => {
  if (!unreachable) await admin((c) => c.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`));
});

let n = 0;
storeConformance('postgres', {
  // a fresh PostgreSQL schema per test: an empty store, without a CREATE DATABASE each time
  create: () => openPostgresStore(URL_, { schema: `c${n++}`, poolSize: 4 }),
  // another pool and listener on the same schema: what another process sees
  peer: (store) => openPostgresStore(URL_, { schema: (store as PostgresStore).schema, poolSize: 4 }),
});

describe('postgres store', () => {
  const codeOf = async (p: Promise<unknown>): Promise<{ code: string; message: string }> => {
    try {
      await p;
    } catch (err) {
      return { code: (err as { code?: string }).code ?? 'no code', message: (err as Error).message };
    }
    return { code: 'resolved', message: '' };
  };

  it('migrates once when several processes open a fresh database at the same time', async () => {
    const fresh = `${DB}_race`;
    await admin((c) => c.query(`CREATE DATABASE ${fresh}`));
    try {
      const url = `${SERVER}/${fresh}`;
      const stores = await Promise.all([0, 1, 2, 3].map(() => openPostgresStore(url, { poolSize: 1 })));
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const versions = (await c.query<{ version: number }>('SELECT version FROM baton.baton_schema ORDER BY version')).rows.map((x) => x.version);
      await c.end();
      expect(versions).toEqual(MIGRATIONS.map((m) => m.version));
      await stores[0]!.createRun(newRun('r'));
      expect((await stores[3]!.run('r'))!.runId).toBe('r');
      for (const s of stores) await s.close();
    } finally {
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${fresh} WITH (FORCE)`));
    }
  });

  it('migrates a store to the next version keeping its data, and refuses one newer than the code (store-version)', async () => {
    const s = await openPostgresStore(URL_, { schema: 'mig' });
    await s.createRun(newRun('kept', { tasks: [task('a')] }));
    await s.close();
    const next: Migration = { version: NOW_V + 1, description: 'a fake next version', sqlite: [], postgres: ['ALTER TABLE runs ADD COLUMN labels text', 'CREATE INDEX runs_labels ON runs (labels)'] };
    const v2 = await openPostgresStore(URL_, { schema: 'mig', migrations: [...MIGRATIONS, next] });
    expect((await v2.run('kept'))!.runId).toBe('kept');
    expect(await v2.tasks('kept')).toEqual([task('a')]);
    await v2.close();
    await (await openPostgresStore(URL_, { schema: 'mig', migrations: [...MIGRATIONS, next] })).close();
    const err = await codeOf(openPostgresStore(URL_, { schema: 'mig' }));
    expect(err.code).toBe('store-version');
    expect(err.message).toMatch(new RegExp(`version ${NOW_V + 1}.*up to ${NOW_V}`));
  });

  it('fails fast with store-unreachable, naming host and database but never the password', async () => {
    const t = performance.now();
    const refused = await codeOf(openPostgresStore('postgres://baton:s3cret@127.0.0.1:1/somedb', { connectTimeoutMs: 2_000 }));
    expect(refused.code).toBe('store-unreachable');
    expect(refused.message).toContain('127.0.0.1:1/somedb');
    expect(refused.message).not.toContain('s3cret');
    const missing = await codeOf(openPostgresStore(`${SERVER}/baton_no_such_db_${randomBytes(3).toString('hex')}`));
    expect(missing.code).toBe('store-unreachable');
    expect(performance.now() - t).toBeLessThan(5_000);
  });

  it('waits for the run lock held by another process, then hands decide the events committed under it', async () => {
    const s = await openPostgresStore(URL_, { schema: 'waitlock' });
    await s.createRun(newRun('w'));
    const c = new pg.Client({ connectionString: URL_ });
    await c.connect();
    await c.query('BEGIN');
    // what a transact of another process holds: the run's advisory lock
    await c.query("SELECT pg_advisory_xact_lock(hashtextextended('waitlock/w', 0))");
    const body = JSON.stringify({ seq: 2, at: 2, type: 'task.log', phase: 'a', task_id: 't-a', attempt: 1, message: 'from elsewhere' });
    await c.query(`INSERT INTO waitlock.events (run_id, seq, type, at, phase, body) VALUES ('w', 2, 'task.log', 2, 'a', $1)`, [body]);
    await c.query("UPDATE waitlock.runs SET seq = 2 WHERE run_id = 'w'");
    let seen: number[] = [];
    const p = s.transact('w', 1, (delta) => ((seen = delta.map((e) => e.seq)), { commit: null, value: null }));
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([]);
    await c.query('COMMIT');
    await c.end();
    await p;
    expect(seen).toEqual([2]);
    await s.close();
  });

  it('finds work through the partial indexes: a store full of finished work plans like an empty one', async () => {
    const s = await openPostgresStore(URL_, { schema: 'plan' });
    const c = new pg.Client({ connectionString: URL_ });
    await c.connect();
    // 2,000 finished runs of 50 tasks (100,000 finished phases) of 50 workflows, then one live run
    await c.query(`INSERT INTO plan.runs SELECT 'done' || i, 'h', 'wf' || (i % 50), 'completed', '{}', NULL, '{}', '{}', i, i, i, 0, 50, NULL FROM generate_series(1, 2000) i`);
    await c.query(`INSERT INTO plan.tasks SELECT 'done' || i, 'p' || j, 't', 'completed', 1, 'x', NULL, NULL, NULL, NULL, '{"a":1}', NULL, i FROM generate_series(1, 2000) i, generate_series(1, 50) j`);
    await c.query('ANALYZE plan.runs; ANALYZE plan.tasks');
    await s.createRun(newRun('live', { createdAt: 10_000, tasks: [task('a'), task('b', { status: 'running', attempt: 1, leaseOwner: 'w', leaseExpiresAt: 5 })] }));
    const text = (s as unknown as { sql: { findWork: string } }).sql.findWork;
    // the plan the store runs: generic (plan_cache_mode = force_generic_plan on its connections)
    await c.query('SET plan_cache_mode = force_generic_plan');
    await c.query(`PREPARE fw(text[], bigint, integer, text, text[]) AS ${text}`);
    // with a skip list too (a worker that binds some agents only names the runs it cannot serve)
    const plan = (await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE fw('{x}', 100, 10, 'host:', ARRAY['done1' || chr(31) || 'x'])`)).rows.map((r) => r['QUERY PLAN']).join('\n');
    // and no statement of the store scans a table: each is driven by a key or a partial index
    const sql = (s as unknown as { sql: Record<string, string> }).sql;
    for (const [name, text] of Object.entries(sql)) {
      if (name === 'findWork') continue;
      await c.query(`PREPARE s_${name} AS ${text}`);
      const n = (text.match(/\$(\d+)/g) ?? []).reduce((m, p) => Math.max(m, Number(p.slice(1))), 0);
      const p = (await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE s_${name}${n > 0 ? `(${Array(n).fill('NULL').join(', ')})` : ''}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(p, `${name}:\n${p}`).not.toMatch(/Seq Scan on (tasks|runs|events)/);
      // a page of runs starts at its cursor in runs_recent
      if (name === 'runs') expect(p, p).toMatch(/Index Cond: \(ROW\(created_at, run_id\) < ROW\(/);
      if (name === 'runsOfWorkflow') expect(p, p).toMatch(/runs_workflow_recent/);
    }
    await c.end();
    expect(plan).toContain('tasks_due');
    expect(plan).toContain('tasks_lease');
    expect(plan).toContain('runs_live_wake');
    expect(plan).not.toMatch(/Seq Scan on tasks/);
    expect(await s.findWork({ agents: ['x'], now: 100, limit: 10 })).toEqual([
      { runId: 'live', reason: 'ready', seq: 1 },
      { runId: 'live', reason: 'lease', phase: 'b', attempt: 1, owner: 'w', seq: 1 },
    ]);
    expect(await s.findWork({ agents: ['x'], now: 100, limit: 10, skip: [{ runId: 'live', agent: 'x' }] })).toEqual([
      { runId: 'live', reason: 'lease', phase: 'b', attempt: 1, owner: 'w', seq: 1 },
    ]);
    await s.close();
  });

  it('renews leases without waiting for a task row that a transaction in flight holds', async () => {
    const s = await openPostgresStore(URL_, { schema: 'renew' });
    await s.createRun(newRun('r', { tasks: [task('a', { status: 'running', attempt: 1, leaseOwner: 'me', leaseExpiresAt: 1 }), task('b', { status: 'running', attempt: 1, leaseOwner: 'me', leaseExpiresAt: 1 })] }));
    const c = new pg.Client({ connectionString: URL_ });
    await c.connect();
    await c.query('BEGIN');
    await c.query("SELECT 1 FROM renew.tasks WHERE run_id = 'r' AND phase = 'a' FOR UPDATE");
    const t = performance.now();
    const held = [{ runId: 'r', phase: 'a', attempt: 1 }, { runId: 'r', phase: 'b', attempt: 1 }];
    expect(await s.renewLeases('me', 99, held)).toEqual([]);
    expect(performance.now() - t).toBeLessThan(1_000);
    expect(Object.fromEntries((await s.tasks('r')).map((x) => [x.phase, x.leaseExpiresAt]))).toEqual({ a: 1, b: 99 });
    // the holder takes the task over: the next renewal reports it lost
    await c.query("UPDATE renew.tasks SET lease_owner = 'other' WHERE run_id = 'r' AND phase = 'a'");
    await c.query('COMMIT');
    await c.end();
    expect(await s.renewLeases('me', 100, held)).toEqual([held[0]]);
    await s.close();
  });

  it('notifies other processes on the channel of its schema, in the commit', async () => {
    const s = await openPostgresStore(URL_, { schema: 'notify' });
    await s.createRun(newRun('n'));
    const c = new pg.Client({ connectionString: URL_ });
    await c.connect();
    await c.query('LISTEN notify_runs');
    const got = new Promise<string | undefined>((resolve) => c.once('notification', (m: pg.Notification) => resolve(m.payload)));
    await s.transact('n', 1, () => ({ commit: { events: [{ seq: 2, at: 2, type: 'run.completed' }], tasks: [], run: { status: 'completed', updatedAt: 2, endedAt: 2, costUsd: 0, wakeAt: null } }, value: null }));
    expect(await got).toBe('n 2');
    await c.end();
    await s.close();
  });

  it('reserves the ready tasks it offers a serving worker: two asking at once take up different runs; a reservation passes', async () => {
    const s = await openPostgresStore(URL_, { schema: 'reserve' });
    for (let i = 0; i < 6; i++) await s.createRun(newRun(`r${i}`, { createdAt: i, tasks: [task('a', { updatedAt: i })] }));
    const ask = (owner: string, now: number, max: number): Promise<string[]> =>
      s.findWork({ agents: null, now, limit: 100, reserve: { owner, until: now + 2_000, max } }).then((h) => h.filter((x) => x.reason === 'ready').map((x) => x.runId));
    const [a, b] = await Promise.all([ask('A', 10_000, 3), ask('B', 10_000, 3)]);
    expect([...a, ...b].sort()).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5']);
    // reserved: offered to nobody (its owner included) until the reservation passes; a plain findWork still sees them
    expect(await ask('C', 11_000, 10)).toEqual([]);
    expect(await ask('A', 11_000, 10)).toEqual([]);
    expect((await s.findWork({ agents: null, now: 11_000, limit: 100 })).length).toBe(6);
    expect((await ask('C', 12_001, 2)).length).toBe(2);
    // the reservation is a hint in the lease columns of a ready row: never read back as a lease
    expect((await s.tasks('r0'))[0]).toMatchObject({ status: 'ready', leaseOwner: null, leaseExpiresAt: null });
    // a commit of the task clears it
    await s.transact('r5', 1, () => ({ commit: { events: [log(2, 'a', 'x')], tasks: [task('a', { updatedAt: 5 })], run: { status: 'running', updatedAt: 5, endedAt: null, costUsd: 0, wakeAt: null } }, value: null }));
    expect(await ask('D', 11_000, 10)).toContain('r5');
    await s.close();
  });

  it('notifies workers only of work, and live streams of every commit', async () => {
    const s = await openPostgresStore(URL_, { schema: 'chan' });
    await s.createRun(newRun('q', { tasks: [task('a')] }));
    const c = new pg.Client({ connectionString: URL_ });
    await c.connect();
    await c.query('LISTEN chan_runs');
    await c.query('LISTEN chan_commits');
    const heard: string[] = [];
    c.on('notification', (m: pg.Notification) => heard.push(`${m.channel} ${m.payload}`));
    const run = { status: 'running' as const, updatedAt: 2, endedAt: null, costUsd: 0, wakeAt: null };
    expect((await s.commitMany([{ runId: 'q', knownSeq: 1, commit: { events: [log(2, 'a', 'quiet')], tasks: [], run }, notify: false }])).results).toEqual(['ok']);
    expect((await s.commitMany([{ runId: 'q', knownSeq: 2, commit: { events: [log(3, 'a', 'work')], tasks: [], run }, notify: true }])).results).toEqual(['ok']);
    const until = Date.now() + 5_000;
    while (heard.length < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    expect(heard.sort()).toEqual(['chan_commits q 2', 'chan_commits q 3', 'chan_runs q 3']);
    await c.end();
    await s.close();
  });

  it('serialises transactions of several processes on one run: gap-free, every commit seen', async () => {
    // the writers open the default schema (baton) of this database through openStore
    const s = await openPostgresStore(URL_);
    await s.createRun(newRun('procs'));
    expect(await concurrentWriters(URL_, 'procs', 3, 40)).toEqual([0, 0, 0]);
    expect(await consistency(s, 'procs')).toEqual({ seqs: true, n: 121, run: [121, 121], attempt: 121 });
    await s.close();
  }, 30_000);

  it('loses no commit and keeps log, run and tasks in step when a writer is killed (SIGKILL) mid-run', async () => {
    const s = await openPostgresStore(URL_);
    await s.createRun(newRun('killed'));
    await killedWriter(URL_, 'killed', 150);
    // the server may still finish a commit the dead client had already sent: wait for its backend
    await admin(async (c) => {
      for (let i = 0; i < 200; i++) {
        const r = await c.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'baton' AND state <> 'idle'", [DB]);
        if (r.rows[0]!.n === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error('the killed writer backend did not finish');
    });
    const after = await consistency(s, 'killed');
    expect(after.n).toBeGreaterThan(1);
    expect(after).toEqual({ seqs: true, n: after.n, run: [after.n, after.n], attempt: after.n });
    expect(await concurrentWriters(URL_, 'killed', 1, 5)).toEqual([0]);
    expect((await s.run('killed'))!.seq).toBe(after.n + 5);
    await s.close();
  }, 30_000);

  it('reports a connection lost mid-transaction as store-unreachable, writes nothing, and recovers', async () => {
    const s = await openPostgresStore(URL_, { schema: 'lost' });
    await s.createRun(newRun('l'));
    const kill = `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${DB}' AND application_name = 'baton'`;
    const err = await codeOf(
      s.transact('l', 1, () => {
        // the server drops the connection while the transaction holds its lock (decide is synchronous)
        execFileSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-d', 'postgres', '-qAtc', kill]);
        return { commit: { events: [{ seq: 2, at: 2, type: 'run.completed' }], tasks: [], run: { status: 'completed', updatedAt: 2, endedAt: 2, costUsd: 0, wakeAt: null } }, value: null };
      }),
    );
    expect(err.code).toBe('store-unreachable');
    expect((await s.run('l'))!.seq).toBe(1);
    expect(await s.transact('l', 1, (d) => ({ commit: null, value: d.length }))).toEqual({ ok: true, value: 0 });
    await s.close();
  });

  it('reports a store closed under a caller as a store fault, not a crash, nor a network to wait out', async () => {
    const s: RunStore = await openPostgresStore(URL_, { schema: 'closed' });
    await s.close();
    // store-unreachable would be retried for minutes (a creation, a worker's commit): a closed store is said at once
    expect((await codeOf(s.run('x'))).code).toBe('store');
    expect((await codeOf(s.transact('x', 0, () => ({ commit: null, value: null })))).code).toBe('store');
    await s.close();
  });
});

/**
 * Raw store throughput, below the engine: transacts per second where each transact is one phase of
 * a chain (complete the previous task, claim the next: 3 events, 2 task rows, the run row), for the
 * memory store, SQLite FULL and NORMAL, and PostgreSQL (one connection in sequence, and 4 concurrent
 * writers on their own runs). Also findWork's latency on an empty store and with 100,000 finished
 * phases. Prints figures; never fails on a timing. PostgreSQL: BATON_BENCH_PG (default
 * postgres://postgres@127.0.0.1:5432); a database is created and dropped.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { RunEvent } from '../src/engine/events.js';
import type { Commit, RunStore, TaskRow } from '../src/engine/ports.js';
import { newRun, task } from '../src/store/testing.js';
import { chain, OUTPUT, phaseCommit } from './store-chain.js';
import { MemoryStore } from '../src/store/memory.js';
import { openPostgresStore } from '../src/store/postgres.js';
import { SqliteStore } from '../src/store/sqlite.js';


/**
 * A wide fan: `writers` workers share ONE run; each transact completes `batch` phases and claims as
 * many (2 × batch events, 2 × batch task rows, batch expectations), as an engine that batches
 * completions does. Phases per second = batch × transacts per second.
 */
async function fan(label: string, s: RunStore, total: number, writers: number, batch: number): Promise<string[]> {
  const runId = `fan-${randomBytes(3).toString('hex')}`;
  await s.createRun(newRun(runId));
  let next = 0;
  const worker = async (w: number): Promise<void> => {
    const owner = `w${w}`;
    let held: string[] = [];
    let known = 0;
    for (;;) {
      const claim = Array.from({ length: Math.min(batch, total - next) }, () => `p${next++}`);
      if (claim.length === 0 && held.length === 0) return;
      const r = await s.transact(runId, known, (delta) => {
        const last = delta.length > 0 ? delta[delta.length - 1]!.seq : known;
        let seq = last;
        const at = 1_763_000_000_000 + seq;
        const events: RunEvent[] = [];
        const tasks: TaskRow[] = [];
        for (const p of held) {
          events.push({ seq: ++seq, at, type: 'task.completed', phase: p, task_id: `${runId}/${p}`, attempt: 1, output: OUTPUT, extra_keys: [], cost_usd: 0 });
          tasks.push(task(p, { taskId: `${runId}/${p}`, status: 'completed', attempt: 1, output: OUTPUT, updatedAt: at }));
        }
        for (const p of claim) {
          events.push({ seq: ++seq, at, type: 'task.claimed', phase: p, task_id: `${runId}/${p}`, attempt: 1, agent: 'x', input: {}, worker: owner });
          tasks.push(task(p, { taskId: `${runId}/${p}`, status: 'running', attempt: 1, leaseOwner: owner, leaseExpiresAt: at + 30_000, updatedAt: at }));
        }
        const c: Commit = { events, tasks, run: { status: 'running', updatedAt: at, endedAt: null, costUsd: 0, wakeAt: null }, expect: held.map((p) => ({ phase: p, attempt: 1, owner })) };
        return { commit: c, value: seq };
      });
      if (!r.ok) throw new Error('expectation failed');
      known = r.value;
      held = claim;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: writers }, (_, w) => worker(w)));
  const ms = performance.now() - t0;
  return [label, total.toLocaleString(), `${Math.round((total / ms) * 1000).toLocaleString()} phases/s`, `${((ms * 1000) / total).toFixed(0)} µs/phase`];
}

async function rate(label: string, s: RunStore, n: number, writers = 1): Promise<string[]> {
  const tag = randomBytes(3).toString('hex');
  await chain(s, `warm-${tag}`, 50);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: writers }, (_, w) => chain(s, `run-${tag}-${w}`, n)));
  const ms = performance.now() - t0;
  const total = n * writers;
  return [label, total.toLocaleString(), `${Math.round((total / ms) * 1000).toLocaleString()} transacts/s`, `${((ms * 1000) / total).toFixed(0)} µs`];
}

async function findWorkLatency(s: RunStore): Promise<number> {
  for (let i = 0; i < 20; i++) await s.findWork({ agents: ['x'], now: 2e12, limit: 10 });
  const t0 = performance.now();
  const k = 300;
  for (let i = 0; i < k; i++) await s.findWork({ agents: ['x'], now: 2e12, limit: 10 });
  return ((performance.now() - t0) * 1000) / k;
}

const rows: string[][] = [['store', 'phases', 'rate', 'per phase']];
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
const server = process.env.BATON_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
const db = `baton_bench_${randomBytes(4).toString('hex')}`;
const admin = async (sql: string): Promise<void> => {
  const c = new pg.Client({ connectionString: `${server}/postgres` });
  await c.connect();
  await c.query(sql);
  await c.end();
};
const latency: string[][] = [['findWork latency', 'empty store', '100,000 finished phases']];
try {
  rows.push(await rate('memory', new MemoryStore(), 20_000));
  const full = new SqliteStore(join(dir, 'full.db'));
  rows.push(await rate('sqlite FULL', full, 3_000));
  const normal = new SqliteStore(join(dir, 'normal.db'), { sync: 'normal' });
  rows.push(await rate('sqlite NORMAL', normal, 5_000));
  await admin(`CREATE DATABASE ${db}`);
  const p = await openPostgresStore(`${server}/${db}`);
  rows.push(await rate('postgres, 1 writer', p, 2_000));
  rows.push(await rate('postgres, 4 writers', p, 1_000, 4));
  rows.push(await fan('sqlite FULL, fan, 4 writers, batches of 16', full, 10_000, 4, 16));
  rows.push(await fan('postgres, fan, 4 writers, batches of 16', p, 10_000, 4, 16));

  // findWork: an empty store, then the same with 100,000 finished phases (2,000 runs of 50)
  const fresh = async (name: string, fill: boolean): Promise<[RunStore, RunStore]> => {
    const s = new SqliteStore(join(dir, `${name}.db`));
    const q = await openPostgresStore(`${server}/${db}`, { schema: name });
    for (const st of [s, q]) {
      if (fill) {
        for (let r = 0; r < 2_000; r++) {
          const tasks = Array.from({ length: 50 }, (_, j) => task(`p${j}`, { status: 'completed', attempt: 1, output: OUTPUT }));
          await st.createRun(newRun(`done-${r}`, { status: 'completed', tasks }));
        }
      }
      await st.createRun(newRun('live', { tasks: [task('a'), task('b')] }));
    }
    return [s, q];
  };
  const [se, pe] = await fresh('empty', false);
  const [sf, pf] = await fresh('full', true);
  const c = new pg.Client({ connectionString: `${server}/${db}` });
  await c.connect();
  await c.query('ANALYZE');
  await c.end();
  latency.push(['sqlite', `${(await findWorkLatency(se)).toFixed(0)} µs`, `${(await findWorkLatency(sf)).toFixed(0)} µs`]);
  latency.push(['postgres', `${(await findWorkLatency(pe)).toFixed(0)} µs`, `${(await findWorkLatency(pf)).toFixed(0)} µs`]);
  for (const s of [full, normal, p, se, pe, sf, pf]) await s.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
  await admin(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
}

for (const table of [rows, latency]) {
  const w = table[0]!.map(() => 0);
  for (const r of table) r.forEach((c, i) => (w[i] = Math.max(w[i]!, c.length)));
  for (const r of table) console.log(r.map((c, i) => c.padEnd(w[i]!)).join('  '));
  console.log();
}

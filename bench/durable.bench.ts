/**
 * Durable runs, side by side in one process run (compare within one run: the machine is noisy):
 * phases per second and µs per phase for 1,000 and 10,000 no-op phases (a chain and a wide fan)
 * with the memory store, SQLite FULL and NORMAL, and PostgreSQL with 1 worker (this process) and
 * 4 worker processes; the time `resume` of a half-finished 10,000-phase chain takes to start its
 * first new task; the same SQLite and PostgreSQL figures with 100,000 finished phases already in
 * the store.
 *
 * PostgreSQL: BATON_BENCH_PG (default postgres://postgres@127.0.0.1:5432); a database is created
 * and dropped. Set BATON_BENCH_QUICK=1 for a shorter run. Never fails on a timing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createEngine } from '../src/api/engine.js';
import type { RunStore } from '../src/engine/ports.js';
import { MemoryStore } from '../src/store/memory.js';
import { openPostgresStore } from '../src/store/postgres.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import type { WorkflowModel } from '../src/workflow/model.js';
import { generateWorkflow, type Shape } from './gen.js';

const QUICK = process.env['BATON_BENCH_QUICK'] === '1';
const SERVER = process.env['BATON_BENCH_PG'] ?? 'postgres://postgres@127.0.0.1:5432';
const DB = `baton_bench_${randomBytes(3).toString('hex')}`;
const PG_URL = `${SERVER}/${DB}`;
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const agents: Record<string, () => unknown> = {};
for (let i = 0; i < 10; i++) agents[`agent-${i}`] = () => OUT;
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-'));
let schemaNo = 0;

const models = new Map<string, WorkflowModel>();
function model(shape: Shape, n: number): WorkflowModel {
  const key = `${shape}${n}`;
  let m = models.get(key);
  if (!m) {
    const r = parseWorkflow(generateWorkflow(n, shape));
    if (!r.model) throw new Error('generated workflow is invalid');
    m = r.model;
    models.set(key, m);
  }
  return m;
}

type Backend = 'memory' | 'sqlite FULL' | 'sqlite NORMAL' | 'postgres, 1 worker' | 'postgres, 4 workers';

async function open(b: Backend, name: string): Promise<RunStore> {
  switch (b) {
    case 'memory':
      return new MemoryStore();
    case 'sqlite FULL':
      return openSqliteStore(join(dir, `${name}-full.db`), { sync: 'full' });
    case 'sqlite NORMAL':
      return openSqliteStore(join(dir, `${name}-normal.db`), { sync: 'normal' });
    default:
      return openPostgresStore(PG_URL, { schema: `b${schemaNo++}_${name.replace(/\W/g, '')}`, poolSize: 8 });
  }
}

/** One run in this process; returns ms. */
async function runHere(store: RunStore, m: WorkflowModel, concurrency: number): Promise<number> {
  const engine = createEngine({ store, agents, concurrency });
  const t0 = performance.now();
  const r = await engine.run(m, { trigger: { topic: 't' } });
  const ms = performance.now() - t0;
  await engine.close();
  if (r.status !== 'completed') throw new Error(`run ${r.status}: ${r.error?.message}`);
  return ms;
}

/** Worker processes serving one PostgreSQL schema. */
function startWorkers(schema: string, k: number): ChildProcess[] {
  const script = join(import.meta.dirname, 'pg-worker.ts');
  return Array.from({ length: k }, () => spawn(process.execPath, ['--import', 'tsx', script, PG_URL, schema], { stdio: ['ignore', 'ignore', 'inherit'] }));
}

async function runOnWorkers(store: RunStore, m: WorkflowModel): Promise<number> {
  const engine = createEngine({ store, agents });
  const t0 = performance.now();
  const id = await engine.create(m, { trigger: { topic: 't' } });
  for (;;) {
    const r = await store.run(id);
    if (r && r.status !== 'running' && r.status !== 'waiting') {
      if (r.status !== 'completed') throw new Error(`run ${r.status}`);
      break;
    }
    await store.waitForChange(5);
  }
  const ms = performance.now() - t0;
  await engine.close();
  return ms;
}

const rows: string[][] = [['store', 'shape', 'phases', 'time', 'phases/s', 'µs/phase']];
const row = (b: string, shape: string, n: number, ms: number): void => {
  rows.push([b, shape, n.toLocaleString(), `${ms.toFixed(0)} ms`, Math.round((n / ms) * 1000).toLocaleString(), ((ms * 1000) / n).toFixed(1)]);
};

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: `${SERVER}/postgres` });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

await admin(`CREATE DATABASE ${DB}`);
try {
  const sizes = QUICK ? [1_000] : [1_000, 10_000];
  const backends: Backend[] = ['memory', 'sqlite FULL', 'sqlite NORMAL', 'postgres, 1 worker', 'postgres, 4 workers'];
  for (const b of backends) {
    for (const shape of ['chain', 'fan'] as Shape[]) {
      for (const n of sizes) {
        const m = model(shape, n);
        const store = await open(b, `${shape}${n}`);
        let workers: ChildProcess[] = [];
        try {
          // the best of a few runs of the same size: the first pays for JIT compilation (and the workers' start)
          const reps = b === 'memory' || b.startsWith('sqlite') ? 4 : 3;
          let best = Infinity;
          if (b === 'postgres, 4 workers') {
            workers = startWorkers((store as unknown as { schema: string }).schema, 4);
            for (let k = 0; k < reps; k++) best = Math.min(best, await runOnWorkers(store, m));
          } else {
            for (let k = 0; k < reps; k++) best = Math.min(best, await runHere(store, m, shape === 'chain' ? 1 : 64));
          }
          row(b, shape, n, best);
        } finally {
          for (const w of workers) w.kill('SIGTERM');
          await store.close();
        }
      }
    }
  }

  // resume of a half-finished 10,000-phase chain: time to its first new task
  const resumeRows: string[][] = [['store', 'resume: first new task after', 'events replayed']];
  for (const b of ['sqlite FULL', 'postgres, 1 worker'] as Backend[]) {
    const n = QUICK ? 2_000 : 10_000;
    const store = await open(b, 'resume');
    const m = model('chain', n);
    const crashing = createEngine({ store, agents, faults: { at: 'flush.after-commit', hit: n / 2 } });
    const id = await crashing.create(m, { trigger: { topic: 't' } });
    await crashing.drive(id, undefined).catch(() => undefined);
    await crashing.close();
    const events = (await store.events(id)).length;
    let first = 0;
    const t0 = performance.now();
    const resumer = createEngine({
      store,
      agents: Object.fromEntries(Object.keys(agents).map((a) => [a, () => ((first ||= performance.now()), OUT)])),
      isOwnerDead: () => true,
    });
    const r = await resumer.resume(id);
    await resumer.close();
    if (r.status !== 'completed') throw new Error(`resumed run ${r.status}`);
    resumeRows.push([b, `${(first - t0).toFixed(0)} ms`, events.toLocaleString()]);
    await store.close();
  }

  // a full store: 100,000 finished phases, then the 1,000-phase chain again
  const fullRows: string[][] = [['store', 'chain 1,000: empty store', 'with 100,000 finished phases', 'ratio']];
  for (const b of ['sqlite FULL', 'postgres, 1 worker'] as Backend[]) {
    const store = await open(b, 'full');
    const m = model('chain', 1_000);
    await runHere(store, model('chain', 100), 64);
    const empty = await runHere(store, m, 1);
    const fill = model('fan', QUICK ? 2_000 : 10_000);
    for (let k = 0; k < (QUICK ? 5 : 10); k++) await runHere(store, fill, 256);
    const full = await runHere(store, m, 1);
    fullRows.push([b, `${empty.toFixed(0)} ms`, `${full.toFixed(0)} ms`, (full / empty).toFixed(2)]);
    await store.close();
  }

  for (const t of [rows, resumeRows, fullRows]) {
    const w = t[0]!.map(() => 0);
    for (const r of t) r.forEach((c, i) => (w[i] = Math.max(w[i]!, c.length)));
    for (const r of t) console.log(r.map((c, i) => c.padEnd(w[i]!)).join('  '));
    console.log();
  }
  console.log('targets: SQLite FULL >= 3,000 phases/s on the chain, NORMAL >= 8,000; PostgreSQL chain (1 worker) >= 750/s, fan (4 workers) >= 3,000/s; resume < 1 s; full store within 20%');
} finally {
  await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}

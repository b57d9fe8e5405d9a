/**
 * Baton beside graphile-worker on the same PostgreSQL (issue 13), a fresh database for each drain:
 *
 *   many small runs  5,000 runs of a 5-phase no-op chain drained by 4 `baton worker` processes, beside
 *                    graphile-worker draining 25,000 no-op jobs (4 processes): phases/s vs jobs/s; phases/s
 *                    with only 100 runs live at a time (a new one started as each ends); worker peak RSS (VmHWM) with and without 500 gated runs waiting
 *   fan              one run's 10,000-phase fan on 4 `baton worker`s vs graphile-worker's tuned drain of
 *                    10,000 jobs (4 processes x concurrency 24, a local queue, batched completions)
 *   chain            one run's 2,000-phase chain on PostgreSQL (one engine in this process) vs
 *                    graphile-worker's chain (each job queues the next, one runner in this process);
 *                    the same chain on SQLite FULL and in memory
 *
 * The worker processes start on the empty database, are held still (SIGSTOP) while the work is enqueued,
 * and are let go together (SIGCONT): a drain is timed from then to the last completion. Baton's workers
 * are bin/baton.js over dist/ (built first when src/ is newer), graphile-worker's plain node.
 * BENCH_PARTS=many,fan,chain runs only those parts (default all). BENCH_SCALE=0.1 for a quick run (default 1, the sizes). Prints figures; never fails on a timing.
 * Every drain is warmed up first (20 chains / 100 jobs): JIT, connections, LISTEN.
 * Chains: the best of a few runs of each (the first ones pay for JIT compilation and connections).
 * Targets (issue 13): many small >= 1.0x graphile; 100 vs 5,000 live runs within 20%; RSS < 150 MB;
 * fan >= 1.0x graphile's tuned drain; chain >= 2x graphile's chain; SQLite FULL >= 3,000 phases/s;
 * memory about 10 µs/phase.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger, runMigrations, run as graphileRun } from 'graphile-worker';
import pg from 'pg';
import { createEngine } from '../src/api/engine.js';
import { openStore } from '../src/api/store.js';
import type { RunStore } from '../src/engine/ports.js';
import type { Json } from '../src/core/json.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import type { WorkflowModel } from '../src/workflow/model.js';
import { generateWorkflow, type Shape } from './gen.js';
import { batonWorker, ensureBuilt, fmt, graphileWorker, hold, peakRssMb, printTable, release, scaled, SCALE, stopAll, until, withDatabase, type Proc } from './queue.js';

const WORKERS = 4;
/** graphile-worker as it comes (but 24 jobs at once per process), and tuned as its perf test does. */
const GRAPHILE_PLAIN = { concurrency: 24, tuned: false };
const GRAPHILE = { concurrency: 24, tuned: true };
const WARM_RUNS = 20;
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const agents: Record<string, () => unknown> = {};
for (let i = 0; i < 10; i++) agents[`agent-${i}`] = () => OUT;

function model(source: string): WorkflowModel {
  const r = parseWorkflow(source);
  if (!r.model) throw new Error('generated workflow is invalid');
  return r.model;
}
const gen = (n: number, shape: Shape): WorkflowModel => model(generateWorkflow(n, shape));
/** The 5-phase chain whose first phase waits for an approval nobody gives. */
const chain5 = gen(5, 'chain');
/** One phase fanned out over the trigger's items (the workers' no-op agent answers each). */
const FOR_EACH = model(`openintent: "1.0"
info: {name: each}
workflow:
  each: {assign: agent-0, for_each: $trigger.items, inputs: {i: $item}, outputs: {findings: array, level: string}}
`);
const gatedChain = (): WorkflowModel => model(generateWorkflow(5, 'chain').replace('    assign: agent-0\n', '    assign: agent-0\n    x-require_approval: true\n'));

/** As `baton run --detach` does: the run is stored, its agents are bound by the workers that serve it. */
async function enqueue(store: RunStore, m: WorkflowModel, n: number, trigger: Json = { topic: 't' }): Promise<void> {
  const engine = createEngine({ store, agents });
  for (let i = 0; i < n; i += 16) {
    await Promise.all(Array.from({ length: Math.min(16, n - i) }, () => engine.start(m, { trigger, detach: true })));
  }
  await engine.close();
}


interface Drain {
  ms: number;
  items: number;
  /** Max over the workers. */
  rssMb: number;
  /** Share of one-second samples in which nothing completed. */
  idleShare: number;
}

/**
 * `runs` runs of `m` (and `gated` runs waiting on a gate) drained by 4 `baton worker` processes (after a
 * warm-up of WARM_RUNS chains). With `live`: only that many runs are live at a time (a new one is
 * started as each ends, until `runs` have run): throughput at a steady number of live runs.
 */
async function batonDrain(m: WorkflowModel, runs: number, gated = 0, live?: number, fan?: { trigger: Json; items: number }): Promise<Drain> {
  return withDatabase('baton_vs', async (url) => {
    const store = await openStore(url, { cwd: process.cwd() });
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    const ended = async (): Promise<{ completed: number; failed: number }> => {
      const r = await c.query<{ completed: number; failed: number }>(
        "SELECT count(*) FILTER (WHERE status = 'completed')::int AS completed, count(*) FILTER (WHERE status = 'failed')::int AS failed FROM baton.runs",
      );
      return r.rows[0]!;
    };
    const topUp = createEngine({ store, agents });
    let procs: Proc[] = [];
    try {
      procs = Array.from({ length: WORKERS }, () => batonWorker(url));
      // warm up (JIT, connections, the first LISTEN), then hold still while the work is enqueued
      await enqueue(store, chain5, WARM_RUNS);
      await until(async () => (await ended()).completed === WARM_RUNS, 300_000, 50);
      await hold(procs);
      if (gated > 0) await enqueue(store, gatedChain(), gated);
      // With `live`, every run is started while the clock runs (the first `live` at once, then one as
      // each ends), so both sides of the live-runs comparison pay for creating their runs.
      let started = Math.min(runs, live ?? runs);
      if (live === undefined) await enqueue(store, m, started, fan?.trigger);
      const t0 = release(procs);
      if (live !== undefined) await enqueue(store, m, started);
      const samples: number[] = [];
      let last = 0;
      let lastT = performance.now();
      await until(async () => {
        const e = await ended();
        if (e.failed > 0) throw new Error(`${e.failed} runs failed`);
        const done = e.completed - WARM_RUNS;
        if (performance.now() - lastT >= 1_000) {
          samples.push(done - last);
          last = done;
          lastT = performance.now();
        }
        // keep `live` runs live: start one for each that ended
        const add = live === undefined ? 0 : Math.min(runs - started, done + live - started);
        if (add > 0) {
          started += add;
          await Promise.all(Array.from({ length: add }, () => topUp.start(m, { trigger: { topic: 't' }, detach: true })));
        }
        return done === runs;
      }, 1_800_000, live === undefined ? 100 : 10);
      const ms = performance.now() - t0;
      const rssMb = Math.max(...procs.map((p) => peakRssMb(p.child.pid)));
      return { ms, items: fan?.items ?? runs * m.phases.length, rssMb, idleShare: samples.length > 0 ? samples.filter((s) => s === 0).length / samples.length : 0 };
    } finally {
      await stopAll(procs);
      await topUp.close();
      await c.end();
      await store.close();
    }
  });
}

/** `jobs` no-op jobs drained by 4 graphile-worker processes (after a warm-up of its own). */
async function graphileDrain(jobs: number, o: { concurrency: number; tuned: boolean }): Promise<Drain> {
  return withDatabase('graphile_vs', async (url) => {
    await runMigrations({ connectionString: url, logger: new Logger(() => () => undefined) });
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    let procs: Proc[] = [];
    try {
      procs = Array.from({ length: WORKERS }, () => graphileWorker(url, o));
      await c.query(`SELECT graphile_worker.add_job('noop', json_build_object('i', i)) FROM generate_series(1, $1) i`, [WARM_RUNS * 5]);
      await until(async () => (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM graphile_worker._private_jobs')).rows[0]!.n === 0, 300_000, 50);
      await hold(procs);
      await c.query(`SELECT graphile_worker.add_job('noop', json_build_object('i', i)) FROM generate_series(1, $1) i`, [jobs]);
      const t0 = release(procs);
      await until(async () => (await c.query<{ n: number }>('SELECT count(*)::int AS n FROM graphile_worker._private_jobs')).rows[0]!.n === 0, 1_800_000, 50);
      const ms = performance.now() - t0;
      return { ms, items: jobs, rssMb: Math.max(...procs.map((p) => peakRssMb(p.child.pid))), idleShare: 0 };
    } finally {
      await stopAll(procs);
      await c.end();
    }
  });
}

/** One run of a `n`-phase chain in this process, on a store. */
async function batonChain(store: RunStore, n: number): Promise<number> {
  const m = gen(n, 'chain');
  const engine = createEngine({ store, agents, concurrency: 1 });
  const t0 = performance.now();
  const r = await engine.run(m, { trigger: { topic: 't' } });
  const ms = performance.now() - t0;
  await engine.close();
  if (r.status !== 'completed') throw new Error(`chain ${r.status}`);
  return ms;
}

/** graphile-worker's chain: job i queues job i + 1; one runner in this process. */
async function graphileChain(n: number): Promise<number> {
  return withDatabase('graphile_chain', async (url) => {
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    // a pool of ours, ended after the runner stops (DROP DATABASE ... FORCE would fail its idle clients)
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    const runner = await graphileRun({
      pgPool: pool,
      concurrency: 1,
      noHandleSignals: true,
      pollInterval: 2_000,
      logger: new Logger(() => () => undefined),
      taskList: {
        chain: async (payload, helpers) => {
          const i = (payload as { i: number }).i;
          if (i + 1 < n) await helpers.addJob('chain', { i: i + 1 });
          else finish();
        },
      },
    });
    const t0 = performance.now();
    await runner.addJob('chain', { i: 0 });
    await finished;
    const ms = performance.now() - t0;
    await runner.stop();
    await pool.end();
    return ms;
  });
}

const perS = (d: Drain): number => (d.items / d.ms) * 1000;

ensureBuilt();
console.log(`BENCH_SCALE=${SCALE}; ${WORKERS} worker processes each, warmed up by ${WARM_RUNS} runs (${WARM_RUNS * 5} jobs); graphile-worker ${WORKERS} x concurrency ${GRAPHILE.concurrency}, plain and tuned (local queue 500, batched completions)\n`);

// BENCH_PARTS=many,fan,chain: only those parts (default: all)
const PARTS = new Set((process.env['BENCH_PARTS'] ?? 'many,fan,chain').split(','));

// many small runs
if (PARTS.has('many')) {
const RUNS = scaled(5_000, 20);
const FEW = Math.min(100, RUNS);
const GATED = scaled(500, 10);
const many = await batonDrain(chain5, RUNS);
const jobs = await graphileDrain(RUNS * 5, GRAPHILE_PLAIN);
const jobsTuned = await graphileDrain(RUNS * 5, GRAPHILE);
// the same number of phases, with only FEW runs live at a time (a new run starts as each ends)
const few = await batonDrain(chain5, RUNS, 0, FEW);
// the comparison's other side: all RUNS live at once, started as the clock starts, like `few`
const manyLive = await batonDrain(chain5, RUNS, 0, RUNS);
const fewGated = await batonDrain(chain5, RUNS, GATED, FEW);
printTable([
  ['many small runs', 'items', 'time', 'per second', 'µs/item', 'peak RSS/worker', 'idle 1 s samples'],
  [`baton: ${fmt(RUNS)} runs x 5 phases`, fmt(many.items), `${fmt(many.ms)} ms`, fmt(perS(many)), fmt((many.ms * 1000) / many.items, 1), `${fmt(many.rssMb)} MB`, `${fmt(many.idleShare * 100)}%`],
  [`graphile-worker: ${fmt(RUNS * 5)} jobs`, fmt(jobs.items), `${fmt(jobs.ms)} ms`, fmt(perS(jobs)), fmt((jobs.ms * 1000) / jobs.items, 1), `${fmt(jobs.rssMb)} MB`, ''],
  [`graphile-worker: ${fmt(RUNS * 5)} jobs, tuned`, fmt(jobsTuned.items), `${fmt(jobsTuned.ms)} ms`, fmt(perS(jobsTuned)), fmt((jobsTuned.ms * 1000) / jobsTuned.items, 1), `${fmt(jobsTuned.rssMb)} MB`, ''],
  [`baton: ${fmt(RUNS)} runs, ${fmt(FEW)} live at a time`, fmt(few.items), `${fmt(few.ms)} ms`, fmt(perS(few)), fmt((few.ms * 1000) / few.items, 1), `${fmt(few.rssMb)} MB`, `${fmt(few.idleShare * 100)}%`],
  [`baton: ${fmt(RUNS)} runs, all live, started in the timing`, fmt(manyLive.items), `${fmt(manyLive.ms)} ms`, fmt(perS(manyLive)), fmt((manyLive.ms * 1000) / manyLive.items, 1), `${fmt(manyLive.rssMb)} MB`, `${fmt(manyLive.idleShare * 100)}%`],
  [`baton: the same + ${fmt(GATED)} gated runs`, fmt(fewGated.items), `${fmt(fewGated.ms)} ms`, fmt(perS(fewGated)), fmt((fewGated.ms * 1000) / fewGated.items, 1), `${fmt(fewGated.rssMb)} MB`, `${fmt(fewGated.idleShare * 100)}%`],
]);
console.log(`baton phases/s / graphile jobs/s: ${fmt(perS(many) / perS(jobs), 2)} (target >= 1.0); / tuned: ${fmt(perS(many) / perS(jobsTuned), 2)}`);
console.log(`phases/s with ${fmt(RUNS)} live runs / with ${fmt(FEW)} live, both started in the timing: ${fmt(perS(manyLive) / perS(few), 2)} (target within 0.8-1.2); with the ${fmt(RUNS)} enqueued before the clock: ${fmt(perS(many) / perS(few), 2)}`);
console.log(`peak RSS per worker: ${fmt(many.rssMb)} MB (${fmt(RUNS)} runs), ${fmt(few.rssMb)} MB (${fmt(FEW)}), ${fmt(fewGated.rssMb)} MB (${fmt(FEW)} + ${fmt(GATED)} gated) (target < 150 MB)\n`);

}

// a fan
if (PARTS.has('fan')) {
const FAN = scaled(10_000, 100);
const fan = await batonDrain(gen(FAN, 'fan'), 1);
// the same width as one phase's `for_each` over the trigger's items (a 5-line workflow: nothing to compile)
const each = await batonDrain(FOR_EACH, 1, 0, undefined, { trigger: { items: Array.from({ length: FAN }, (_, i) => i) }, items: FAN });
const fanJobs = await graphileDrain(FAN, GRAPHILE);
printTable([
  ['fan', 'items', 'time', 'per second', 'µs/item'],
  [`baton: one run, ${fmt(FAN)} phases`, fmt(fan.items), `${fmt(fan.ms)} ms`, fmt(perS(fan)), fmt((fan.ms * 1000) / fan.items, 1)],
  [`baton: one run, one phase's for_each of ${fmt(FAN)} items`, fmt(each.items), `${fmt(each.ms)} ms`, fmt(perS(each)), fmt((each.ms * 1000) / each.items, 1)],
  [`graphile-worker: ${fmt(FAN)} jobs, tuned`, fmt(fanJobs.items), `${fmt(fanJobs.ms)} ms`, fmt(perS(fanJobs)), fmt((fanJobs.ms * 1000) / fanJobs.items, 1)],
]);
console.log(`baton / graphile-worker: ${fmt(perS(fan) / perS(fanJobs), 2)} (target >= 1.0); the for_each: ${fmt(perS(each) / perS(fanJobs), 2)}\n`);

}

// a chain
if (PARTS.has('chain')) {
const CHAIN = scaled(2_000, 50);
const pgChain = await withDatabase('baton_chain', async (url) => {
  const store = await openStore(url, { cwd: process.cwd() });
  try {
    await batonChain(store, Math.min(100, CHAIN)); // JIT and connections warm
    return Math.min(await batonChain(store, CHAIN), await batonChain(store, CHAIN));
  } finally {
    await store.close();
  }
});
const gChain = Math.min(await graphileChain(CHAIN), await graphileChain(CHAIN));
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-chain-'));
let sqliteChain: number;
let memChain: number;
try {
  const sq = await openStore(join(dir, 'chain.db'), { cwd: dir, sync: 'full' });
  // the best of several runs of the same chain: the first ones pay for JIT compilation (the engine's steady cost is the figure)
  await batonChain(sq, Math.min(100, CHAIN));
  sqliteChain = Infinity;
  for (let k = 0; k < 3; k++) sqliteChain = Math.min(sqliteChain, await batonChain(sq, CHAIN));
  await sq.close();
  const mem = await openStore('memory', { cwd: dir });
  memChain = Infinity;
  for (let k = 0; k < 10; k++) memChain = Math.min(memChain, await batonChain(mem, CHAIN));
  await mem.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const row = (name: string, ms: number): string[] => [name, fmt(CHAIN), `${fmt(ms)} ms`, fmt((CHAIN / ms) * 1000), fmt((ms * 1000) / CHAIN, 1)];
printTable([
  ['chain (one run)', 'phases', 'time', 'per second', 'µs/phase'],
  row('baton, PostgreSQL', pgChain),
  row('graphile-worker, each job queues the next', gChain),
  row('baton, SQLite FULL', sqliteChain),
  row('baton, memory', memChain),
]);
console.log(`baton PostgreSQL chain / graphile-worker chain: ${fmt(gChain / pgChain, 2)}x as fast (target >= 2); SQLite FULL ${fmt((CHAIN / sqliteChain) * 1000)} phases/s (target >= 3,000); memory ${fmt((memChain * 1000) / CHAIN, 1)} µs/phase (target about 10)`);
}

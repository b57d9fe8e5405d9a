/**
 * A drain to look inside (not part of `npm run bench`): `npx tsx bench/probe-drain.ts RUNS WORKERS [chain|fan] [PHASES]`
 * drains RUNS runs by WORKERS `baton worker` processes on a fresh PostgreSQL database and prints the wall time and
 * the CPU split (workers vs PostgreSQL, per phase). PROBE_STATS=1 adds pg_stat_statements counts per phase (the
 * extension must be preloaded); PROBE_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" profiles the workers.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createEngine } from '../src/api/engine.js';
import { openStore } from '../src/api/store.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import { generateWorkflow } from './gen.js';
import pg from 'pg';
import { batonWorker, ensureBuilt, hold, release, stopAll, until, withDatabase } from './queue.js';

const RUNS = Number(process.argv[2] ?? 1000);
const WORKERS = Number(process.argv[3] ?? 4);
const SHAPE = (process.argv[4] ?? 'chain') as 'chain' | 'fan';
const PHASES = Number(process.argv[5] ?? 5);
const extra = process.env.PROBE_ARGS ? process.env.PROBE_ARGS.split(' ') : [];
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const agents: Record<string, () => unknown> = {};
for (let i = 0; i < 10; i++) agents[`agent-${i}`] = () => OUT;
const m = parseWorkflow(generateWorkflow(PHASES, SHAPE)).model!;
function cpuOf(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch { return 0; }
}
function pgCpu(): number {
  let t = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try { if (readFileSync(`/proc/${d}/comm`, 'utf8').startsWith('postgres')) t += cpuOf(Number(d)); } catch {}
  }
  return t;
}
ensureBuilt();
await withDatabase('probe', async (url) => {
  const store = await openStore(url, { cwd: process.cwd() });
  const procs = Array.from({ length: WORKERS }, () => batonWorker(url, extra));
  const engine = createEngine({ store, agents });
  const WARM = Number(process.env.PROBE_WARM ?? 10);
  for (let i = 0; i < WARM; i++) await engine.start(m, { trigger: { topic: "t" }, detach: true });
  const count = async () => (await store.runs({ status: ['completed'], limit: 1_000_000 })).length;
  await until(async () => (await count()) === WARM, 60_000, 50);
  await hold(procs);
  for (let i = 0; i < RUNS; i += 16) await Promise.all(Array.from({ length: Math.min(16, RUNS - i) }, () => engine.start(m, { trigger: { topic: 't' }, detach: true })));
  const c0 = procs.map((p) => cpuOf(p.child.pid!));
  const p0 = pgCpu();
  const adm = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await adm.connect();
  if (process.env.PROBE_STATS) await adm.query('select pg_stat_statements_reset()');
  let notes = 0, noteBytes = 0;
  const lc = new pg.Client({ connectionString: url });
  await lc.connect();
  lc.on('notification', (n) => { notes++; noteBytes += (n.payload ?? '').length; });
  await lc.query('LISTEN baton_runs');
  const t0 = release(procs);
  await until(async () => (await count()) === RUNS + WARM, 600_000, 50);
  const ms = performance.now() - t0;
  const wc = procs.map((p, i) => cpuOf(p.child.pid!) - c0[i]!);
  const pc = pgCpu() - p0;
  const items = RUNS * PHASES;
  console.log(`${RUNS} runs x ${PHASES} ${SHAPE}, ${WORKERS} workers: ${ms.toFixed(0)} ms, ${(items / ms * 1000).toFixed(0)} phases/s; worker CPU ${wc.join('+')} ms = ${(wc.reduce((a, b) => a + b, 0) * 1000 / items).toFixed(0)} µs/phase; postgres CPU ${pc} ms = ${(pc * 1000 / items).toFixed(0)} µs/phase`);
  console.log(`notifications on baton_runs: ${notes} (${(notes / items).toFixed(2)}/phase, ${noteBytes} bytes)`);
  await lc.end();
  if (process.env.PROBE_STATS) {
    const r = await adm.query(`select calls, round(total_exec_time::numeric,0) as ms, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as q from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database()) is not true order by calls desc limit 25`);
    for (const x of r.rows) console.log(String(x.calls).padStart(8), String(x.ms).padStart(7), 'ms', String(x.rows).padStart(8), (x.calls / items).toFixed(2).padStart(6), '/phase ', x.q);
  }
  await adm.end();
  await engine.close();
  await stopAll(procs);
  await store.close();
});

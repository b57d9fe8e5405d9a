/**
 * Fan-out (`for_each`): the executor's cost per item on memory, SQLite and PostgreSQL (agents that return
 * at once, so what is measured is claims, commits, events and rows), and the peak RSS of a run of 100,000
 * items on SQLite. Each item is its own task (events, a row); the phase's completion gathers the outputs.
 * BATON_BENCH_QUICK=1 for a shorter run. Prints figures; never fails on a timing.
 */
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createEngine } from '../src/api/engine.js';
import type { RunStore } from '../src/engine/ports.js';
import { MemoryStore } from '../src/store/memory.js';
import { openPostgresStore } from '../src/store/postgres.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import { parseWorkflow } from '../src/workflow/compile.js';

const QUICK = process.env['BATON_BENCH_QUICK'] === '1';
const SERVER = process.env['BATON_BENCH_PG'] ?? 'postgres://postgres@127.0.0.1:5432';
const DB = `baton_bench_fan_${randomBytes(3).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'baton-fan-bench-'));

const model = parseWorkflow(`openintent: "1.0"
info: {name: fan}
workflow:
  list: {assign: l, inputs: {n: $trigger.n}, outputs: {xs: "integer[]"}}
  each: {assign: e, depends_on: [list], for_each: list.xs, inputs: {x: $item}, outputs: {y: integer}}
  sum: {assign: s, depends_on: [each], inputs: {ys: each.y}, outputs: {total: integer}}
`).model!;
const agents = {
  l: (c: { input: Record<string, unknown> }) => ({ xs: Array.from({ length: c.input['n'] as number }, (_, i) => i) }),
  e: (c: { input: Record<string, unknown> }) => ({ y: (c.input['x'] as number) * 2 }),
  s: (c: { input: Record<string, unknown> }) => ({ total: (c.input['ys'] as number[]).reduce((a, b) => a + b, 0) }),
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

async function once(store: RunStore, n: number, keepEvents = true): Promise<{ ms: number; peak: number }> {
  globalThis.gc?.();
  let peak = process.memoryUsage().rss;
  const t = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const engine = createEngine({ store, concurrency: 16, agents, ...(process.env['BENCH_SNAPSHOT_EVERY'] !== undefined ? { snapshotEvery: Number(process.env['BENCH_SNAPSHOT_EVERY']) } : {}) });
  const t0 = performance.now();
  const r = await engine.run(model, { trigger: { n }, keepEvents });
  const ms = performance.now() - t0;
  clearInterval(t);
  peak = Math.max(peak, process.memoryUsage().rss);
  const expected = n * (n - 1);
  if (r.status !== 'completed' || (r.phases['sum']!.output as { total: number }).total !== expected) throw new Error(`fan of ${n} ended ${r.status}`);
  await engine.close();
  return { ms, peak };
}

/** The same width as plain phases (`p0` .. `pN-1`, each its own phase of the workflow): the cost an item is held to. */
function phasesModel(n: number) {
  let y = 'openintent: "1.0"\ninfo: {name: phases}\nworkflow:\n  list: {assign: l, inputs: {n: $trigger.n}, outputs: {xs: "integer[]"}}\n';
  for (let i = 0; i < n; i++) y += `  p${i}: {assign: e, depends_on: [list], inputs: {x: list.xs}, outputs: {y: integer}}\n`;
  return parseWorkflow(y).model!;
}
const phaseAgents = { l: () => ({ xs: [1] }), e: () => ({ y: 2 }) };

async function phasesOnce(store: RunStore, n: number): Promise<number> {
  const m = phasesModel(n);
  const engine = createEngine({ store, concurrency: 16, agents: phaseAgents });
  // compiled above, outside the timing (as the fan-out's workflow is)
  const t0 = performance.now();
  const r = await engine.run(m, { trigger: { n }, keepEvents: false });
  const ms = performance.now() - t0;
  if (r.status !== 'completed') throw new Error(`phases ended ${r.status}`);
  await engine.close();
  return ms;
}

const ratios: string[] = [];
const side = (store: string, n: number, items: { ms: number }, phasesMs: number): void => {
  const a = (items.ms * 1000) / n;
  const b = (phasesMs * 1000) / n;
  console.log(`${store.padEnd(10)} ${String(n).padStart(7)} phases ${phasesMs.toFixed(0).padStart(7)} ms  ${b.toFixed(0).padStart(5)} us/phase  (items: ${a.toFixed(0)} us/item, ${(a / b).toFixed(2)}x a phase)`);
  ratios.push(`${store} ${(a / b).toFixed(2)}x`);
};

const line = (store: string, n: number, r: { ms: number; peak: number }) =>
  console.log(`${store.padEnd(10)} ${String(n).padStart(7)} items  ${r.ms.toFixed(0).padStart(7)} ms  ${((r.ms * 1000) / n).toFixed(0).padStart(5)} us/item  peak RSS ${(r.peak / 1e6).toFixed(0)} MB`);

// a child process that runs one fan on SQLite and prints its figures (RSS per item count, each in a fresh process)
if (process.argv[2] === '--one') {
  const n = Number(process.argv[3]);
  const s = openSqliteStore(join(dir, `one-${n}.db`), { sync: 'normal' });
  // as `baton run` drives it: the result's event log is not kept in memory (--events keeps it, as engine.run does by default)
  const r = await once(s, n, process.argv[4] === '--events');
  await s.close();
  console.log(JSON.stringify({ ms: r.ms, peak: r.peak, hwm: Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) * 1024 }));
  process.exit(0);
}

const N = QUICK ? 2_000 : 10_000;
// both paths warmed (JIT) before either is timed: the first run of a process pays for compiling the engine's code
await once(new MemoryStore(), 1_000);
await phasesOnce(new MemoryStore(), 1_000);
{
  const r = await once(new MemoryStore(), N);
  line('memory', N, r);
  side('memory', N, r, await phasesOnce(new MemoryStore(), N));
}
{
  const s = openSqliteStore(join(dir, 'a.db'), { sync: 'normal' });
  const r = await once(s, N);
  line('sqlite', N, r);
  side('sqlite', N, r, await phasesOnce(s, N));
  await s.close();
}
let pgOk = true;
try {
  await admin(`CREATE DATABASE ${DB}`);
} catch (e) {
  pgOk = false;
  console.log(`postgres   skipped: ${(e as Error).message}`);
}
if (pgOk) {
  try {
    const s = await openPostgresStore(`${SERVER}/${DB}`, { schema: 'fan', poolSize: 8 });
    const r = await once(s, N);
    line('postgres', N, r);
    side('postgres', N, r, await phasesOnce(s, N));
    await s.close();
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`).catch(() => undefined);
  }
}
console.log(`an item's cost against a phase's, same width, same store, concurrency 16: ${ratios.join(', ')} (target: the same)`);
const BIG = QUICK ? 20_000 : 100_000;
{
  const s = openSqliteStore(join(dir, 'big.db'), { sync: 'normal' });
  line('sqlite', BIG, await once(s, BIG));
  await s.close();
}

// peak RSS against the item count, each size in a fresh process: what grows per item; driven as
// `baton run` drives it (no event log kept in memory), and once with the log kept (engine.run's default)
const sizes = QUICK ? [5_000, 10_000, 20_000] : [25_000, 50_000, 100_000];
function fresh(n: number, events: boolean): { n: number; hwm: number; ms: number } | undefined {
  const c = spawnSync(process.execPath, [...process.execArgv, import.meta.filename, '--one', String(n), ...(events ? ['--events'] : [])], { encoding: 'utf8' });
  const last = c.stdout.trim().split('\n').pop() ?? '';
  try {
    const r = JSON.parse(last) as { ms: number; hwm: number };
    console.log(`sqlite     ${String(n).padStart(7)} items  ${r.ms.toFixed(0).padStart(7)} ms  fresh process, peak RSS ${(r.hwm / 1e6).toFixed(0)} MB${events ? ', events kept in memory' : ''}`);
    return { n, hwm: r.hwm, ms: r.ms };
  } catch {
    console.log(`sqlite     ${n} items: the child failed: ${c.stderr.slice(-300)}`);
    return undefined;
  }
}
const peaks = sizes.map((n) => fresh(n, false)).filter((p) => p !== undefined);
if (peaks.length >= 2) {
  const a = peaks[0]!;
  const b = peaks[peaks.length - 1]!;
  console.log(`peak RSS grows ${(((b.hwm - a.hwm) / (b.n - a.n)) / 1000).toFixed(2)} KB per item from ${a.n.toLocaleString()} to ${b.n.toLocaleString()} items; ${(b.hwm / 1e6).toFixed(0)} MB at ${b.n.toLocaleString()} (target: flat, under 300 MB at 100,000)`);
}
fresh(sizes[sizes.length - 1]!, true);

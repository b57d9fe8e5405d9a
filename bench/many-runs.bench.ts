/**
 * Many runs at once in one engine (createEngine, this process), as a service that starts runs as
 * requests come does, on memory, SQLite FULL and PostgreSQL:
 *   retrying  RUNS runs of a 2-phase chain whose first phase fails once and is retried after 1 ms, all
 *             started together. A retry due within a second keeps a run off the fast path (its commits
 *             go through a transaction of its own): the figure of the worker's `transact` path.
 *   plain     PLAIN runs of a 3-phase chain started together: the fast path (many runs to a commit) and
 *             runs taken up as they were created.
 * Prints wall time, runs and phases per second, µs per run, and transactions per run, with the figures
 * of the previous design (measured 2026-11-27) below.
 *
 * PostgreSQL: BATON_BENCH_PG (default postgres://postgres@127.0.0.1:5432); a database is created and
 * dropped. BATON_BENCH_QUICK=1: 300 and 500 runs. Never fails on a timing.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/api/engine.js';
import { openStore } from '../src/api/store.js';
import type { RunStore } from '../src/engine/ports.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import { admin, SERVER } from './queue.js';

const QUICK = process.env['BATON_BENCH_QUICK'] === '1';
const RUNS = QUICK ? 300 : 2000;
const PLAIN = QUICK ? 500 : 5000;
const plain = parseWorkflow(`openintent: "1.0"
info: {name: plain}
workflow:
  x: {assign: ok, outputs: {n: number}}
  y: {assign: ok, depends_on: [x], inputs: {n: x.n}, outputs: {n: number}}
  z: {assign: ok, depends_on: [y], inputs: {n: y.n}, outputs: {n: number}}
`).model!;
const model = parseWorkflow(`openintent: "1.0"
info: {name: retrying}
workflow:
  a:
    assign: flaky
    retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 1}
    outputs: {n: number}
  b:
    assign: ok
    depends_on: [a]
    inputs: {n: a.n}
    outputs: {n: number}
`).model!;

/** The store with its transactions counted. */
function counted(store: RunStore): { store: RunStore; transactions: () => number } {
  let n = 0;
  const wrapped = new Proxy(store, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (key === 'transact') return (...a: Parameters<RunStore['transact']>) => (n++, target.transact(...a));
      return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
    },
  }) as RunStore;
  return { store: wrapped, transactions: () => n };
}

async function drain(label: string, opened: RunStore, shape: 'retrying' | 'plain'): Promise<string[]> {
  const { store, transactions } = counted(opened);
  const tries = new Map<string, number>();
  const engine = createEngine({
    store,
    agents: {
      flaky: (ctx) => {
        const n = (tries.get(ctx.runId) ?? 0) + 1;
        tries.set(ctx.runId, n);
        if (n === 1) throw new Error('the first try fails');
        return { n: 1 };
      },
      ok: (ctx) => ({ n: ((ctx.input['n'] as number | undefined) ?? 0) + 1 }),
    },
  });
  try {
    const [n, m, phases] = shape === 'retrying' ? [RUNS, model, 2] : [PLAIN, plain, 3];
    const t0 = performance.now();
    const results = await Promise.all(Array.from({ length: n }, () => engine.run(m, { trigger: {} })));
    const ms = performance.now() - t0;
    const bad = results.filter((r) => r.status !== 'completed').length;
    if (bad > 0) throw new Error(`${label}: ${bad} runs did not complete`);
    return [`${shape}, ${label}`, n.toLocaleString(), `${ms.toFixed(0)} ms`, Math.round((n / ms) * 1000).toLocaleString(), Math.round(((n * phases) / ms) * 1000).toLocaleString(), `${((ms * 1000) / n).toFixed(0)} µs`, (transactions() / n).toFixed(2)];
  } finally {
    await engine.close();
  }
}

const rows: string[][] = [['store', 'runs', 'time', 'runs/s', 'phases/s', 'per run', 'transactions/run']];
const dir = mkdtempSync(join(tmpdir(), 'baton-many-runs-bench-'));
try {
  for (const [label, url] of [['memory', 'memory'], ['sqlite FULL', 'sqlite']] as const) {
    for (const shape of ['retrying', 'plain'] as const) {
      const store = await openStore(url === 'memory' ? url : join(dir, `${shape}.db`), { cwd: dir });
      try {
        rows.push(await drain(label, store, shape));
      } finally {
        await store.close();
      }
    }
  }
  const db = `baton_many_runs_bench_${randomBytes(3).toString('hex')}`;
  try {
    await admin(`CREATE DATABASE ${db}`);
    const store = await openStore(`${SERVER}/${db}`, { cwd: dir });
    try {
      rows.push(await drain('postgres', store, 'retrying'));
      rows.push(await drain('postgres', store, 'plain'));
    } finally {
      await store.close();
      await admin(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    }
  } catch (e) {
    console.log(`PostgreSQL at ${SERVER}: ${(e as Error).message} (its row is left out)`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) console.log(r.map((c, i) => (i >= 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  '));
console.log(`\nretrying: ${RUNS.toLocaleString()} runs started together, each failing once and retried after 1 ms. Before such runs were committed 8 at a time (2026-11-27, 2,000 runs): PostgreSQL 11.5 s, SQLite FULL 4.0 s, memory 0.65 s.`);
console.log(`plain: ${PLAIN.toLocaleString()} runs of a 3-phase chain started together. Before every run the fast path may take went by it and runs were taken up as created (2026-11-27, 5,000 runs): PostgreSQL 9.8 s (1.5 transactions a run), SQLite FULL 5.3 s, memory 1.6 s.`);

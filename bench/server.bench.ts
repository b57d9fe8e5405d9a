/**
 * The HTTP API of `baton serve` on a loopback port, over SQLite (FULL) and PostgreSQL: requests per
 * second and the cost of one request for
 *   - POST /runs of a one-phase workflow and its completion (the client waits for the end on the run's
 *     event stream: SSE), and
 *   - GET /runs/{id},
 * with 1 and with 16 concurrent clients (fetch, keep-alive), through an API key (sha256 per request).
 * The server's worker runs the phases in the same process. Prints figures; never fails on a timing.
 * PostgreSQL: BATON_BENCH_PG (default postgres://postgres@127.0.0.1:5432); a database is created and
 * dropped. BATON_BENCH_QUICK=1: fewer requests.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createEngine, openStore, type RunStore } from '../src/index.js';
import { parseKeysEnv, startServer } from '../src/exports/server.js';
import { sseMessages } from '../src/server/client.js';

const SERVER = process.env['BATON_BENCH_PG'] ?? 'postgres://postgres@127.0.0.1:5432';
const QUICK = process.env['BATON_BENCH_QUICK'] === '1';
const KEY = 'bench-key-0123456789abcdef';
const AUTH = { authorization: `Bearer ${KEY}` };
const ONE_PHASE = 'openintent: "1.0"\ninfo: {name: one}\nworkflow:\n  a: {assign: x, outputs: {n: number}}\n';

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: `${SERVER}/postgres` });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** Starts a one-phase run and waits for its end on its event stream. */
async function startAndFinish(url: string): Promise<void> {
  const res = await fetch(`${url}/runs`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ workflow: ONE_PHASE }) });
  if (res.status !== 201) throw new Error(`POST /runs answered ${res.status}: ${await res.text()}`);
  const { run_id } = (await res.json()) as { run_id: string };
  const s = await fetch(`${url}/runs/${run_id}/events`, { headers: { ...AUTH, accept: 'text/event-stream' } });
  for await (const m of sseMessages(s.body!)) {
    if (m.event === 'end') {
      if (!m.data.includes('"completed"')) throw new Error(`run ${run_id} ended ${m.data}`);
      return;
    }
  }
  throw new Error(`the stream of ${run_id} ended without its end`);
}

async function getRun(url: string, id: string): Promise<void> {
  const res = await fetch(`${url}/runs/${id}`, { headers: AUTH });
  if (res.status !== 200) throw new Error(`GET /runs/{id} answered ${res.status}`);
  await res.arrayBuffer();
}

/** `total` calls of `op` by `clients` concurrent loops; ms taken. */
async function load(total: number, clients: number, op: () => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next++ < total) await op();
    }),
  );
  return performance.now() - t0;
}

const rows: string[][] = [['store', 'operation', 'clients', 'requests', 'time', 'per second', 'ms per request']];
const row = (store: string, op: string, clients: number, n: number, ms: number): void => {
  rows.push([store, op, String(clients), n.toLocaleString(), `${ms.toFixed(0)} ms`, Math.round((n / ms) * 1000).toLocaleString(), (ms / n).toFixed(2)]);
};

async function bench(label: string, store: RunStore, dir: string, changes?: RunStore): Promise<void> {
  const engine = createEngine({ store, agents: { x: () => ({ n: 1 }) }, concurrency: 32 });
  const server = await startServer({ engine, port: 0, keys: parseKeysEnv(`bench:operator:${KEY}`), cwd: dir, log: () => undefined, graceMs: 1000, ...(changes ? { changes } : {}) });
  try {
    const runs = QUICK ? [50, 100] : [200, 800];
    const gets = QUICK ? [500, 1000] : [2000, 8000];
    await load(20, 4, () => startAndFinish(server.url)); // warm-up: JIT, connections, the workflow compiled
    for (const [i, clients] of [1, 16].entries()) {
      const n = runs[i]!;
      row(label, 'POST /runs + completion (1 phase)', clients, n, await load(n, clients, () => startAndFinish(server.url)));
    }
    const ids = (await store.runs({ limit: 100 })).map((r) => r.runId);
    let k = 0;
    for (const [i, clients] of [1, 16].entries()) {
      const n = gets[i]!;
      row(label, 'GET /runs/{id}', clients, n, await load(n, clients, () => getRun(server.url, ids[k++ % ids.length]!)));
    }
  } finally {
    await server.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'baton-server-bench-'));
try {
  const sqlite = await openStore(join(dir, 'bench.db'), { cwd: dir });
  try {
    await bench('sqlite FULL', sqlite, dir);
  } finally {
    await sqlite.close();
  }
  const db = `baton_server_bench_${randomBytes(3).toString('hex')}`;
  let pgOk = true;
  try {
    await admin(`CREATE DATABASE ${db}`);
  } catch (e) {
    pgOk = false;
    console.log(`PostgreSQL at ${SERVER} cannot be reached (${(e as Error).message}): its rows are left out`);
  }
  if (pgOk) {
    try {
      const store = await openStore(`${SERVER}/${db}`, { cwd: dir });
      // as `baton serve` does: a second store object whose notifications say which runs changed
      const changes = await openStore(`${SERVER}/${db}`, { cwd: dir });
      try {
        await bench('postgres', store, dir, changes);
      } finally {
        await changes.close();
        await store.close();
      }
    } finally {
      await admin(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) console.log(r.map((c, i) => (i >= 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  '));
console.log('\nA run: POST /runs, then its event stream read until `end` (the server’s worker claims, runs and commits the phase meanwhile).');

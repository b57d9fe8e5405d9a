/**
 * Remote agents of `baton serve` on a loopback port over SQLite (FULL) and PostgreSQL: HTTP claim + complete round
 * trips per second with 1 and with 16 concurrent remote agents (createRemoteAgent, one slot each),
 * through an agent key, on a fan of independent phases of one remote agent; and the same fan done by
 * the in-process worker on the same store, for comparison. Prints figures; never fails on a timing.
 * PostgreSQL: BATON_BENCH_PG (default postgres://postgres@127.0.0.1:5432); a database is created and
 * dropped. BATON_BENCH_QUICK=1: fewer phases.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, createRemoteAgent, openStore, type RunStore } from '../src/index.js';
import { parseKeysEnv, RemoteAgents, startServer } from '../src/exports/server.js';
import { sseMessages } from '../src/server/client.js';

const QUICK = process.env['BATON_BENCH_QUICK'] === '1';
const SERVER = process.env['BATON_BENCH_PG'] ?? 'postgres://postgres@127.0.0.1:5432';

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: `${SERVER}/postgres` });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}
const OPS = 'bench-ops-key-0123456789abcdef';
const AGENT = 'bench-agent-key-0123456789abcd';

function fan(n: number): string {
  let s = 'openintent: "1.0"\ninfo: {name: fan}\nworkflow:\n';
  for (let i = 0; i < n; i++) s += `  p${i}: {assign: q, outputs: {i: number}}\n`;
  return s;
}

/** Starts the fan and waits for its end on its event stream; ms taken. */
async function runFan(url: string, n: number): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${OPS}`, 'content-type': 'application/json' }, body: JSON.stringify({ workflow: fan(n) }) });
  if (res.status !== 201) throw new Error(`POST /runs answered ${res.status}: ${await res.text()}`);
  const { run_id } = (await res.json()) as { run_id: string };
  const s = await fetch(`${url}/runs/${run_id}/events`, { headers: { authorization: `Bearer ${OPS}`, accept: 'text/event-stream' } });
  for await (const m of sseMessages(s.body!)) {
    if (m.event === 'end') {
      if (!m.data.includes('"completed"')) throw new Error(`run ${run_id} ended ${m.data}`);
      return performance.now() - t0;
    }
  }
  throw new Error(`the stream of ${run_id} ended without its end`);
}

const rows: string[][] = [['store', 'agents', 'phases', 'time', 'round trips per second', 'ms per phase']];
const row = (label: string, agents: string, n: number, ms: number): void => {
  rows.push([label, agents, n.toLocaleString(), `${ms.toFixed(0)} ms`, Math.round((n / ms) * 1000).toLocaleString(), (ms / n).toFixed(2)]);
};

async function remoteBench(label: string, store: RunStore, dir: string): Promise<void> {
  const remote = new RemoteAgents({ agents: ['q'] });
  const engine = createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent, concurrency: 64 });
  const server = await startServer({ engine, port: 0, keys: parseKeysEnv(`ops:operator:${OPS},q:agent:q:${AGENT}`), remote, cwd: dir, log: () => undefined, graceMs: 1000 });
  try {
    for (const [clients, n] of [[1, QUICK ? 100 : 400], [16, QUICK ? 400 : 2000]] as const) {
      const agents = Array.from({ length: clients }, () => createRemoteAgent({ url: server.url, key: AGENT, agent: 'q', waitS: 5, handler: (ctx) => ({ i: Number(ctx.phase.slice(1)) }) }));
      try {
        await runFan(server.url, 20); // warm-up
        row(label, `${clients} remote`, n, await runFan(server.url, n));
      } finally {
        await Promise.all(agents.map((a) => a.stop(0)));
      }
    }
  } finally {
    await server.close();
  }
}

async function localBench(label: string, store: RunStore, dir: string): Promise<void> {
  const engine = createEngine({ store, agents: { q: (ctx) => ({ i: Number(ctx.phase.slice(1)) }) }, concurrency: 16 });
  const server = await startServer({ engine, port: 0, keys: parseKeysEnv(`ops:operator:${OPS}`), cwd: dir, log: () => undefined, graceMs: 1000 });
  try {
    const n = QUICK ? 400 : 2000;
    await runFan(server.url, 20);
    row(label, 'in process (16 slots)', n, await runFan(server.url, n));
  } finally {
    await server.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'baton-remote-bench-'));
try {
  for (const [name, f] of [['remote', remoteBench], ['local', localBench]] as const) {
    const store = await openStore(join(dir, `${name}.db`), { cwd: dir });
    try {
      await f('sqlite FULL', store, dir);
    } finally {
      await store.close();
    }
  }
  const db = `baton_remote_bench_${randomBytes(3).toString('hex')}`;
  let pgOk = true;
  try {
    await admin(`CREATE DATABASE ${db}`);
  } catch (e) {
    pgOk = false;
    console.log(`PostgreSQL at ${SERVER} cannot be reached (${(e as Error).message}): its rows are left out`);
  }
  if (pgOk) {
    try {
      for (const f of [remoteBench, localBench]) {
        const store = await openStore(`${SERVER}/${db}`, { cwd: dir });
        try {
          await f('postgres', store, dir);
        } finally {
          await store.close();
        }
      }
    } finally {
      await admin(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) console.log(r.map((c, i) => (i >= 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  '));
console.log('\nA round trip: the server’s worker claims the phase and parks it; a remote agent claims it over HTTP, completes it, and is answered once the engine committed the outcome.');

/**
 * A CPU profile of `baton serve`'s remote path (not a bench: a probe for whoever optimises it). Starts a
 * server over SQLite FULL, forks 16 raw remote agents (remote-agents-proc.ts), runs a 2,000-phase fan
 * a few times to warm up, then profiles N more and prints the server's self time by function and by file.
 * Usage: npx tsx --import ./bench/dist-hooks.mjs bench/probe-remote-prof.ts [runs] [phases] [kind: raw|sdk|local]
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, openStore } from '../src/index.js';
import { parseKeysEnv, RemoteAgents, startServer } from '../src/exports/server.js';
import { sseMessages } from '../src/server/client.js';

const [runsText, phasesText, kindText] = process.argv.slice(2);
const RUNS = Number(runsText ?? 5);
const N = Number(phasesText ?? 2000);
const KIND = kindText ?? 'raw';
const OPS = 'bench-ops-key-0123456789abcdef';
const AGENT = 'bench-agent-key-0123456789abcd';
const fan = (n: number): string => {
  let s = 'openintent: "1.0"\ninfo: {name: fan}\nworkflow:\n';
  for (let i = 0; i < n; i++) s += `  p${i}: {assign: q, outputs: {i: number}}\n`;
  return s;
};
async function runFan(url: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${OPS}`, 'content-type': 'application/json' }, body: JSON.stringify({ workflow: fan(N) }) });
  const { run_id } = (await res.json()) as { run_id: string };
  const s = await fetch(`${url}/runs/${run_id}/events?type=run.completed,run.failed,run.cancelled`, { headers: { authorization: `Bearer ${OPS}`, accept: 'text/event-stream' } });
  for await (const m of sseMessages(s.body!)) if (m.event === 'end') return performance.now() - t0;
  throw new Error('no end');
}
const dir = mkdtempSync(join(tmpdir(), 'rprof-'));
const store = await openStore(`sqlite:${join(dir, 'b.db')}`);
const LOCAL = KIND === 'local';
// commits counted: the batching a path gets (each SQLite commit is one fsync)
const counts = { commitMany: 0, items: 0, transact: 0 };
const cm = store.commitMany!.bind(store);
store.commitMany = (items) => {
  counts.commitMany++;
  counts.items += items.length;
  return cm(items);
};
const tx = store.transact.bind(store);
store.transact = (...a) => {
  counts.transact++;
  return tx(...a);
};
const remote = new RemoteAgents({ agents: ['q'] });
const engine = LOCAL
  ? createEngine({ store, agents: { q: (ctx) => ({ i: Number(ctx.phase.slice(1)) }) }, concurrency: 16 })
  : createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent, concurrency: 64 });
const server = await startServer({ engine, port: 0, keys: parseKeysEnv(`ops:operator:${OPS},q:agent:q:${AGENT}`), ...(LOCAL ? {} : { remote }), cwd: dir, log: () => undefined, graceMs: 1000 });
const child = LOCAL ? undefined : fork(join(import.meta.dirname, 'remote-agents-proc.ts'), [KIND, server.url, AGENT, 'q', '16', '5'], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
if (child) await new Promise<void>((r) => child.on('message', (m: { type: string }) => m.type === 'ready' && r()));
for (let i = 0; i < 3; i++) await runFan(server.url);
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 50 });
await session.post('Profiler.start');
const c0 = process.cpuUsage();
counts.commitMany = counts.items = counts.transact = 0;
let ms = 0;
for (let i = 0; i < RUNS; i++) ms += await runFan(server.url);
const cpu = process.cpuUsage(c0);
const { profile } = await session.post('Profiler.stop');
writeFileSync('/tmp/me/remote.cpuprofile', JSON.stringify(profile));
console.log(`${RUNS} x ${N} phases: ${((RUNS * N) / ms * 1000).toFixed(0)}/s, server CPU ${(((cpu.user + cpu.system) / (RUNS * N))).toFixed(0)} µs/phase`);
const self = new Map<number, number>();
const dt = profile.timeDeltas ?? [];
(profile.samples ?? []).forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (dt[i] ?? 0)));
const byFn = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;
for (const n of profile.nodes) {
  const t = self.get(n.id) ?? 0;
  total += t;
  const f = n.callFrame;
  const file = f.url.replace(/^.*\/(node_modules\/[^/]+|dist\/[^?]*|src\/[^?]*)/, '$1') || '(native)';
  const k = `${f.functionName || '(anon)'} ${file}:${f.lineNumber + 1}`;
  byFn.set(k, (byFn.get(k) ?? 0) + t);
  byFile.set(file, (byFile.get(file) ?? 0) + t);
}
const per = (t: number): string => `${(t / (RUNS * N)).toFixed(1).padStart(6)} µs`;
console.log(`commits: ${counts.commitMany} commitMany (${counts.items} items), ${counts.transact} transact: ${((RUNS * N) / (counts.commitMany + counts.transact)).toFixed(1)} phases a commit`);
console.log(`profiled ${per(total)} a phase`);
for (const [k, t] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(per(t), k);
console.log('---');
for (const [k, t] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, 50)) console.log(per(t), k);
if (child) {
  child.send({ type: 'stop' });
  await new Promise((r) => child.on('message', (m: { type: string }) => m.type === 'stopped' && r(undefined)));
}
await server.close();
await store.close();
rmSync(dir, { recursive: true, force: true });

/**
 * A2A at both edges, over SQLite on loopback ports. Prints figures; never fails on a timing.
 * - Client edge: a fan of independent phases whose agent is `x-a2a` (an @a2a-js/sdk server,
 *   test/helpers/a2a-peer.ts), streaming and blocking sends, against the same fan with an in-process
 *   function agent: ms per phase and the ratio (what one A2A task per attempt costs).
 * - Server edge: `baton serve --a2a` (startServer) called by the SDK's client: blocking SendMessage of a
 *   one-phase workflow, one caller and 16 at once: runs per second and ms per run.
 * BATON_BENCH_QUICK=1: fewer phases and runs.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientFactory } from '@a2a-js/sdk/client';
import { Role, type Message } from '@a2a-js/sdk';
import { createEngine, openStore, WorkflowSpec } from '../src/index.js';
import { loadA2aServer, scanWorkflows, startServer } from '../src/exports/server.js';
import { startA2aPeer } from '../test/helpers/a2a-peer.js';

const QUICK = process.env['BATON_BENCH_QUICK'] === '1';
const PHASES = QUICK ? 50 : 300;
const RUNS = QUICK ? 40 : 200;

/** A fan of `n` independent phases of one agent, each reading the trigger's question. */
function fanText(n: number, agent: string, decl: string): string {
  let s = `openintent: "1.0"\ninfo: {name: fan}\nagents:\n  ${agent}: ${decl}\nx-trigger: {question: string}\nworkflow:\n`;
  for (let i = 0; i < n; i++) s += `  p${i}: {assign: ${agent}, inputs: {question: $trigger.question}, outputs: {answer: string}}\n`;
  return s;
}

const rows: string[][] = [['edge', 'case', 'items', 'time', 'per item', 'vs in-process']];
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-a2a-'));
try {
  // client edge
  const inproc = await (async () => {
    const store = await openStore(join(dir, 'inproc.db'), { cwd: dir });
    const engine = createEngine({ store, agents: { local: (ctx) => ({ answer: `${String(ctx.input['question'])}!` }) }, concurrency: 16 });
    const t0 = performance.now();
    const r = await engine.run(WorkflowSpec.fromString(fanText(PHASES, 'local', '{}')), { trigger: { question: 'q' } });
    const ms = performance.now() - t0;
    if (r.status !== 'completed') throw new Error(`in-process fan ${r.status}`);
    await engine.close();
    await store.close();
    return ms;
  })();
  rows.push(['client', 'in-process function agent', String(PHASES), `${inproc.toFixed(0)} ms`, `${(inproc / PHASES).toFixed(2)} ms`, '1.0x']);
  for (const streaming of [true, false]) {
    const peer = await startA2aPeer({ streaming });
    const store = await openStore(join(dir, `a2a-${streaming}.db`), { cwd: dir });
    const engine = createEngine({ store, concurrency: 16 });
    const t0 = performance.now();
    const r = await engine.run(WorkflowSpec.fromString(fanText(PHASES, 'peer', `{x-a2a: {url: "${peer.url}"}}`)), { trigger: { question: 'q' } });
    const ms = performance.now() - t0;
    if (r.status !== 'completed') throw new Error(`A2A fan ${r.status}`);
    rows.push(['client', `x-a2a agent, ${streaming ? 'SendStreamingMessage' : 'SendMessage (returnImmediately), GetTask polls'}`, String(PHASES), `${ms.toFixed(0)} ms`, `${(ms / PHASES).toFixed(2)} ms`, `${(ms / inproc).toFixed(1)}x`]);
    await engine.close();
    await store.close();
    await peer.close();
  }

  // server edge
  mkdirSync(join(dir, 'flows'));
  writeFileSync(join(dir, 'flows', 'one.yaml'), 'openintent: "1.0"\ninfo: {name: one}\nx-trigger: {n: number}\nworkflow:\n  a: {assign: x, inputs: {n: $trigger.n}, outputs: {n: number}}\n');
  const store = await openStore(join(dir, 'served.db'), { cwd: dir });
  const engine = createEngine({ store, agents: { x: (ctx) => ({ n: ctx.input['n'] as number }) }, concurrency: 32 });
  const server = await startServer({ engine, port: 0, workflows: scanWorkflows(join(dir, 'flows')), a2a: await loadA2aServer(), cwd: dir, log: () => undefined, graceMs: 100 });
  const client = await new ClientFactory().createFromUrl(server.url);
  const message = (n: number): Message => ({ messageId: `m${n}-${Math.random()}`, contextId: '', taskId: '', role: Role.ROLE_USER, parts: [{ content: { $case: 'data', value: { n } }, metadata: undefined, filename: '', mediaType: 'application/json' }], metadata: undefined, extensions: [], referenceTaskIds: [] });
  for (const callers of [1, 16]) {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: callers }, async () => {
        while (next < RUNS) {
          const i = next++;
          const t = await client.sendMessage({ tenant: '', message: message(i), configuration: undefined, metadata: undefined });
          if ('messageId' in t || t.status?.state !== 3) throw new Error(`run ${i} did not complete`);
        }
      }),
    );
    const ms = performance.now() - t0;
    rows.push(['server', `baton serve --a2a, blocking SendMessage, ${callers} caller${callers === 1 ? '' : 's'}`, String(RUNS), `${ms.toFixed(0)} ms`, `${(ms / RUNS).toFixed(2)} ms (${Math.round((RUNS / ms) * 1000)} runs/s)`, '']);
  }
  await server.close();
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i]!)).join('  '));
console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')} (the machine is shared: figures move with it)`);

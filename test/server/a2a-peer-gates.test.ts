/**
 * An `x-a2a` phase whose peer is another Baton (`startServer` with A2A, on a loopback port) that asks a
 * human: the peer's choices reach the local input gate, and an answer the peer refuses (its own check,
 * a schema here) asks the human again instead of failing the attempt. Real SQLite stores on both sides.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine, openStore, WorkflowSpec, type Engine, type RunEvent, type RunStore } from '@baton-run/baton';
import { loadA2aServer, scanWorkflows, startServer, type BatonServer } from '@baton-run/baton/server';

const PICK = `openintent: "1.0"
info: {name: pick}
workflow:
  q:
    assign: picker
    outputs: {answer: string}
`;
const COUNT = `openintent: "1.0"
info: {name: count}
workflow:
  q:
    assign: counter
    outputs: {answer: string}
`;
const local = (url: string, skill: string): string => `openintent: "1.0"
info: {name: via-${skill}}
agents:
  peer:
    x-a2a: {url: "${url}", skill: ${skill}}
workflow:
  ask:
    assign: peer
    outputs: {answer: string}
`;

let dir: string;
let peerStore: RunStore;
let peerEngine: Engine;
let server: BatonServer;
let store: RunStore;
let engine: Engine;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-a2a-peer-gates-'));
  mkdirSync(join(dir, 'flows'));
  writeFileSync(join(dir, 'flows', 'pick.yaml'), PICK);
  writeFileSync(join(dir, 'flows', 'count.yaml'), COUNT);
  peerStore = await openStore(join(dir, 'peer.db'), { cwd: dir });
  peerEngine = createEngine({
    store: peerStore,
    agents: {
      picker: async (ctx) => ({ answer: String(await ctx.requestInput({ question: 'which colour?', choices: ['red', 'blue'] })) }),
      counter: async (ctx) => ({ answer: String(await ctx.requestInput({ question: 'how many?', schema: { type: 'integer', minimum: 1 } })) }),
    },
  });
  server = await startServer({ engine: peerEngine, port: 0, keys: [], workflows: scanWorkflows(join(dir, 'flows')), a2a: await loadA2aServer(), cwd: dir, log: () => undefined, graceMs: 100 });
  store = await openStore(join(dir, 'local.db'), { cwd: dir });
  engine = createEngine({ store });
}, 60_000);

afterAll(async () => {
  await engine?.close();
  await store?.close();
  await server?.close();
  await peerStore?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function gatesOf(runId: string): Promise<Extract<RunEvent, { type: 'gate.opened' }>[]> {
  return (await store.events(runId)).filter((e): e is Extract<RunEvent, { type: 'gate.opened' }> => e.type === 'gate.opened');
}

async function nthGate(runId: string, n: number): Promise<Extract<RunEvent, { type: 'gate.opened' }>> {
  for (let i = 0; i < 400; i++) {
    const g = (await gatesOf(runId))[n];
    if (g) return g;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no gate ${n} in ${runId}`);
}

test("the peer's choices are the local gate's: an answer not among them is refused here, the gate stays open", async () => {
  const run = await engine.start(WorkflowSpec.fromString(local(server.url, 'pick')), {});
  const gate = await nthGate(run.id, 0);
  expect(gate).toMatchObject({ kind: 'input', question: 'which colour?', choices: ['red', 'blue'] });
  await expect(engine.respond(run.id, gate.gate_id, 'green', 'tester')).rejects.toMatchObject({ code: 'gate-refused' });
  await engine.respond(run.id, gate.gate_id, 'blue', 'tester');
  const result = await run.result();
  expect(result.status).toBe('completed');
  expect(result.phases['ask']!.output).toEqual({ answer: 'blue' });
});

test('an answer the peer refuses asks the human again, with its reason; the next answer completes the same A2A task', async () => {
  const run = await engine.start(WorkflowSpec.fromString(local(server.url, 'count')), {});
  const first = await nthGate(run.id, 0);
  expect(first).toMatchObject({ question: 'how many?' });
  await engine.respond(run.id, first.gate_id, 'lots', 'tester');
  const second = await nthGate(run.id, 1);
  expect(second.question).toMatch(/^how many\? \(the agent refused the answer: .+\)$/);
  expect(second.gate_id).not.toBe(first.gate_id);
  await engine.respond(run.id, second.gate_id, 3, 'tester');
  const result = await run.result();
  expect(result.status).toBe('completed');
  expect(result.phases['ask']!.output).toEqual({ answer: '3' });
  expect(result.phases['ask']!.attempts).toBe(1);
  const all = await store.events(run.id);
  expect(all.filter((e) => e.type === 'task.agent_event' && e.kind === 'a2a.answer_refused')).toHaveLength(1);
  // one A2A task on the peer, answered once refused and once accepted
  expect((await peerStore.runs({ limit: 100 })).filter((r) => r.workflowName === 'count')).toHaveLength(1);
});

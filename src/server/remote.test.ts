import { describe, expect, test, vi } from 'vitest';
import { createEngine } from '../api/engine.js';
import { MemoryStore } from '../store/memory.js';
import { parseWorkflow } from '../workflow/compile.js';
import { isRejection, RemoteAgents } from './remote.js';

const flow = (decl: string): string => `openintent: "1.0"
info: {name: t}
agents:
  r: ${decl}
workflow:
  a: {assign: r, outputs: {n: number}}
  b: {assign: q, depends_on: [a], outputs: {n: number}}
  c: {assign: z, depends_on: [a], outputs: {n: number}}
`;

describe('RemoteAgents', () => {
  test('serves the agents a workflow declares x-remote: true and those named with --remote that it uses', () => {
    const r = parseWorkflow(flow('{x-remote: true}'));
    expect(r.ok).toBe(true);
    expect(new RemoteAgents({ agents: ['q', 'unused'] }).remoteAgentsOf(r.model!).sort()).toEqual(['q', 'r']);
    expect(new RemoteAgents().remoteAgentsOf(parseWorkflow(flow('{x-remote: false}')).model!)).toEqual([]);
  });

  test('x-remote must be a boolean: a diagnostic at its path', () => {
    const r = parseWorkflow(flow('{x-remote: "yes"}'));
    expect(r.ok).toBe(false);
    expect(r.diagnostics.map((d) => [d.code, d.path])).toContainEqual(['wrong-type', ['agents', 'r', 'x-remote']]);
  });

  test('bindRun binds each remote agent to a handler; a claim with nothing queued and no wait is undefined', async () => {
    const hub = new RemoteAgents({ agents: ['q'] });
    const bound = await hub.bindRun({} as never, parseWorkflow(flow('{x-remote: true}')).model!);
    expect(Object.keys(bound).sort()).toEqual(['q', 'r']);
    expect(await hub.claim('q', () => true, 0)).toBeUndefined();
  });

  test("a step of the server's wall clock does not lose a remote agent's lease: liveness is measured on the monotonic clock", async () => {
    const hub = new RemoteAgents({ agents: ['r'], leaseMs: 400 });
    const engine = createEngine({ store: new MemoryStore(), bindRun: hub.bindRun, onEvent: hub.onEvent });
    const model = parseWorkflow('openintent: "1.0"\ninfo: {name: t}\nworkflow:\n  a: {assign: r, outputs: {n: number}}\n').model!;
    const run = engine.run(model, {});
    const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
    const got = await hub.claim('r', () => true, 5_000);
    const t = got && !isRejection(got) ? got : undefined;
    expect(t).toBeDefined();
    const wall = Date.now;
    try {
      await sleep(100);
      hub.beat(t!);
      // NTP, a VM resumed: the wall clock jumps an hour ahead; the agent goes on beating within its lease
      vi.spyOn(Date, 'now').mockImplementation(() => wall() + 3_600_000);
      await sleep(350); // past the first lease check (400 ms after the claim), 350 ms after the last beat
      expect(hub.task(t!.token)).toBeDefined();
      const until = hub.beat(t!);
      // the lease end told to the agent is in the (stepped) wall clock it reads, about a lease ahead
      expect(until - Date.now()).toBeGreaterThan(300);
      expect(until - Date.now()).toBeLessThanOrEqual(400);
    } finally {
      vi.restoreAllMocks();
    }
    hub.end(t!, 'completed', 'the remote agent completed it', true, { n: 1 });
    expect((await run).status).toBe('completed');
    await engine.close();
  });

  test('a claim-time rejection no claim waited for is kept for the next claim for a lease (monotonic), then dropped', async () => {
    const hub = new RemoteAgents({ leaseMs: 1_000 });
    const engine = createEngine({ store: new MemoryStore(), agents: { x: () => ({ n: 1 }) }, bindRun: hub.bindRun, onEvent: hub.onEvent });
    // b reads a.opt, which a leaves out: the engine rejects b's claim (UnresolvableInputError) and the run fails
    const model = parseWorkflow(`openintent: "1.0"
info: {name: t}
agents:
  r: {x-remote: true}
workflow:
  a: {assign: x, outputs: {n: number, opt: {type: string, required: false}}}
  b: {assign: r, depends_on: [a], inputs: {o: a.opt}, outputs: {m: string}}
`).model!;
    // performance.now() moved by hand: the hub measures how long a rejection waited on it
    let t = performance.now();
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => t);
    try {
      const kept = await engine.run(model, {});
      expect(kept.status).toBe('failed');
      t += 999;
      expect(await hub.claim('r', () => true, 0)).toMatchObject({ kind: 'rejection', runId: kept.runId, status: 422 });
      // told once
      expect(await hub.claim('r', () => true, 0)).toBeUndefined();
      const dropped = await engine.run(model, {});
      expect(dropped.status).toBe('failed');
      expect(hub.stats().rejections).toBe(1);
      t += 1_001;
      expect(await hub.claim('r', () => true, 0)).toBeUndefined();
      expect(hub.stats().rejections).toBe(0);
    } finally {
      clock.mockRestore();
      await engine.close();
    }
  });
});

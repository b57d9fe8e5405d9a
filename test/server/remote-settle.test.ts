/**
 * A remote agent's outcome must not be lost to a dropped connection. Through a loopback TCP proxy in
 * front of a real server, with a lease long enough (10 s) that waiting it out would show:
 * - a completion sent while the connection is refused is sent again once it is back, and lands: the task
 *   runs once, and the run ends long before the lease;
 * - a completion that landed but whose answer was lost (held by the proxy, then the connection reset) is
 *   sent again, answered 409 as completed (recorded as a late outcome, never applied), and the next
 *   task that answer carried (claimed under the completion's claim id) goes back to the queue at once
 *   instead of waiting out the lease of an agent that never saw it;
 * - a long-polled claim whose answer (a task) was lost is cancelled before the next claim, and the task
 *   goes back to the queue at once;
 * - `ctx.requestInput` rides out the same two: its question is asked once (a try whose answer was lost is
 *   followed by a poll of its index), and the answer comes back to the handler.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createRemoteAgent, type RunEvent, type RunStore } from '@baton-run/baton';
import type { BatonServer } from '@baton-run/baton/server';
import type { TcpProxy } from '../helpers/tcp-proxy.js';
import { api, proxiedRemoteServer, type ProxiedRemote } from './harness.js';

const OPS = 'settle-ops-key-0123456789abcd';
const AGENT = 'settle-agent-key-0123456789ab';
const LEASE_MS = 10_000;
const TWO = `openintent: "1.0"
info: {name: two}
workflow:
  p0: {assign: q, outputs: {i: number}}
  p1: {assign: q, depends_on: [p0], outputs: {i: number}}
`;

const dir = mkdtempSync(join(tmpdir(), 'baton-settle-'));
const KEYS = `ops:operator:${OPS},q:agent:q:${AGENT}`;
let setup: ProxiedRemote;
let store: RunStore;
let server: BatonServer;
let proxy: TcpProxy;

beforeAll(async () => {
  setup = await proxiedRemoteServer(dir, LEASE_MS, KEYS);
  ({ store, server, proxy } = setup);
});

afterAll(async () => {
  await setup?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Remote agent `q` through `port` (the proxy), with a handler; its errors go to `errors`. */
function agentVia(port: number, handler: Parameters<typeof createRemoteAgent>[0]['handler'], errors: string[] = []): ReturnType<typeof createRemoteAgent> {
  return createRemoteAgent({ url: `http://127.0.0.1:${port}`, key: AGENT, agent: 'q', waitS: 2, onError: (e) => errors.push(e.message), handler });
}

async function start(): Promise<string> {
  const r = await api(server.url, 'POST', '/runs', { key: OPS, body: { workflow: TWO } });
  expect(r.status).toBe(201);
  return r.body['run_id'] as string;
}

async function ended(runId: string, withinMs: number): Promise<{ status: string; ms: number; events: RunEvent[] }> {
  const t0 = performance.now();
  for (;;) {
    const run = await store.run(runId);
    if (run && ['completed', 'failed', 'cancelled'].includes(run.status)) return { status: run.status, ms: performance.now() - t0, events: await store.events(runId) };
    if (performance.now() - t0 > withinMs) return { status: run?.status ?? 'none', ms: performance.now() - t0, events: await store.events(runId) };
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The answers the proxy holds are lost with their connections (cut for 300 ms, then let through again). */
async function loseHeldAnswers(px: TcpProxy): Promise<void> {
  const cut = px.cut(300);
  px.releaseReplies();
  await cut;
}

const completions = (events: RunEvent[], phase: string): number => events.filter((e) => e.type === 'task.completed' && e.phase === phase).length;

test('a completion sent while the connection is refused goes again when it is back: the task runs once', async () => {
  const calls: string[] = [];
  const errors: string[] = [];
  let cut: Promise<void> | undefined;
  const agent = agentVia(
    proxy.port,
    (ctx) => {
      calls.push(ctx.phase);
      // the network drops every connection and refuses new ones for 800 ms, just as the agent answers
      if (ctx.phase === 'p0') cut = proxy.cut(800);
      return { i: calls.length };
    },
    errors,
  );
  try {
    const id = await start();
    const r = await ended(id, 8_000);
    expect(r.status).toBe('completed');
    expect(cut).toBeDefined();
    expect(calls).toEqual(['p0', 'p1']);
    expect(completions(r.events, 'p0')).toBe(1);
    expect(r.events.filter((e) => e.type === 'task.lease_expired')).toEqual([]);
    // the tries said so (the first was refused)
    expect(errors.length).toBeGreaterThan(0);
  } finally {
    await cut;
    await agent.stop(0);
  }
  expect(agent.completed).toBe(2);
}, 30_000);

test('a completion whose answer was lost after it landed: the next task it carried goes back at once, not after the lease', async () => {
  const calls: string[] = [];
  const errors: string[] = [];
  const agent = agentVia(
    proxy.port,
    (ctx) => {
      calls.push(ctx.phase);
      // the answer to this completion (with p1 in it) will not come back
      if (ctx.phase === 'p0') proxy.holdReplies();
      return { i: calls.length };
    },
    errors,
  );
  try {
    const id = await start();
    // p0's completion reached the server and was committed (p1 was handed to it in the answer)
    for (let i = 0; i < 400 && completions(await store.events(id), 'p0') === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(completions(await store.events(id), 'p0')).toBe(1);
    await new Promise((r) => setTimeout(r, 100));
    // the held answer is lost with its connection
    await loseHeldAnswers(proxy);
    const r = await ended(id, 8_000);
    expect(r.status).toBe('completed');
    // well under the 10 s lease that p1 would have waited out, held by an answer nobody read
    expect(r.ms).toBeLessThan(6_000);
    expect(calls).toEqual(['p0', 'p1']);
    expect(completions(r.events, 'p0')).toBe(1);
    expect(completions(r.events, 'p1')).toBe(1);
    // the second try of p0's completion was refused and recorded, never applied
    const stale = r.events.filter((e) => e.type === 'task.stale_outcome');
    expect(stale.map((e) => e.phase)).toEqual(['p0']);
    // the lost try was told to onError
    expect(errors.length).toBeGreaterThan(0);
  } finally {
    proxy.releaseReplies();
    await agent.stop(0);
  }
  expect(agent.completed).toBe(2);
}, 30_000);

test('a heartbeat that finds the attempt ended while its completion waits to be sent again: the completion goes once more and is found landed', async () => {
  // a lease of 3 s: beats every second, and the completion's tries (0.1, 0.3, 0.7, 1.5 s, then 3.1 s) are
  // all refused through a 1.6 s cut, so a beat gets through first and hears that the attempt ended
  const own = await proxiedRemoteServer(dir, 3_000, KEYS);
  const { store: s, server: srv, proxy: px } = own;
  const calls: string[] = [];
  const agent = agentVia(px.port, (ctx) => {
    calls.push(ctx.phase);
    if (ctx.phase === 'p0') px.holdReplies();
    return { i: calls.length };
  });
  try {
    const r0 = await api(srv.url, 'POST', '/runs', { key: OPS, body: { workflow: TWO } });
    const id = r0.body['run_id'] as string;
    for (let i = 0; i < 400 && completions(await s.events(id), 'p0') === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const cut = px.cut(1_600);
    px.releaseReplies();
    await cut;
    let events: RunEvent[] = [];
    for (let i = 0; i < 400; i++) {
      if ((await s.run(id))?.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    events = await s.events(id);
    expect((await s.run(id))?.status).toBe('completed');
    expect(calls).toEqual(['p0', 'p1']);
    // p1 went back to the queue when the lost answer's claim was cancelled, not by its lease running out
    expect(events.filter((e) => e.type === 'task.lease_expired')).toEqual([]);
  } finally {
    px.releaseReplies();
    await agent.stop(0);
    await own.close();
  }
  expect(agent.completed).toBe(2);
}, 30_000);

test('ctx.requestInput rides out a refused connection and a lost answer: the question is asked once, the answer comes back', async () => {
  const ONE = `openintent: "1.0"
info: {name: one}
workflow:
  p0: {assign: q, outputs: {i: number, colour: string}}
`;
  const answers: unknown[] = [];
  let round = 0;
  const agent = agentVia(proxy.port, async (ctx) => {
    round++;
    // run 1: the connection is refused as the question goes; run 2: the question lands and its answer is lost
    if (round === 1) void proxy.cut(800);
    else proxy.holdReplies();
    const colour = await ctx.requestInput({ question: 'colour?' });
    answers.push(colour);
    return { i: round, colour: typeof colour === 'string' ? colour : JSON.stringify(colour) };
  });
  try {
    for (const lost of [false, true]) {
      const r0 = await api(server.url, 'POST', '/runs', { key: OPS, body: { workflow: ONE } });
      const id = r0.body['run_id'] as string;
      const opened = async (): Promise<RunEvent[]> => (await store.events(id)).filter((e) => e.type === 'gate.opened');
      for (let i = 0; i < 500 && (await opened()).length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(await opened()).toHaveLength(1);
      if (lost) {
        // the question reached the server (its gate is open) and the answer to it is lost with its connection
        await loseHeldAnswers(proxy);
      }
      const gate = (await opened())[0] as RunEvent & { gate_id: string };
      expect((await api(server.url, 'POST', `/runs/${id}/gates/${gate.gate_id}/respond`, { key: OPS, body: { value: lost ? 'green' : 'blue' } })).status).toBe(200);
      const r = await ended(id, 10_000);
      expect(r.status).toBe('completed');
      // one question: the lost answer's try was followed by a poll of its index, not a second question
      expect(r.events.filter((e) => e.type === 'gate.opened')).toHaveLength(1);
    }
    expect(answers).toEqual(['blue', 'green']);
  } finally {
    proxy.releaseReplies();
    proxy.heal();
    await agent.stop(0);
  }
}, 30_000);

test('a claim whose answer (a task) was lost: the claim is cancelled before the next, and the task goes back at once, not after the lease', async () => {
  const ONE = `openintent: "1.0"
info: {name: one}
workflow:
  p0: {assign: q, outputs: {i: number}}
`;
  const calls: string[] = [];
  const errors: string[] = [];
  // the agent's long poll is waiting (no task yet) when its answers start being held
  const agent = agentVia(
    proxy.port,
    (ctx) => {
      calls.push(ctx.phase);
      return { i: calls.length };
    },
    errors,
  );
  try {
    await new Promise((r) => setTimeout(r, 300));
    proxy.holdReplies();
    const r0 = await api(server.url, 'POST', '/runs', { key: OPS, body: { workflow: ONE } });
    const id = r0.body['run_id'] as string;
    // the server handed p0 to the waiting poll (claimed), and the answer with it is held, then lost
    for (let i = 0; i < 500 && !(await store.events(id)).some((e) => e.type === 'task.claimed'); i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    await loseHeldAnswers(proxy);
    const r = await ended(id, 8_000);
    expect(r.status).toBe('completed');
    // well under the 10 s lease the handed task would have waited out
    expect(r.ms).toBeLessThan(6_000);
    expect(calls).toEqual(['p0']);
    expect(errors.length).toBeGreaterThan(0);
  } finally {
    proxy.releaseReplies();
    await agent.stop(0);
  }
}, 30_000);

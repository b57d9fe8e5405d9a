/**
 * Clients of the server cut off from it without a reset (a partition: the connection stays open and
 * nothing comes back), through a loopback TCP proxy in front of a real server. A remote agent's
 * heartbeats must not wait for ever: after a lease without one getting through, the handler's signal
 * aborts, so it stops before the server hands the task to another agent. An event stream
 * (ServerClient.events, what `baton run --server` follows) must leave a dead connection and resume on a
 * new one, every event once; and a request (ServerClient.request) must fail after its timeout, as a lost
 * answer the CLI sends again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createRemoteAgent } from '@baton-run/baton';
import { ServerClient, type BatonServer } from '@baton-run/baton/server';
import { transportFailure } from '../../src/server/client.js';
import type { TcpProxy } from '../helpers/tcp-proxy.js';
import { api, proxiedRemoteServer, type ProxiedRemote } from './harness.js';

const OPS = 'partition-ops-key-0123456789ab';
const AGENT = 'partition-agent-key-0123456789';
const LEASE_MS = 1500;
const ONE = `openintent: "1.0"
info: {name: one}
workflow:
  p: {assign: q, outputs: {i: number}}
`;

const dir = mkdtempSync(join(tmpdir(), 'baton-partition-'));
let setup: ProxiedRemote;
let server: BatonServer;
let proxy: TcpProxy;

beforeAll(async () => {
  setup = await proxiedRemoteServer(dir, LEASE_MS, `ops:operator:${OPS},q:agent:q:${AGENT}`);
  ({ server, proxy } = setup);
});

afterAll(async () => {
  await setup?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('heartbeats that get no answer abort the handler after a lease, instead of hanging', async () => {
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  let outcome: { aborted: boolean; afterMs: number } | undefined;
  let pausedAt = 0;
  const errors: string[] = [];
  const agent = createRemoteAgent({
    url: `http://127.0.0.1:${proxy.port}`,
    key: AGENT,
    agent: 'q',
    waitS: 2,
    onError: (e) => errors.push(e.message),
    handler: async (ctx) => {
      started();
      // works until its signal says stop, or gives up after 15 s (then the test fails)
      const aborted = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 15_000);
        ctx.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      outcome = { aborted, afterMs: performance.now() - pausedAt };
      return { i: 1 };
    },
  });
  try {
    expect((await api(server.url, 'POST', '/runs', { key: OPS, body: { workflow: ONE } })).status).toBe(201);
    await running;
    // the network stalls: connections stay open, no byte goes through
    proxy.pause();
    pausedAt = performance.now();
    for (let i = 0; i < 200 && outcome === undefined; i++) await new Promise((r) => setTimeout(r, 100));
    expect(outcome, 'the handler ended').toBeDefined();
    expect(outcome!.aborted, 'the handler was aborted, not left to run on').toBe(true);
    // a beat waits a lease for its answer, and the task is lost once none got through for a lease: at most
    // a third of a lease (the next beat) and a lease after the stall. (Without the beat's own timeout only
    // the server's keep-alive timeout, 5 s, ended the stalled connection here; on a real partition, nothing.)
    expect(outcome!.afterMs).toBeLessThan(2 * LEASE_MS + 500);
    expect(errors.length).toBeGreaterThan(0);
  } finally {
    proxy.resume();
    await agent.stop(0);
  }
}, 30_000);

test('an event stream whose connection goes dead is left after idleMs and resumed on a new one: every event once, then the end', async () => {
  const TWO = `openintent: "1.0"
info: {name: two}
workflow:
  a: {assign: q, outputs: {i: number}}
  b: {assign: q, depends_on: [a], outputs: {i: number}}
`;
  const start = await api(server.url, 'POST', '/runs', { key: OPS, body: { workflow: TWO } });
  expect(start.status).toBe(201);
  const runId = start.body['run_id'] as string;
  const client = new ServerClient({ url: `http://127.0.0.1:${proxy.port}`, key: OPS, idleMs: 500 });
  const seen: { seq: number; type: string }[] = [];
  let done = false;
  const following = (async () => {
    for await (const e of client.events(runId)) seen.push({ seq: e.seq, type: e.type });
    done = true;
  })();
  for (let i = 0; i < 100 && !seen.some((e) => e.type === 'task.claimed'); i++) await new Promise((r) => setTimeout(r, 50));
  expect(seen.some((e) => e.type === 'task.claimed'), 'the stream got the first claim').toBe(true);
  // the stream's connection dies silently; the run goes on (both phases done straight on the server)
  proxy.blackhole();
  // (the task of the test before, handed back when its agent stopped, may come first: it is done too)
  const ours: string[] = [];
  for (let i = 0; i < 5 && ours.length < 2; i++) {
    const c = await api(server.url, 'POST', '/agents/q/claim?wait=5', { key: AGENT });
    expect(c.status).toBe(200);
    if (c.body['run_id'] === runId) ours.push(c.body['phase'] as string);
    expect((await api(server.url, 'POST', `/tasks/${c.body['token'] as string}/complete`, { key: AGENT, body: { output: { i: 1 } } })).status).toBe(200);
  }
  expect(ours).toEqual(['a', 'b']);
  for (let i = 0; i < 100 && !done; i++) await new Promise((r) => setTimeout(r, 50));
  expect(done, 'the stream reached the run’s end').toBe(true);
  await following;
  const seqs = seen.map((e) => e.seq);
  expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
  expect(new Set(seqs).size).toBe(seqs.length);
  expect(seen.filter((e) => e.type === 'task.completed')).toHaveLength(2);
  expect(seen[seen.length - 1]!.type).toBe('run.completed');
}, 30_000);

test('a request to a server that accepts and never answers (cut off without a reset) fails after timeoutMs, as a lost answer (which the CLI sends again)', async () => {
  const silent = createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  try {
    const quiet = new ServerClient({ url: `http://127.0.0.1:${(silent.address() as { port: number }).port}`, timeoutMs: 400 });
    const t1 = performance.now();
    const e = await quiet.request('POST', '/runs', { workflow: 'x' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e, 'the request failed').toBeDefined();
    expect(transportFailure(e)).toBe('lost');
    expect(performance.now() - t1).toBeLessThan(2_500);
  } finally {
    silent.closeAllConnections();
    silent.close();
  }
}, 30_000);

/**
 * A remote agent cut off from its server without a reset (a partition: the connection stays open and
 * nothing comes back). Its heartbeats must not wait for ever: after a lease without one getting through,
 * the handler's signal aborts, so it stops before the server hands the task to another agent. A loopback
 * TCP proxy between the agent and a real server stalls the bytes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine, createRemoteAgent, openStore, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, RemoteAgents, startServer, type BatonServer } from '@baton-run/baton/server';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { api } from './harness.js';

const OPS = 'partition-ops-key-0123456789ab';
const AGENT = 'partition-agent-key-0123456789';
const LEASE_MS = 1500;
const ONE = `openintent: "1.0"
info: {name: one}
workflow:
  p: {assign: q, outputs: {i: number}}
`;

const dir = mkdtempSync(join(tmpdir(), 'baton-partition-'));
let store: RunStore;
let server: BatonServer;
let proxy: TcpProxy;

beforeAll(async () => {
  store = await openStore('memory', { cwd: dir });
  const remote = new RemoteAgents({ agents: ['q'], leaseMs: LEASE_MS });
  const engine = createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent });
  server = await startServer({ engine, port: 0, keys: parseKeysEnv(`ops:operator:${OPS},q:agent:q:${AGENT}`), remote, log: () => undefined, graceMs: 100 });
  proxy = await startTcpProxy({ host: '127.0.0.1', port: server.port });
});

afterAll(async () => {
  proxy?.resume();
  await proxy?.close();
  await server?.close();
  await store?.close();
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

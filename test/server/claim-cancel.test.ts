/**
 * A remote agent that stops cancels its long poll by the claim id it sent
 * (`POST /agents/{agent}/claims/{claim}/cancel`): a poll still waiting ends with 204, a later claim with
 * that id gets nothing, and a task handed to the claim whose token never came back goes back to the queue
 * at once, the same attempt under a new token (the old one is refused), instead of waiting out a lease
 * held by nobody. A real server on a loopback port, the memory and SQLite stores.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine, createRemoteAgent, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, RemoteAgents, startServer, type BatonServer } from '@baton-run/baton/server';
import { KEYS, KEYS_ENV, api, openTestStore } from './harness.js';

const QKEY = 'remote-q-key-0123456789abcdef';
const OTHER = 'remote-o-key-0123456789abcdef';
// a long lease: a task left with a dead claim would wait this long, far past the test's own timeouts
const LEASE_MS = 60_000;
const ONE = 'openintent: "1.0"\ninfo: {name: one}\nworkflow:\n  p: {assign: q, outputs: {i: number}}\n';

describe.each(['memory', 'sqlite'] as const)('claim ids and their cancel (%s)', (kind) => {
  let server: BatonServer;
  let remote: RemoteAgents;
  let store: RunStore;
  let dir: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-claim-cancel-'));
    ({ store, drop } = await openTestStore(kind, dir));
    remote = new RemoteAgents({ agents: ['q'], leaseMs: LEASE_MS });
    const engine = createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent, concurrency: 8 });
    server = await startServer({ engine, port: 0, keys: parseKeysEnv(`${KEYS_ENV},qk:agent:q:${QKEY},ok:agent:o:${OTHER}`), remote, cwd: dir, log: () => undefined, graceMs: 100 });
  });
  afterAll(async () => {
    await server.close();
    await store.close();
    await drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const claim = (claimId: string | undefined, wait = 5, key = QKEY) => api(server.url, 'POST', `/agents/q/claim?wait=${wait}`, { key, body: claimId === undefined ? {} : { claim_id: claimId } });
  const cancel = (claimId: string, key = QKEY) => api(server.url, 'POST', `/agents/q/claims/${claimId}/cancel`, { key, body: {} });
  const start = async (): Promise<string> => {
    const r = await api(server.url, 'POST', '/runs', { key: KEYS.operator, body: { workflow: ONE } });
    expect(r.status).toBe(201);
    return r.body['run_id'] as string;
  };
  const until = async (f: () => boolean): Promise<void> => {
    for (let i = 0; i < 500 && !f(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(f()).toBe(true);
  };

  test('a waiting poll ends with 204 when cancelled, and a later claim with its id gets nothing', async () => {
    const t0 = Date.now();
    const waiting = claim('poll-aaaaaaaa', 20);
    await until(() => remote.stats().waitingClaims === 1);
    expect((await cancel('poll-aaaaaaaa')).body).toEqual({ requeued: false });
    expect((await waiting).status).toBe(204);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await claim('poll-aaaaaaaa', 20)).status).toBe(204);
    expect(remote.stats().waitingClaims).toBe(0);
  });

  test('a task handed to a claim whose agent never used it goes back to the queue at once: the same attempt, a new token', async () => {
    const runId = await start();
    const first = await claim('lost-bbbbbbbb');
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ run_id: runId, phase: 'p', attempt: 1 });
    const oldToken = first.body['token'] as string;
    // another agent's key cannot cancel it (403), nor does its cancel of the same id touch this agent's claim
    expect((await api(server.url, 'POST', '/agents/q/claims/lost-bbbbbbbb/cancel', { key: OTHER, body: {} })).status).toBe(403);
    expect((await cancel('lost-bbbbbbbb')).body).toEqual({ requeued: true });
    const again = await claim('next-cccccccc');
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ run_id: runId, phase: 'p', attempt: 1 });
    expect(again.body['token']).not.toBe(oldToken);
    // the old token is refused: it never completes the task the new one holds
    const late = await api(server.url, 'POST', `/tasks/${oldToken}/complete`, { key: QKEY, body: { output: { i: 0 } } });
    expect(late.status).toBe(409);
    const done = await api(server.url, 'POST', `/tasks/${again.body['token'] as string}/complete`, { key: QKEY, body: { output: { i: 1 } } });
    expect(done.status).toBe(200);
    const completed = (await store.events(runId)).filter((e) => e.type === 'task.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]).toMatchObject({ phase: 'p', attempt: 1, output: { i: 1 } });
  });

  test('a token presented by a key of another agent (403) is not its use: the claim’s cancel still puts the task back', async () => {
    const runId = await start();
    const c = await claim('peek-eeeeeeee');
    expect(c.status).toBe(200);
    const token = c.body['token'] as string;
    expect((await api(server.url, 'POST', `/tasks/${token}/heartbeat`, { key: OTHER, body: {} })).status).toBe(403);
    expect((await cancel('peek-eeeeeeee')).body).toEqual({ requeued: true });
    const again = await claim('peek-ffffffff');
    expect(again.body).toMatchObject({ run_id: runId, phase: 'p', attempt: 1 });
    expect((await api(server.url, 'POST', `/tasks/${again.body['token'] as string}/complete`, { key: QKEY, body: { output: { i: 3 } } })).status).toBe(200);
  });

  test('a task whose token came back is not taken back by a cancel', async () => {
    const runId = await start();
    const c = await claim('used-dddddddd');
    expect(c.status).toBe(200);
    const token = c.body['token'] as string;
    expect((await api(server.url, 'POST', `/tasks/${token}/heartbeat`, { key: QKEY, body: {} })).status).toBe(200);
    expect((await cancel('used-dddddddd')).body).toEqual({ requeued: false });
    expect((await api(server.url, 'POST', `/tasks/${token}/complete`, { key: QKEY, body: { output: { i: 2 } } })).status).toBe(200);
    expect((await store.events(runId)).filter((e) => e.type === 'task.completed')).toHaveLength(1);
  });

  test('createRemoteAgent: stop() during a long poll leaves no claim behind; the next task goes at once to whoever claims next', async () => {
    for (let k = 0; k < 5; k++) {
      const agent = createRemoteAgent({ url: server.url, key: QKEY, agent: 'q', waitS: 20, handler: () => ({ i: 3 }) });
      await until(() => remote.stats().waitingClaims === 1);
      await agent.stop(0);
      expect(remote.stats().waitingClaims).toBe(0);
      const runId = await start();
      const c = await claim(undefined, 5);
      expect(c.status).toBe(200);
      expect(c.body).toMatchObject({ run_id: runId, attempt: 1 });
      expect((await api(server.url, 'POST', `/tasks/${c.body['token'] as string}/complete`, { key: QKEY, body: { output: { i: 4 } } })).status).toBe(200);
    }
  });

  test('the server keeps a claim id only until its task is used or ends: 50 tasks done through claim ids leave none', async () => {
    const agent = createRemoteAgent({ url: server.url, key: QKEY, agent: 'q', waitS: 20, concurrency: 4, handler: () => ({ i: 5 }) });
    try {
      const runs = await Promise.all(Array.from({ length: 50 }, () => start()));
      await until(() => runs.every((id) => remote.stats().live === 0 && id !== ''));
      for (const id of runs) {
        for (let i = 0; i < 500 && !(await store.events(id)).some((e) => e.type === 'run.completed'); i++) await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      await agent.stop(0);
    }
    expect(remote.stats()).toMatchObject({ live: 0, waitingClaims: 0, handedClaims: 0 });
  });

  test('a claim id that is not one is a 400', async () => {
    expect((await claim('no')).status).toBe(400);
    expect((await claim('has spaces in it')).status).toBe(400);
  });
});

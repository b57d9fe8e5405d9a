/**
 * Issue 17: "A completion under a lost lease or an old token is refused (409) and recorded." A token
 * from before a server restart used to be refused and only logged: the new server knew nothing of it.
 * Tokens now name their attempt under a MAC keyed by the server's keys, so the same keys after a
 * restart record the late outcome on its run (`task.stale_outcome`), never applying it; a token the
 * server could not have made (other keys, a changed payload) is refused and recorded nowhere.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { createEngine, openStore, type RunEvent, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, RemoteAgents, startServer, type BatonServer } from '@baton-run/baton/server';
import { api } from './harness.js';

const OPS = 'restart-ops-key-0123456789abc';
const AGENT = 'restart-agent-key-0123456789a';
const KEYS = `ops:operator:${OPS},q:agent:q:${AGENT}`;
const ONE = `openintent: "1.0"
info: {name: one}
workflow:
  p: {assign: q, outputs: {i: number}}
`;

const dir = mkdtempSync(join(tmpdir(), 'baton-restart-token-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A server over the SQLite file of `dir` (one life of it). */
async function life(keys: string): Promise<{ server: BatonServer; store: RunStore; close: () => Promise<void> }> {
  const store = await openStore(join(dir, 'store.db'), { cwd: dir });
  const remote = new RemoteAgents({ agents: ['q'], leaseMs: 60_000 });
  const engine = createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent });
  const server = await startServer({ engine, port: 0, keys: parseKeysEnv(keys), remote, log: () => undefined, graceMs: 100 });
  return { server, store, close: async () => (await server.close(), await store.close()) };
}

const stale = (events: RunEvent[]): RunEvent[] => events.filter((e) => e.type === 'task.stale_outcome');

async function until(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a completion with a token from before a restart is refused (409) and recorded on its run; one the server did not make is not', async () => {
  const first = await life(KEYS);
  const started = await api(first.server.url, 'POST', '/runs', { key: OPS, body: { workflow: ONE } });
  expect(started.status).toBe(201);
  const runId = started.body['run_id'] as string;
  const claimed = await api(first.server.url, 'POST', '/agents/q/claim?wait=10', { key: AGENT, body: {} });
  expect(claimed.status).toBe(200);
  const token = claimed.body['token'] as string;
  await first.close();

  const second = await life(KEYS);
  try {
    // made up from the real one: another attempt named under the same MAC, and the same attempt under another MAC
    const [random, named, mac] = token.slice(3).split('.') as [string, string, string];
    const otherAttempt = Buffer.from(JSON.stringify([runId, 'p', 7, 'q'])).toString('base64url');
    for (const forged of [`rt_${random}.${otherAttempt}.${mac}`, `rt_${random}.${named}.${'A'.repeat(22)}`]) {
      const r = await api(second.server.url, 'POST', `/tasks/${forged}/complete`, { key: AGENT, body: { output: { i: 1 } } });
      expect(r.status).toBe(409);
      expect(r.body['error']).toMatchObject({ code: 'unknown-token' });
    }
    const late = await api(second.server.url, 'POST', `/tasks/${token}/complete`, { key: AGENT, body: { output: { i: 1 } } });
    expect(late.status).toBe(409);
    expect(late.body['error']).toMatchObject({ code: 'unknown-token', stop: true });
    expect((late.body['error'] as { message: string }).message).toMatch(/attempt 1 of p .*the outcome is recorded, not applied/);
    await until(async () => stale(await second.store.events(runId)).length > 0);
    expect(stale(await second.store.events(runId))).toEqual([expect.objectContaining({ phase: 'p', attempt: 1, outcome: 'completed', worker: 'remote agent q' })]);
    // the run goes on: attempt 2 is claimed and completed under a token of the new server
    const again = await api(second.server.url, 'POST', '/agents/q/claim?wait=10', { key: AGENT, body: {} });
    expect(again.status).toBe(200);
    expect(again.body['attempt']).toBe(2);
    expect((await api(second.server.url, 'POST', `/tasks/${again.body['token'] as string}/complete`, { key: AGENT, body: { output: { i: 2 } } })).status).toBe(200);
    await until(async () => (await second.store.run(runId))?.status === 'completed');
    const events = await second.store.events(runId);
    expect(events.filter((e) => e.type === 'task.completed').map((e) => (e as { attempt: number }).attempt)).toEqual([2]);
    expect(stale(events)).toHaveLength(1);
  } finally {
    await second.close();
  }

  // a server with other keys cannot read the old token: refused, recorded nowhere
  const third = await life(`${KEYS},extra:reader:restart-extra-key-0123456789`);
  try {
    const r = await api(third.server.url, 'POST', `/tasks/${token}/complete`, { key: AGENT, body: { output: { i: 3 } } });
    expect(r.status).toBe(409);
    expect((r.body['error'] as { message: string }).message).toMatch(/knows no task with this token/);
    await new Promise((res) => setTimeout(res, 200));
    expect(stale(await third.store.events(runId))).toHaveLength(1);
  } finally {
    await third.close();
  }
}, 60_000);

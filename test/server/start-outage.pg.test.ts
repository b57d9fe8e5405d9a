/**
 * `POST /runs` while the server's PostgreSQL is away (a real server on a loopback port, its database
 * behind a TCP proxy that refuses connections). A start is answered 503 within the bound of any other
 * route, with or without a `run_id`, and the 503 names the id the start was tried under: sent again with
 * it once the store is back, the start creates its run then (201), so nothing was created behind the
 * caller's back. Before, a start without a `run_id` rode out the outage inside the request (no answer
 * for minutes) and every such start created its run when the store came back, after its client had
 * given up.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine, openStore, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, scanWorkflows, startServer, type BatonServer } from '@baton-run/baton/server';
import { testDatabase } from '../helpers/pg.js';
import { until } from '../helpers/spawn.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { agents, api, CHAIN, KEYS, KEYS_ENV, Latch } from './harness.js';

const db = testDatabase('baton_start_outage');
const dir = mkdtempSync(join(tmpdir(), 'baton-start-outage-'));
const latch = new Latch();
let proxy: TcpProxy;
let store: RunStore;
let changes: RunStore;
let server: BatonServer;

beforeAll(async () => {
  await db.create();
  const u = new URL(db.url);
  proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
  const url = proxy.rewrite(db.url);
  writeFileSync(join(dir, 'chain.yaml'), CHAIN);
  store = await openStore(url, { cwd: dir });
  changes = await openStore(url, { cwd: dir });
  const engine = createEngine({ store, agents: agents(latch), concurrency: 8, leaseMs: 10_000 });
  server = await startServer({ engine, port: 0, keys: parseKeysEnv(KEYS_ENV), workflows: scanWorkflows(dir), changes, cwd: dir, log: () => undefined, graceMs: 100 });
}, 60_000);

afterAll(async () => {
  latch.release();
  proxy?.heal();
  await server?.close();
  await changes?.close();
  await store?.close();
  await proxy?.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** A start, given up by the client after `ms` (a start that is never answered fails the test here, not by its timeout). */
async function start(body: Record<string, unknown>, ms = 15_000): Promise<{ status: number; body: Record<string, unknown>; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(`${server.url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.operator}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(ms) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, ms: performance.now() - t0 };
}

test('a start while the store is away is answered 503 at once, names its run id, and is not created later: sent again with that id it creates the run then', async () => {
  const ok = await start({ workflow_name: 'chain' });
  expect(ok.status).toBe(201);
  const before = (await store.runs({ limit: 100 })).length;
  const cut = proxy.cut(60_000);
  try {
    // a read answers 503 within the store's own bound (its connect timeout): so must a start, with or without a run id
    const read = await api(server.url, 'GET', '/runs', { key: KEYS.reader });
    expect(read.status).toBe(503);
    const refused = await Promise.all([start({ workflow_name: 'chain' }), start({ workflow_name: 'chain', trigger: { n: 2 } }), start({ workflow_name: 'chain', run_id: 'chosen-1' })]);
    for (const r of refused) {
      expect(r.status, JSON.stringify(r.body)).toBe(503);
      expect(r.body['error']).toMatchObject({ code: 'store-unreachable' });
      expect(r.ms).toBeLessThan(10_000);
    }
    const ids = refused.map((r) => (r.body['error'] as { run_id: string }).run_id);
    expect(ids[2]).toBe('chosen-1');
    expect(new Set(ids).size).toBe(3);
    proxy.heal();
    await cut;
    await until(async () => (await api(server.url, 'GET', '/runs', { key: KEYS.reader })).status === 200, 15_000);
    // the same starts again, each under the id its 503 named: each is created now (201), none had been (200)
    const again = await Promise.all([start({ workflow_name: 'chain', run_id: ids[0] }), start({ workflow_name: 'chain', trigger: { n: 2 }, run_id: ids[1] }), start({ workflow_name: 'chain', run_id: 'chosen-1' })]);
    expect(again.map((r) => r.status)).toEqual([201, 201, 201]);
    expect((await store.runs({ limit: 100 })).length).toBe(before + 3);
  } finally {
    proxy.heal();
    await cut;
  }
}, 90_000);

/**
 * The server while its PostgreSQL is away (a real server on a loopback port, its database behind a TCP
 * proxy that refuses connections).
 * - `POST /runs` is answered 503 within the bound of any other route, with or without a `run_id`, and the
 *   503 names the id the start was tried under: sent again with it once the store is back, the start
 *   creates its run then (201), so nothing was created behind the caller's back. Before, a start without
 *   a `run_id` rode out the outage inside the request (no answer for minutes) and every such start
 *   created its run when the store came back, after its client had given up.
 * - The event streams end with one `error` event whose data is JSON (before: a second one, plain text).
 * - `/health` without a key says the store does not answer, not where it is (its URL: user, host, port,
 *   database); a reader key sees the store's own message.
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
import { agents, api, CHAIN, KEYS, KEYS_ENV, Latch, SLOW } from './harness.js';
import { sseMessages, type SseMessage } from '../../src/server/client.js';
import { readStream } from './sse.js';

const db = testDatabase('baton_store_away');
const dir = mkdtempSync(join(tmpdir(), 'baton-store-away-'));
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

test('the event streams end with one error event, its data JSON (the run stream mid-way, the all-runs stream at its start)', async () => {
  // a run stream open before the cut: the stream's next read fails
  const started = await start({ workflow: SLOW });
  expect(started.status).toBe(201);
  const id = started.body['run_id'] as string;
  await until(() => latch.running === 3, 15_000);
  const res = await fetch(`${server.url}/runs/${id}/events`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${KEYS.reader}` }, signal: AbortSignal.timeout(30_000) });
  const messages = sseMessages(res.body!);
  // the stream is under way (its first event read) when the store goes
  expect((await messages.next()).value).toMatchObject({ event: 'run.started' });
  const cut = proxy.cut(60_000);
  try {
    const all = await readStream(`${server.url}/events`, { key: KEYS.reader, timeoutMs: 15_000 });
    expect(all.status).toBe(200);
    const errors = all.messages.filter((m) => m.event === 'error');
    expect(errors).toHaveLength(1);
    expect(JSON.parse(errors[0]!.data)).toMatchObject({ error: { code: 'store-unreachable' } });
    const rest: SseMessage[] = [];
    for await (const m of messages) rest.push(m);
    const runErrors = rest.filter((m) => m.event === 'error');
    expect(runErrors).toHaveLength(1);
    expect(JSON.parse(runErrors[0]!.data)).toMatchObject({ error: { code: 'store-unreachable' } });
  } finally {
    proxy.heal();
    await cut;
    latch.release();
  }
}, 90_000);

test('/health while the store is away: without a reader key, 503 and no more (not the store\'s URL); a reader key sees the store\'s message', async () => {
  const cut = proxy.cut(60_000);
  try {
    const name = new URL(db.url).pathname.slice(1);
    for (const key of [undefined, KEYS.agent, 'not-a-key-0123456789']) {
      const open = await api(server.url, 'GET', '/health', key !== undefined ? { key } : {});
      expect(open.status).toBe(503);
      expect(open.body['error']).toMatchObject({ code: 'store-unreachable' });
      const text = JSON.stringify(open.body);
      for (const secret of [name, String(proxy.port), 'postgres://', '127.0.0.1']) expect(text).not.toContain(secret);
    }
    const reader = await api(server.url, 'GET', '/health', { key: KEYS.reader });
    expect(reader.status).toBe(503);
    expect(JSON.stringify(reader.body)).toContain(name);
  } finally {
    proxy.heal();
    await cut;
  }
  expect(await api(server.url, 'GET', '/health')).toMatchObject({ status: 200, body: { ok: true, store: 'postgres' } });
}, 60_000);

/**
 * The all-runs stream (`GET /events`, for dashboards) sends a run's row each time it moves, however old
 * the run: a gated run started before 520 newer ones is sent at connect (a run under way), and again with
 * its new status when it is approved while the stream is open. Before, each read took the newest 500 runs
 * only, so an old run was never sent, at connect or when it moved. On memory, SQLite and PostgreSQL (whose server store object names the runs that changed),
 * through the app without a socket (`createServerApp`, requests in memory) over a real store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { createEngine, type Engine } from '../../src/api/engine.js';
import { WorkflowSpec } from '../../src/api/spec.js';
import type { RunStore } from '../../src/engine/ports.js';
import { createServerApp } from '../../src/server/app.js';
import { sseMessages } from '../../src/server/client.js';
import { parseKeysEnv } from '../../src/server/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { openStore } from '../../src/api/store.js';
import { testDatabase } from '../helpers/pg.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-all-runs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY = 'all-runs-key-0123456789abcdef';
const GATED = `openintent: "1.0"
info: {name: gated}
governance:
  require_approval: {approvers: [ops]}
workflow:
  a: {assign: x, outputs: {n: number}}
`;
const PLAIN = `openintent: "1.0"
info: {name: plain}
workflow:
  a: {assign: x, outputs: {n: number}}
`;

const db = testDatabase('baton_all_runs');
afterAll(() => db.drop());

/** The store, and the server's own store object for change notices (PostgreSQL: listening to every commit, as baton serve opens it). */
const stores: [string, () => Promise<{ store: RunStore; changes?: RunStore }>][] = [
  ['memory', () => Promise.resolve({ store: new MemoryStore() })],
  ['sqlite', () => Promise.resolve({ store: openSqliteStore(join(dir, 'a.db'), { pollMs: 10 }) })],
  ['postgres', async () => {
    await db.create();
    return { store: await openStore(db.url), changes: await openStore(db.url, { listen: 'commits' }) };
  }],
];

describe.each(stores)('the all-runs stream on %s', (_name, open) => {
  test('an old run that moves is sent, however many newer runs there are', async () => {
    const { store, changes } = await open();
    // no worker: the runs stay as created, and the approval is the only move
    const engine = createEngine({ store, stubAgents: true });
    const server = await createServerApp({ engine, keys: parseKeysEnv(`ops:admin:${KEY}`), log: () => undefined, ...(changes ? { changes } : {}) });
    const ctl = new AbortController();
    try {
      const old = await oldBehindNew(engine, 520);
      const { rows, reading } = await followAll(server, ctl.signal, (r) => r.run_id === old && r.status !== 'waiting');
      // the first read sends the newest 500 and the runs under way: the old run is among them, waiting
      await until(() => rows.length >= 501);
      expect(rows.filter((r) => r.run_id === old).map((r) => r.status)).toEqual(['waiting']);
      const gate = (await engine.inspect(old)).result.gates[0]!;
      await engine.approve(old, gate.id, 'ops');
      await Promise.race([reading, new Promise((_, reject) => setTimeout(() => reject(new Error('the old run never came')), 10_000))]);
      expect(rows.filter((r) => r.run_id === old).map((r) => r.status)).toEqual(['waiting', 'running']);
    } finally {
      ctl.abort();
      server.close();
      await engine.close();
      await store.close();
      await changes?.close();
    }
  }, 60_000);
});

/**
 * The all-runs stream (`GET /events`) when the store cannot name the runs that changed (a library server
 * on a store without `changes`, PostgreSQL's LISTEN coming back, the hub forgetting past 10,000 runs):
 * each read is the newest 500 and the runs under way. An old run under way that ENDS between two such
 * reads is in neither (it is old, and no longer under way): its last move (cancelled) was never sent, and
 * a dashboard showed it waiting for ever. The stream now reads again, by id, the runs it last sent as
 * under way that such a read did not return.
 */
describe('the all-runs stream on a store that cannot name the runs that changed', () => {
  test('an old run under way that is cancelled is sent cancelled', async () => {
    const store = new MemoryStore();
    // as a store whose takeChanged does not name every commit: every wake reads the newest runs and those under way
    Object.defineProperty(store, 'changesComplete', { value: false });
    const engine = createEngine({ store, stubAgents: true });
    const server = await createServerApp({ engine, keys: parseKeysEnv(`ops:admin:${KEY}`), log: () => undefined });
    const ctl = new AbortController();
    try {
      const old = await oldBehindNew(engine, 510);
      const { rows, reading } = await followAll(server, ctl.signal, (r) => r.run_id === old && r.status === 'cancelled');
      await until(() => rows.length >= 501);
      expect(rows.filter((r) => r.run_id === old).map((r) => r.status)).toEqual(['waiting']);
      await engine.cancel(old, 'not needed');
      expect((await store.run(old))!.status).toBe('cancelled');
      await Promise.race([reading, new Promise((_, reject) => setTimeout(() => reject(new Error('the old run was never sent cancelled')), 5000))]);
      expect(rows.filter((r) => r.run_id === old).map((r) => r.status)).toEqual(['waiting', 'cancelled']);
    } finally {
      ctl.abort();
      server.close();
      await engine.close();
      await store.close();
    }
  }, 30_000);
});

type Row = { run_id: string; status: string };

/** A gated run (`old-gated`), then `n` plain ones created after it: the old run's id. */
async function oldBehindNew(engine: Engine, n: number): Promise<string> {
  const old = await engine.create(WorkflowSpec.fromString(GATED), { runId: 'old-gated' });
  const plain = WorkflowSpec.fromString(PLAIN);
  for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, k) => engine.create(plain, { runId: `new-${String(i + k).padStart(3, '0')}` })));
  return old;
}

/** The all-runs stream's run rows as they come; `reading` ends at the first row `last` accepts. */
async function followAll(server: { app: { request(path: string, init: RequestInit): Response | Promise<Response> } }, signal: AbortSignal, last: (r: Row) => boolean): Promise<{ rows: Row[]; reading: Promise<void> }> {
  const res = await server.app.request('/events', { headers: { authorization: `Bearer ${KEY}`, accept: 'text/event-stream' }, signal });
  expect(res.status).toBe(200);
  const rows: Row[] = [];
  const reading = (async () => {
    for await (const m of sseMessages(res.body!)) {
      if (m.event !== 'run') continue;
      const r = JSON.parse(m.data) as Row;
      rows.push(r);
      if (last(r)) return;
    }
  })();
  return { rows, reading };
}

async function until(check: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

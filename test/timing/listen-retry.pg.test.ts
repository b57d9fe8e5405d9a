/**
 * A LISTEN connection that cannot be opened (the database is away) is tried again after a backoff,
 * not at every wait. A busy worker waits on the store many times a second (every turn of its loop
 * while commits back off), and each wait used to open a new LISTEN connection when the last one had
 * failed: a `baton worker` holding 1,000 runs made 35-40 connection attempts a second through a cut,
 * beside its commits' own, against a database that was restarting. The waits still last their
 * maxMs, and once the database answers a commit elsewhere wakes the waiter again.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { WorkflowSpec } from '../../src/api/spec.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres.js';
import { PG_SERVER, testDatabase } from '../helpers/pg.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const db = testDatabase('baton_test_listen_retry');
let proxy: TcpProxy;
let watched: PostgresStore;
let direct: PostgresStore;

beforeAll(async () => {
  await db.create();
  const pg = new URL(PG_SERVER);
  proxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
  direct = await openPostgresStore(db.url);
  watched = await openPostgresStore(proxy.rewrite(db.url), { queryTimeoutMs: 1000 });
}, 60_000);

afterAll(async () => {
  await watched?.close();
  await direct?.close();
  await proxy?.close();
  await db.drop();
});

test('waits during a cut open a LISTEN connection after a backoff, not at each wait; after the cut a commit wakes the waiter again', async () => {
  // LISTEN is opened by the first wait
  await watched.waitForChange(300);
  const cut = proxy.cut(60_000);
  const before = proxy.stats().refused;
  // a busy worker's idle turns: many short waits while the database is away
  let waits = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < 1_500) {
    await watched.waitForChange(10);
    waits++;
  }
  const attempts = proxy.stats().refused - before;
  expect(waits).toBeGreaterThan(30);
  // one attempt per wait before (about 100 here); the backoff (100 ms doubling to 1 s) allows a handful
  expect(attempts).toBeLessThanOrEqual(8);
  proxy.heal();
  await cut;

  const engine = createEngine({ store: direct, agents: { w: () => ({ n: 1 }) } });
  const wf = WorkflowSpec.fromString('openintent: "1.0"\ninfo: {name: wake}\nworkflow:\n  a: {assign: w, outputs: {n: number}}\n');
  try {
    // the listener is back within its backoff; a commit elsewhere then ends a long wait early
    const t1 = performance.now();
    while (performance.now() - t1 < 1_500) await watched.waitForChange(50);
    const woken = watched.waitForChange(30_000).then(() => 'woken');
    await engine.start(wf, { detach: true });
    expect(await Promise.race([woken, new Promise((r) => setTimeout(() => r('not woken in 15 s'), 15_000))])).toBe('woken');
  } finally {
    await engine.close();
  }
}, 60_000);

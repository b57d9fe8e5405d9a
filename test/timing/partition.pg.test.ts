/**
 * PostgreSQL behind a partition: the connections the store holds go dead without a reset (a NAT or a
 * firewall that forgot them: nothing comes back, nothing closes), through a loopback TCP proxy whose
 * `blackhole()` does just that; new connections work. Every statement waits at most `queryTimeoutMs` for
 * its answer, then its connection is dropped and the call is retried on a new one, so the run goes on:
 * it completes, each phase once. (Without the bound, the first statement on a dead connection waited
 * for as long as TCP takes to give up: minutes to hours.) The LISTEN connection is asked a `SELECT 1`
 * every `listenCheckMs`: a dead one is replaced, and NOTIFY wakes the store's waiters again.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { WorkflowSpec } from '../../src/api/spec.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres.js';
import { PG_SERVER, testDatabase } from '../helpers/pg.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const db = testDatabase('baton_test_partition');
let proxy: TcpProxy;
let store: PostgresStore;

beforeAll(async () => {
  await db.create();
  const pg = new URL(PG_SERVER);
  proxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
  store = await openPostgresStore(proxy.rewrite(db.url), { queryTimeoutMs: 1000 });
}, 60_000);

afterAll(async () => {
  await store?.close();
  await proxy?.close();
  await db.drop();
});

test('the store’s connections go dead mid-run: each statement gives up after queryTimeoutMs, a new connection carries on, the run completes with each phase once', async () => {
  const phases = ['a', 'b', 'c', 'd'];
  const wf = WorkflowSpec.fromString(`openintent: "1.0"\ninfo: {name: partition}\nworkflow:\n${phases.map((p, i) => `  ${p}: {assign: w, outputs: {n: number}${i > 0 ? `, depends_on: [${phases[i - 1]}]` : ''}}\n`).join('')}`);
  const calls: string[] = [];
  let holed = false;
  const engine = createEngine({
    store,
    agents: {
      w: (ctx) => {
        calls.push(`${ctx.phase}#${ctx.attempt}`);
        // while phase b runs, every connection of the pool dies silently
        if (ctx.phase === 'b' && !holed) {
          holed = true;
          proxy.blackhole();
        }
        return { n: 1 };
      },
    },
  });
  try {
    const t0 = performance.now();
    const r = await engine.run(wf, {});
    expect(r.status).toBe('completed');
    expect(holed).toBe(true);
    expect(calls).toEqual(['a#1', 'b#1', 'c#1', 'd#1']);
    const events = await store.events(r.runId);
    expect(events.filter((e) => e.type === 'task.completed').map((e) => (e as { phase: string }).phase)).toEqual(phases);
    // a dead connection costs a statement's timeout (the pool holds up to 10 of them); a transaction left
    // open on one holds its run until PostgreSQL ends that session (idle_in_transaction_session_timeout, 30 s)
    expect(performance.now() - t0).toBeLessThan(45_000);
  } finally {
    await engine.close();
  }
}, 90_000);

test('a LISTEN connection gone dead is found by its check and replaced: a commit elsewhere wakes the waiter again', async () => {
  const watched = await openPostgresStore(proxy.rewrite(db.url), { queryTimeoutMs: 1000, listenCheckMs: 300 });
  const direct = await openPostgresStore(db.url);
  const engine = createEngine({ store: direct, agents: { w: () => ({ n: 1 }) } });
  const wf = WorkflowSpec.fromString('openintent: "1.0"\ninfo: {name: wake}\nworkflow:\n  a: {assign: w, outputs: {n: number}}\n');
  /** ms until a run started on the direct store wakes `watched`'s wait (at most 4 s). */
  const wakeMs = async (): Promise<number> => {
    // what the wait owes from before (a new LISTEN wakes its waiters once) is taken first
    for (let i = 0; i < 5; i++) await watched.waitForChange(20);
    const t0 = performance.now();
    const woken = watched.waitForChange(4_000);
    await engine.start(wf, { detach: true });
    await woken;
    return performance.now() - t0;
  };
  try {
    // LISTEN is opened by the first wait; a commit then wakes the waiter at once
    await watched.waitForChange(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(await wakeMs()).toBeLessThan(2_000);
    // the LISTEN connection (and the pool's) go dead without a reset
    proxy.blackhole();
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await wakeMs()).toBeLessThan(2_000);
  } finally {
    await engine.close();
    await direct.close();
    await watched.close();
  }
}, 60_000);

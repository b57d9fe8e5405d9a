/**
 * PostgreSQL behind a partition: the connections the store holds go dead without a reset (a NAT or a
 * firewall that forgot them: nothing comes back, nothing closes), through a loopback TCP proxy whose
 * `blackhole()` does just that; new connections work. Every statement waits at most `queryTimeoutMs` for
 * its answer, then its connection is dropped and the call is retried on a new one, so the run goes on:
 * it completes, each phase once. (Without the bound, the first statement on a dead connection waited
 * for as long as TCP takes to give up: minutes to hours.)
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

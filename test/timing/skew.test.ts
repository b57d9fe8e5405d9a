/**
 * Clocks that disagree, on the real PostgreSQL and on a SQLite file: every lease, retry time and
 * deadline is compared in the store's clock (the database's; the clock of the machine that holds the
 * file), so a worker whose own clock runs ahead (10 s; BATON_CLOCK_OFFSET_MS) neither takes over a
 * healthy 3 s lease nor claims a retry early. Real time (a few seconds): the point is real clocks.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { AgentError } from '../../src/engine/agent.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { testDatabase } from '../helpers/pg.js';
import { eventsOf, header, wf } from '../engine/helpers.js';

const db = testDatabase('baton_test_skew');
/** A run id fresh for each attempt of a test (CI runs a failed test again, on the same database). */
const fresh = (name: string): string => `${name}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
beforeAll(db.create);
afterAll(db.drop);

/** The system clock, `ms` ahead (a machine whose clock is wrong). */
function ahead(ms: number): Clock {
  return { now: () => Date.now() + ms, sleep: (d, signal) => systemClock.sleep(d, signal) };
}

const dir = mkdtempSync(join(tmpdir(), 'baton-skew-'));
/** Two opens of one name share one store (a schema; a file), as two processes would. */
const STORES = {
  postgres: (name: string) => openPostgresStore(db.url, { schema: name }),
  sqlite: (name: string) => Promise.resolve(openSqliteStore(join(dir, `${name}.db`))),
};

for (const [kind, open] of Object.entries(STORES)) describe(`a worker whose clock runs ahead (${kind})`, () => {
  test('does not take over a healthy lease, and the attempt runs once', async () => {
    const storeA = await open('skew_lease');
    const storeB = await open('skew_lease');
    const model = wf(`${header()}workflow:
  long: {assign: slow, outputs: {by: string}}`);
    const started: string[] = [];
    const slow = (who: string) => async () => {
      started.push(who);
      await new Promise((r) => setTimeout(r, 4000));
      return { by: who };
    };
    const a = createEngine({ store: storeA, leaseMs: 3000, workerId: 'A', isOwnerDead: () => false, agents: { slow: slow('A') } });
    const id = await a.create(model, { runId: fresh('lease') });
    const pa = a.drive(id, undefined);
    while (started.length === 0) await new Promise((r) => setTimeout(r, 20));
    // B's clock is 10 s ahead: in its own time A's 3 s lease has always expired, however often A renews it
    const b = createEngine({ store: storeB, clock: ahead(10_000), leaseMs: 3000, workerId: 'B', isOwnerDead: () => false, agents: { slow: slow('B') } });
    const pb = b.drive(id, undefined);
    const [ra, rb] = await Promise.all([pa, pb]);
    expect(ra.status).toBe('completed');
    expect(rb.status).toBe('completed');
    expect(started).toEqual(['A']);
    expect(ra.phases['long']!.output).toEqual({ by: 'A' });
    expect(eventsOf(await storeA.events(id), 'task.lease_expired')).toEqual([]);
    await a.close();
    await b.close();
    await storeA.close();
    await storeB.close();
  }, 30_000);

  test('does not claim a retry before its time in the store’s clock', async () => {
    const store = await open('skew_retry');
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {n: number}, retry: {max_attempts: 2, backoff: constant, initial_delay_ms: 1500}}`);
    const engine = createEngine({ store, clock: ahead(5000), agents: { x: (ctx) => { if (ctx.attempt === 1) throw new AgentError('Flaky', 'once'); return { n: 1 }; } } });
    const r = await engine.run(model, { runId: fresh('retry') });
    expect(r.status).toBe('completed');
    const retrying = eventsOf(r.events, 'task.retrying')[0]!;
    const second = eventsOf(r.events, 'task.claimed').find((c) => c.attempt === 2)!;
    // both times are the store's: the retry waited its 1.5 s there, whatever the worker's clock said
    expect(second.at - retrying.at).toBeGreaterThanOrEqual(1500);
    expect(Math.abs(retrying.at - Date.now())).toBeLessThan(60_000);
    await engine.close();
    await store.close();
  }, 30_000);

  test('stamps a run it creates in the store’s clock: its start, its deadline, a gate’s expiry', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {n: number}}
  b:
    assign: x
    depends_on: [a]
    outputs: {n: number}
    x-require_approval: {approvers: [me], timeout_hours: 1, on_timeout: proceed}`);
    const gateOnly = wf(`${header()}workflow:
  g: {assign: x, outputs: {n: number}, x-require_approval: {approvers: [me], timeout_hours: 1, on_timeout: abort}}`);
    for (const skew of [60_000, -60_000]) {
      const store = await open('skew_start');
      const engine = createEngine({ store, clock: ahead(skew), agents: { x: () => ({ n: 1 }) } });
      const id = await engine.create(gateOnly, { runId: fresh('start'), timeoutMs: 30_000 });
      const [started, opened] = await store.events(id);
      const before = Date.now();
      expect(Math.abs(started!.at - before)).toBeLessThan(10_000);
      expect(started).toMatchObject({ type: 'run.started', deadline_at: started!.at + 30_000 });
      expect(opened).toMatchObject({ type: 'gate.opened', expires_at: started!.at + 3_600_000 });
      // a minute behind, a 30 s deadline stamped in its own clock had passed in the store's: the run failed at once
      const r = await engine.run(model, { runId: fresh('run'), timeoutMs: 30_000, autoApprove: true });
      expect(r.status).toBe('completed');
      await engine.close();
      await store.close();
    }
  }, 30_000);

  test('a worker a minute behind that has not committed yet fires a stored deadline when it passes in the store’s clock', async () => {
    const store = await open('skew_idle');
    const model = wf(`${header()}workflow:
  g: {assign: x, outputs: {n: number}, x-require_approval: {approvers: [me], timeout_hours: 1, on_timeout: abort}}`);
    const creator = createEngine({ store, agents: { x: () => ({ n: 1 }) } });
    const id = await creator.create(model, { runId: fresh('idle'), timeoutMs: 300 });
    const worker = createEngine({ store: await open('skew_idle'), clock: ahead(-60_000), agents: { x: () => ({ n: 1 }) } });
    const stop = new AbortController();
    const serving = worker.serve(stop.signal);
    const t0 = Date.now();
    let last: string | undefined;
    for await (const e of creator.handle(id).events()) last = e.type;
    // in its own clock the deadline is a minute away: it found it a minute late
    expect(last).toBe('run.failed');
    expect(Date.now() - t0).toBeLessThan(10_000);
    stop.abort();
    await serving;
    await worker.close();
    await worker.store.close();
    await creator.close();
    await store.close();
  }, 30_000);

  test('decides fast commits (no read of the run) in the store’s clock too, from the monotonic clock', async () => {
    const store = await open('skew_fast');
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {n: number}}
  b: {assign: x, depends_on: [a], outputs: {n: number}}
  c: {assign: x, depends_on: [b], outputs: {n: number}}
  d: {assign: x, depends_on: [c], outputs: {n: number}}`);
    // a machine whose clock is a minute ahead, and steps another minute forward during the run
    let skew = 60_000;
    const clock: Clock = { now: () => Date.now() + skew, sleep: (d, signal) => systemClock.sleep(d, signal) };
    let commits = 0;
    const many = store.commitMany.bind(store);
    store.commitMany = (items: Parameters<typeof many>[0]) => (commits++, many(items));
    const engine = createEngine({ store, clock, leaseMs: 30_000, agents: { x: (ctx) => ((skew += 60_000), { n: ctx.attempt }) } });
    const r = await engine.run(model, { runId: fresh('fast') });
    expect(r.status).toBe('completed');
    expect(commits).toBeGreaterThan(0);
    const before = Date.now();
    for (const e of [...eventsOf(r.events, 'task.completed'), ...eventsOf(r.events, 'task.claimed').slice(1)]) expect(Math.abs(e.at - before)).toBeLessThan(10_000);
    for (const c of eventsOf(r.events, 'task.claimed')) expect(c.lease_expires_at! - Date.now()).toBeLessThan(31_000);
    await engine.close();
    await store.close();
  }, 30_000);
});

/**
 * A backoff is a duration: it is measured on the clock's monotonic time, never on the wall clock or
 * the store's. A run whose claim found the run busy (PostgreSQL: another transaction holds its
 * advisory lock) goes on once the lock is let go, even when the wall clock stepped back an hour
 * meanwhile. Kept in store time, the backoff waited out the step.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { systemClock, type Clock } from '../../src/core/clock.js';
import { createEngine } from '../../src/api/engine.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { testDatabase } from '../helpers/pg.js';
import { header, wf } from './helpers.js';

const db = testDatabase('baton_test_backoff');
beforeAll(db.create);
afterAll(db.drop);

test('a run whose claim found the run locked goes on when the lock is let go, after a backward step of the wall clock', { timeout: 30_000 }, async () => {
  const store = await openPostgresStore(db.url, { schema: 'b1', poolSize: 3, databaseClock: false });
  const holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  try {
    let step = 0;
    const clock: Clock = { now: () => Date.now() + step, sleep: (ms, signal) => systemClock.sleep(ms, signal), monotonic: () => performance.now() };
    const e = createEngine({ store, clock, agents: { x: () => ({}) }, pollMs: 10 });
    const id = await e.create(wf(`${header()}workflow:\n  a: {assign: x}\n  b: {assign: x, depends_on: [a]}`));
    // the run is held by another transaction as the worker takes it up: its claims find it busy and back off
    await holder.query(`SELECT pg_advisory_lock(hashtextextended($1, 0))`, [`b1/${id}`]);
    const done = e.drive(id, undefined);
    await new Promise((r) => setTimeout(r, 300));
    expect((await store.run(id))!.seq).toBe(2); // started and a ready: nothing claimed while the lock is held
    step = -3_600_000; // NTP, a VM resumed: the wall clock steps back an hour while the claim backs off
    await holder.query(`SELECT pg_advisory_unlock(hashtextextended($1, 0))`, [`b1/${id}`]);
    const r = await Promise.race([done, new Promise<'hung'>((res) => setTimeout(() => res('hung'), 10_000))]);
    expect(r === 'hung' ? r : r.status).toBe('completed');
    await e.close();
  } finally {
    await holder.end();
    await store.close();
  }
});

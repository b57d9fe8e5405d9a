/**
 * A PostgreSQL store whose pool has no connection free for longer than its connect timeout: pg-pool
 * fails the wait with `timeout exceeded when trying to connect`. That is a busy store (every connection
 * of this process in use, here one waiting on a run's lock another connection holds), and commands ride
 * it out as they ride out a lock. It was a plain `store` error: `engine.cancel()` (approve, deny,
 * respond, and a run's creation, `engine.run()`) failed at once while the store was only busy, e.g. a
 * burst of approvals beside workers.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testDatabase } from '../helpers/pg.js';
import { createEngine, parseWorkflow } from '../../src/index.js';
import { openPostgresStore, pgFault } from '../../src/store/postgres.js';
import { BatonError } from '../../src/core/errors.js';

const db = testDatabase('baton_test_pool_busy');
beforeAll(db.create, 60_000);
afterAll(db.drop);

const WORKFLOW = `openintent: "1.0"\ninfo: {name: busy}\nworkflow:\n  a: {assign: x, outputs: {n: number}}\n`;

describe('a pool with no connection free in time', () => {
  test('pg-pool\'s wait timeout is a busy store (store-locked), not a plain store error', () => {
    const f = pgFault(new Error('timeout exceeded when trying to connect'), 'postgres://h/db');
    expect(f).toBeInstanceOf(BatonError);
    expect((f as BatonError).code).toBe('store-locked');
    expect((f as BatonError).message).toMatch(/busy/);
  });

  test('engine.cancel() waits for a connection instead of failing', async () => {
    const compiled = parseWorkflow(WORKFLOW);
    if (!compiled.ok) throw new Error('workflow');
    const store = await openPostgresStore(db.url, { poolSize: 1, connectTimeoutMs: 200 });
    const engine = createEngine({ store, agents: { x: () => ({ n: 1 }) } });
    const holder = new pg.Client({ connectionString: db.url });
    try {
      const a = await engine.create(compiled.model);
      const b = await engine.create(compiled.model);
      // another connection holds run a's lock: cancelling a waits for it on the pool's only connection
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`baton/${a}`]);
      const first = engine.cancel(a);
      first.catch(() => undefined);
      await new Promise((r) => setTimeout(r, 50));
      // ... so b's cancel finds no connection free for longer than the connect timeout
      const second = engine.cancel(b);
      second.catch(() => undefined);
      await new Promise((r) => setTimeout(r, 800));
      await holder.query('COMMIT');
      await expect(first).resolves.toBeUndefined();
      await expect(second).resolves.toBeUndefined();
      expect((await store.run(a))?.status).toBe('cancelled');
      expect((await store.run(b))?.status).toBe('cancelled');
    } finally {
      await holder.end().catch(() => undefined);
      await engine.close();
      await store.close();
    }
  }, 60_000);
});

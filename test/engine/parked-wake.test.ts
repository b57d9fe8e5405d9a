/**
 * A serving worker parks a run whose next due time is more than a second away (a retry delay, a
 * gate's expiry, the run's deadline): it keeps only the runs it executes. It used to learn that the
 * parked run had come due only from its next poll of the store (pollMs, 1 s by default), so a retry
 * 3 s out fired 0-1 s late under `baton worker` (measured on PostgreSQL: 3.03-3.99 s). It now sleeps
 * until the earliest due time of the runs it parked, then asks the store. Real time and real stores;
 * a poll of 8 s makes the difference plain (the old code waited for it).
 *
 * The same worker also missed a run stored by another engine of its process (memory, SQLite) between
 * its look for work and its idle wait: the wait for a change is now armed before the look.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import type { RunStore } from '../../src/engine/ports.js';
import { MemoryStore } from '../../src/store/memory.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { testDatabase } from '../helpers/pg.js';
import { header, until, wf } from './helpers.js';

const db = testDatabase('baton_test_parked_wake');
beforeAll(db.create);
afterAll(db.drop);

const DELAY = 1500;

const STORES: [string, () => Promise<RunStore> | RunStore][] = [
  ['memory', () => new MemoryStore()],
  ['sqlite', () => openSqliteStore(join(mkdtempSync(join(tmpdir(), 'baton-parked-wake-')), 'w.db'))],
  ['postgres', () => openPostgresStore(db.url)],
];

for (const [kind, open] of STORES) {
  test(`${kind}: a serving worker runs a parked run's retry when it is due, not at its next poll`, async () => {
    const store = await open();
    const model = wf(`${header()}workflow:
  a: {assign: flaky, retry: {max_attempts: 3, backoff: constant, initial_delay_ms: ${DELAY}}}
  b: {assign: flaky, depends_on: [a], x-require_approval: {timeout_hours: 0.0005, on_timeout: proceed}}`);
    const starts: Record<string, number[]> = { a: [], b: [] };
    const engine = createEngine({
      store,
      pollMs: 8_000,
      agents: {
        flaky: (ctx) => {
          starts[ctx.phase]!.push(performance.now());
          if (ctx.phase === 'a' && ctx.attempt === 1) throw new Error('once');
          return {};
        },
      },
    });
    const stop = new AbortController();
    const serving = engine.serve(stop.signal);
    try {
      const t0 = performance.now();
      const { id } = await engine.start(model, { detach: true });
      await until(async () => (await store.run(id))?.status === 'completed', 'the run completes', 100_000);
      expect(starts['a']).toHaveLength(2);
      // a run stored by another engine of this process while the worker looked for work wakes it at once
      // (memory and SQLite wake only the waits already armed: it waited for the next poll)
      expect(starts['a']![0]! - t0).toBeLessThan(600);
      const gap = starts['a']![1]! - starts['a']![0]!;
      // not early (the store's clock decides), and not a poll late
      expect(gap).toBeGreaterThanOrEqual(DELAY - 5);
      expect(gap).toBeLessThan(DELAY + 600);
      // the phase gate of 1.8 s expires (proceed) while the run is parked: b starts on time too
      expect(starts['b']![0]! - starts['a']![1]!).toBeLessThan(1800 + 600);
      expect(performance.now() - t0).toBeLessThan(DELAY + 1800 + 1500);
    } finally {
      stop.abort();
      await serving;
      await engine.close();
      await store.close();
    }
  }, 30_000);
}

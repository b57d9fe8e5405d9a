/**
 * An engine used as a service (engine.run / start().result() as requests come, for days) keeps in memory only
 * the runs under way. A driven run that ended used to stay in its worker for good (about 6 KB each on SQLite,
 * and every turn of the loop walked them all), so the heap grew with every run ever started.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createEngine, type Engine } from '../../src/api/engine.js';
import type { RunStore } from '../../src/engine/ports.js';
import { MemoryStore } from '../../src/store/memory.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { header, settle, until, wf } from './helpers.js';

const stores: [string, () => RunStore][] = [
  ['memory', () => new MemoryStore()],
  ['sqlite', () => openSqliteStore(join(mkdtempSync(join(tmpdir(), 'baton-ended-')), 'b.db'))],
];

/** The runs the engine's worker holds (its private map: what memory it keeps for runs). */
function held(e: Engine): number {
  return (e.work as unknown as { runs: Map<string, unknown> }).runs.size;
}

const model = wf(`${header()}workflow:
  a: {assign: x, retry: {max_attempts: 2, backoff: constant, initial_delay_ms: 0}}
  b: {assign: x, depends_on: [a]}`);

describe.each(stores)('ended runs are not kept (%s)', (_name, makeStore) => {
  test('runs driven to their end, in batches and beside a serving loop, leave nothing held', async () => {
    const store = makeStore();
    const e = createEngine({ store, agents: { x: (ctx) => (ctx.phase === 'a' && ctx.attempt === 1 ? Promise.reject(new Error('once')) : { ok: ctx.attempt }) } });
    try {
      for (let round = 0; round < 3; round++) {
        const results = await Promise.all(Array.from({ length: 50 }, (_, i) => e.run(model, { keepEvents: i % 2 === 0 })));
        expect(results.every((r) => r.status === 'completed')).toBe(true);
        await settle();
        expect(held(e)).toBe(0);
      }
      // a handle's result is still whole after its run was put down, and a second drive reads it back
      const h = await e.start(model, {});
      const first = await h.result();
      await settle();
      expect(held(e)).toBe(0);
      expect(await h.result()).toBe(first);
      const again = await e.drive(h.id);
      expect(again.status).toBe('completed');
      expect(again.events.map((ev) => ev.seq)).toEqual(first.events.map((ev) => ev.seq));
      // a service: serving and driving at once
      const ctl = new AbortController();
      const serving = e.serve(ctl.signal);
      await Promise.all(Array.from({ length: 20 }, () => e.run(model, {})));
      await until(() => held(e) === 0, 'the serving worker puts the ended runs down');
      ctl.abort();
      await serving;
    } finally {
      await e.close();
      await store.close();
    }
  });
});

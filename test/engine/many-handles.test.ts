/**
 * Many run handles followed at once (`for await (const e of run.events())` for each of many runs started
 * together). Each handle used to wake and read the store at every commit of every run (the store's
 * `waitForChange` wakes at any commit), so the reads grew with the square of the runs: 2,000 handles took
 * 43 s on memory and over 5 minutes on SQLite. A handle on a run its engine holds now waits for that run.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import type { RunEvent } from '../../src/engine/events.js';
import type { RunStore } from '../../src/engine/ports.js';
import { MemoryStore } from '../../src/store/memory.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { header, wf } from './helpers.js';

const stores: [string, () => RunStore][] = [
  ['memory', () => new MemoryStore()],
  ['sqlite', () => openSqliteStore(join(mkdtempSync(join(tmpdir(), 'baton-handles-')), 'b.db'))],
];

/** The store, counting the reads the handles make (events, run). */
function counting(store: RunStore): { store: RunStore; reads: () => number } {
  let n = 0;
  const counted = new Proxy(store, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (typeof v !== 'function') return v;
      const f = (v as (...a: unknown[]) => unknown).bind(target);
      return key === 'events' || key === 'run' ? (...a: unknown[]) => (n++, f(...a)) : f;
    },
  });
  return { store: counted, reads: () => n };
}

const model = wf(`${header()}workflow:
  a: {assign: x, retry: {max_attempts: 2, backoff: constant, initial_delay_ms: 0}}
  b: {assign: x, depends_on: [a]}
  c: {assign: x, depends_on: [b]}`);

describe.each(stores)('many handles followed at once (%s)', (_name, makeStore) => {
  test('each handle reads the store about once per move of its own run, not at every commit of the others', async () => {
    const inner = makeStore();
    const { store, reads } = counting(inner);
    const e = createEngine({ store, agents: { x: (ctx) => (ctx.phase === 'a' && ctx.attempt === 1 ? Promise.reject(new Error('once')) : {}) } });
    try {
      const n = 300;
      const followed = await Promise.all(
        Array.from({ length: n }, async () => {
          const h = await e.start(model, {});
          const seen: RunEvent['type'][] = [];
          for await (const ev of h.events()) seen.push(ev.type);
          expect((await h.result()).status).toBe('completed');
          return seen;
        }),
      );
      // every handle saw its whole log, in order, to the terminal event
      for (const seen of followed) expect(seen.at(-1)).toBe('run.completed');
      const events = (await inner.events((await inner.runs({ limit: 1 }))[0]!.runId)).length;
      for (const seen of followed) expect(seen).toHaveLength(events);
      // a handle's reads follow its own run's commits (a dozen events): bounded per handle, whatever n is
      expect(reads() / n).toBeLessThan(30);
    } finally {
      await e.close();
      await inner.close();
    }
  });
});

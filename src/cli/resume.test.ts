import { expect, test } from 'vitest';
import { createEngine } from '../api/engine.js';
import { BatonError } from '../core/errors.js';
import type { RunStore } from '../engine/ports.js';
import { MemoryStore } from '../store/memory.js';
import { startupWarnings } from './resume.js';

/** A store whose run listing fails as `code` (the other calls go through). */
function failingRuns(store: RunStore, code: 'store-unreachable' | 'store-locked' | 'store-corrupt'): RunStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'runs') return () => Promise.reject(new BatonError(code, `the store failed: ${code}`));
      const v = Reflect.get(target, key, receiver) as unknown;
      return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
    },
  });
}

test("a starting worker's warnings are skipped while the store is unavailable, not turned into an exit", async () => {
  for (const code of ['store-unreachable', 'store-locked'] as const) {
    const store = failingRuns(new MemoryStore(), code);
    const engine = createEngine({ store });
    try {
      await expect(startupWarnings(engine, store)).resolves.toEqual([]);
    } finally {
      await engine.close();
    }
  }
  // anything else is not weather: it still reaches the caller
  const store = failingRuns(new MemoryStore(), 'store-corrupt');
  const engine = createEngine({ store });
  try {
    await expect(startupWarnings(engine, store)).rejects.toMatchObject({ code: 'store-corrupt' });
  } finally {
    await engine.close();
  }
});

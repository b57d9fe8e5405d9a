/**
 * While the store is away, a serving worker looks for work every 250 ms (its trouble scan), not at
 * every turn of its loop. A worker holding many runs whose commits fail turns often (each run's commit
 * backs off on its own, and each backoff that ends wakes the loop), and every turn with a slot free used
 * to send a findWork: through a 5 s cut a `baton worker` holding 1,000 runs asked 20-30 times a second,
 * each a connection attempt against a database that was refusing them. Real time, the memory store
 * behind a switch.
 */
import { expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { BatonError } from '../../src/core/errors.js';
import type { RunStore } from '../../src/engine/ports.js';
import { MemoryStore } from '../../src/store/memory.js';
import { header, until, wf } from './helpers.js';

const DATA = new Set(['createRun', 'createRuns', 'run', 'runs', 'workflow', 'events', 'tasks', 'readState', 'saveSnapshot', 'transact', 'commitMany', 'findWork', 'renewLeases']);

test('a serving worker whose store is away looks for work at its trouble pace, not at every turn; it finishes every run once the store answers', async () => {
  const inner = new MemoryStore();
  let down = false;
  let looksWhileDown = 0;
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...a: unknown[]) => {
        if (down && typeof key === 'string' && DATA.has(key)) {
          if (key === 'findWork') looksWhileDown++;
          return Promise.reject(new BatonError('store-unreachable', 'connect ECONNREFUSED 127.0.0.1:5432'));
        }
        return (v as (...x: unknown[]) => unknown).apply(target, a);
      };
    },
  }) as RunStore;
  const model = wf(`${header()}workflow:
  x: {assign: w, outputs: {n: number}}
  y: {assign: w, depends_on: [x], outputs: {n: number}}
`);
  let ran = 0;
  const engine = createEngine({
    store,
    concurrency: 4,
    agents: {
      // the store goes down once a few attempts have run: the runs held here cannot commit
      w: () => {
        if (++ran === 20) down = true;
        return { n: 1 };
      },
    },
  });
  const ctl = new AbortController();
  try {
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) ids.push(await engine.create(model, {}));
    const serving = engine.serve(ctl.signal);
    await until(() => down, 'the store going down', 20_000);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 1_500));
    const looks = looksWhileDown;
    const ms = performance.now() - t0;
    down = false;
    // one look per 250 ms, and one more for a turn that meets the store's failure first
    expect(looks, `findWork calls in ${Math.round(ms)} ms while the store was away`).toBeLessThanOrEqual(Math.ceil(ms / 250) + 3);
    await until(async () => (await Promise.all(ids.map((id) => inner.run(id)))).every((r) => r?.status === 'completed'), 'every run completed', 30_000);
    ctl.abort();
    await serving;
  } finally {
    ctl.abort();
    await engine.close();
  }
}, 60_000);

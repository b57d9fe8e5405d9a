/**
 * A store that fails for a while and comes back (a database restart, a connection cut): the commit that
 * failed waits in memory under a growing backoff (100 ms doubling to 5 s), and once the store answers
 * again it goes at once, not when that backoff ends. While the store fails the worker looks at it every
 * 250 ms, so the first answer is seen soon. Real time, the memory store behind a switch.
 */
import { expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { BatonError } from '../../src/core/errors.js';
import type { RunStore } from '../../src/engine/ports.js';
import { MemoryStore } from '../../src/store/memory.js';
import { header, until, wf } from './helpers.js';

const DATA = new Set(['createRun', 'run', 'runs', 'workflow', 'events', 'tasks', 'readState', 'saveSnapshot', 'transact', 'commitMany', 'findWork', 'renewLeases']);

test('a commit that failed while the store was down goes as soon as the store answers again, not after its backoff', async () => {
  const inner = new MemoryStore();
  let down = false;
  let failedCommits = 0;
  const troubles: string[] = [];
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return (...a: unknown[]) => {
        if (down && typeof key === 'string' && DATA.has(key)) {
          // a commit, or the read that rebuilds the run's state before the next one (after a failed commit)
          if (key === 'transact' || key === 'commitMany' || key === 'events' || key === 'readState') failedCommits++;
          return Promise.reject(new BatonError('store-unreachable', 'connect ECONNREFUSED 127.0.0.1:5432'));
        }
        return (v as (...x: unknown[]) => unknown).apply(target, a);
      };
    },
  }) as RunStore;
  const model = wf(`${header()}workflow:
  x: {assign: cut, outputs: {n: number}}
  y: {assign: ok, depends_on: [x], inputs: {n: x.n}, outputs: {n: number}}
`);
  const engine = createEngine({
    store,
    onStoreTrouble: (t) => troubles.push(t.state),
    agents: {
      // the store goes down while x runs: its completion cannot be committed
      cut: () => {
        down = true;
        return { n: 1 };
      },
      ok: (ctx) => ({ n: Number(ctx.input['n']) + 1 }),
    },
  });
  try {
    const result = engine.run(model);
    // six failed tries (the commit, then the reads that rebuild the run before the next): the next waits 1.6-3.2 s
    await until(() => failedCommits >= 6, 'six failed commits', 20_000);
    down = false;
    const up = performance.now();
    const r = await result;
    const after = performance.now() - up;
    expect(r.status).toBe('completed');
    expect(r.phases['y']?.output).toEqual({ n: 2 });
    expect(after, 'from the store answering again to the run ending (ms)').toBeLessThan(1_000);
    expect(troubles).toEqual(['down', 'up']);
  } finally {
    await engine.close();
  }
}, 30_000);

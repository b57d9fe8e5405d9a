/**
 * Many runs retrying at once, as a user drives them (createEngine, one process, real time): their
 * commits go through transactions of their own (a retry due within a second keeps a run off the fast
 * path), several at once, each run with three phases ready together after its retry. Checked on every store: every run completes; no more attempts run at once
 * than the engine's concurrency, however the free slots are shared between commits in parallel; and
 * no transaction is spent on a run with nothing to commit (a run due only for a claim, when no slot
 * was left for it, waits for the next turn instead: such empty commits were 20 per run here). And many
 * plain runs at once: every run the fast path may take goes by it (many runs to a commit), not only the
 * first 64 of a turn, and a run the engine just created is taken up without reading it back. And runs
 * started together are created in a few transactions (createRuns), each refused on its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { openStore } from '../../src/api/store.js';
import type { RunStore, TxDecision } from '../../src/engine/ports.js';
import { testDatabase } from '../helpers/pg.js';
import { header, wf } from './helpers.js';

const db = testDatabase('baton_test_retrying');
const dir = mkdtempSync(join(tmpdir(), 'baton-retrying-'));
beforeAll(db.create);
afterAll(async () => {
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

const model = wf(`${header()}workflow:
  a:
    assign: flaky
    retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 1}
    outputs: {n: number}
  b:
    assign: ok
    depends_on: [a]
    inputs: {n: a.n}
    outputs: {n: number}
  c:
    assign: ok
    depends_on: [a]
    inputs: {n: a.n}
    outputs: {n: number}
  d:
    assign: ok
    depends_on: [a]
    inputs: {n: a.n}
    outputs: {n: number}
`);

/** The store, counting its transactions (and those that committed nothing) and its reads of runs and logs. */
function counting(store: RunStore): { store: RunStore; tx: { all: number; empty: number; reads: number; creates: number } } {
  const tx = { all: 0, empty: 0, reads: 0, creates: 0 };
  const wrapped = new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'createRun' || key === 'createRuns') {
        return (...a: unknown[]) => {
          tx.creates++;
          return (Reflect.get(target, key, receiver) as (...x: unknown[]) => unknown).apply(target, a);
        };
      }
      if (key === 'run' || key === 'events' || key === 'workflow') {
        return (...a: unknown[]) => {
          tx.reads++;
          return (Reflect.get(target, key, receiver) as (...x: unknown[]) => unknown).apply(target, a);
        };
      }
      if (key === 'transact') {
        return (runId: string, seq: number, decide: (d: never[], now?: number) => TxDecision<unknown>, opts?: never) => {
          tx.all++;
          return target.transact(
            runId,
            seq,
            (d, now) => {
              const r = decide(d as never[], now);
              if (!r.commit) tx.empty++;
              return r;
            },
            opts,
          );
        };
      }
      const v = Reflect.get(target, key, receiver) as unknown;
      return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: wrapped, tx };
}

const chain = wf(`${header()}workflow:
  x: {assign: ok, outputs: {n: number}}
  y: {assign: ok, depends_on: [x], inputs: {n: x.n}, outputs: {n: number}}
  z: {assign: ok, depends_on: [y], inputs: {n: y.n}, outputs: {n: number}}
`);

describe.each(['memory', 'sqlite', 'postgres'] as const)('many plain runs at once on the %s store', (kind) => {
  // 8 slots: thousands wait for one; 200: more runs finish an attempt together than one fast commit takes (64)
  test.each([8, 200])('every run the fast path may take goes by it (concurrency %i): no transaction of its own, nothing read back', async (concurrency) => {
    const opened = await openStore(kind === 'memory' ? 'memory' : kind === 'sqlite' ? join(dir, `plain-${concurrency}.db`) : db.url, { cwd: dir });
    const { store, tx } = counting(opened);
    const RUNS = 500;
    const engine = createEngine({ store, concurrency, agents: { ok: (ctx) => ({ n: ((ctx.input['n'] as number | undefined) ?? 0) + 1 }) } });
    try {
      const results = await Promise.all(Array.from({ length: RUNS }, () => engine.run(chain, { trigger: {} })));
      expect(results.filter((r) => r.status !== 'completed')).toEqual([]);
      for (const r of results) expect(r.phases['z']?.output).toEqual({ n: 3 });
      // once more than 64 runs were due together, the rest went through a transaction each (1.5 per run)
      expect(tx.all).toBeLessThan(RUNS / 20);
      // a run is taken up as it was created: its record, log and workflow are not read back (3 reads a run)
      expect(tx.reads).toBe(0);
      // runs started together are created together (a transaction each, before)
      expect(tx.creates).toBeLessThan(RUNS / 20);
    } finally {
      await engine.close();
      await opened.close();
    }
  }, 120_000);
});

describe.each(['memory', 'sqlite', 'postgres'] as const)('runs started together on the %s store', (kind) => {
  test('are created in a few transactions; a run id given twice is created once and refused once', async () => {
    const opened = await openStore(kind === 'memory' ? 'memory' : kind === 'sqlite' ? join(dir, 'together.db') : db.url, { cwd: dir });
    const { store, tx } = counting(opened);
    const engine = createEngine({ store, agents: { ok: () => ({ n: 1 }) } });
    try {
      const ids = await Promise.all(Array.from({ length: 600 }, () => engine.create(chain, { trigger: {} })));
      expect(new Set(ids).size).toBe(600);
      // the first few go alone while nothing is in flight, the rest together, 256 to a transaction
      expect(tx.creates).toBeLessThanOrEqual(4 + Math.ceil(600 / 256));
      for (const id of ids.slice(0, 20)) expect((await opened.run(id))?.status).toBe('running');
      // the same id twice in one batch, and once more after: one run, the others refused with run-exists
      const twice = await Promise.allSettled([engine.create(chain, { runId: `same-${kind}` }), engine.create(chain, { runId: `same-${kind}` }), engine.create(chain, { runId: `other-${kind}` })]);
      // which of the two is created is a race (the first creations go alone, each on a connection of its own): one is
      const got = twice.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as { code?: string }).code));
      expect(got.slice(0, 2).sort()).toEqual(['run-exists', `same-${kind}`]);
      expect(got[2]).toBe(`other-${kind}`);
      await expect(engine.create(chain, { runId: `same-${kind}` })).rejects.toMatchObject({ code: 'run-exists' });
      expect(await opened.events(`same-${kind}`)).toHaveLength((await opened.events(`other-${kind}`)).length);
      // and they run: a worker takes them up from the store
      const r = await engine.resume(ids[0]!);
      expect(r.status).toBe('completed');
    } finally {
      await engine.close();
      await opened.close();
    }
  }, 120_000);
});

describe.each(['memory', 'sqlite', 'postgres'] as const)('many runs retrying at once on the %s store', (kind) => {
  test('every run completes, attempts never exceed the concurrency, and no transaction commits nothing', async () => {
    const opened = await openStore(kind === 'memory' ? 'memory' : kind === 'sqlite' ? join(dir, 'retrying.db') : db.url, { cwd: dir });
    const { store, tx } = counting(opened);
    const CONCURRENCY = 6;
    const RUNS = 300;
    const tries = new Map<string, number>();
    let running = 0;
    let most = 0;
    const engine = createEngine({
      store,
      concurrency: CONCURRENCY,
      agents: {
        flaky: async (ctx) => {
          running++;
          most = Math.max(most, running);
          try {
            await new Promise((r) => setImmediate(r));
            const n = (tries.get(ctx.runId) ?? 0) + 1;
            tries.set(ctx.runId, n);
            if (n === 1) throw new Error('the first try fails');
            return { n: 1 };
          } finally {
            running--;
          }
        },
        ok: async (ctx) => {
          running++;
          most = Math.max(most, running);
          try {
            await new Promise((r) => setImmediate(r));
            return { n: (ctx.input['n'] as number) + 1 };
          } finally {
            running--;
          }
        },
      },
    });
    try {
      const results = await Promise.all(Array.from({ length: RUNS }, () => engine.run(model, { trigger: {} })));
      expect(results.filter((r) => r.status !== 'completed')).toEqual([]);
      for (const r of results) for (const p of ['b', 'c', 'd']) expect(r.phases[p]?.output).toEqual({ n: 2 });
      expect([...tries.values()].every((n) => n === 2)).toBe(true);
      expect(most).toBeLessThanOrEqual(CONCURRENCY);
      expect(tx.empty).toBe(0);
      // about two per run (the retry's claim, and the commits in the second after it); far fewer than the runs' commits
      expect(tx.all).toBeLessThan(RUNS * 4);
    } finally {
      await engine.close();
      await opened.close();
    }
  }, 120_000);
});

/**
 * CreateBatcher against stores of a caller's own (RunStore is a public port): a createRuns that throws
 * instead of rejecting, or answers for fewer runs than it was given, refuses the batch's creations,
 * hangs none of them and leaves the batcher working; a sound store creates every run.
 */
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import { MemoryStore } from '../store/memory.js';
import { CreateBatcher, retryingCreates, StoreWaits } from './create-batch.js';
import type { NewRun, RunStore } from './ports.js';

function init(runId: string): NewRun {
  const at = 1_000;
  return {
    run: { runId, workflowHash: 'h', workflowName: 'w', status: 'running', trigger: {}, initialState: null, bindings: {}, options: {}, createdAt: at, updatedAt: at, endedAt: null, costUsd: 0, seq: 0, wakeAt: null },
    workflow: { hash: 'h', name: 'w', source: 'openintent: "1.0"', path: '/w.yaml' },
    commit: { events: [{ seq: 1, at, type: 'run.started', workflow: 'w', hash: 'h' } as never], run: { status: 'running', updatedAt: at, endedAt: null, costUsd: 0, wakeAt: null }, tasks: [] },
  };
}

/** A real memory store whose createRuns misbehaves as `how` says (createRun stays sound). */
function storeWith(how: 'throws' | 'short' | 'sound'): { store: RunStore; batches: number[] } {
  const real = new MemoryStore();
  const batches: number[] = [];
  const store = Object.create(real) as RunStore;
  store.createRun = (x) => real.createRun(x);
  store.createRuns = (xs) => {
    batches.push(xs.length);
    if (how === 'throws') throw new Error('custom store: boom');
    if (how === 'short') return real.createRuns(xs).then((out) => out.slice(1));
    return real.createRuns(xs);
  };
  return { store, batches };
}

/** Starts `n` creations in one turn: the first 4 go alone (createRun), the rest wait and go as one batch. */
async function createMany(b: CreateBatcher, n: number): Promise<PromiseSettledResult<void>[]> {
  return Promise.allSettled(Array.from({ length: n }, (_, i) => b.createRun(init(`r${i}`))));
}

/** A real memory store whose createRun and createRuns wait until `release()` (creations in flight). */
function heldStore(): { store: RunStore; release: () => void; sent: () => number } {
  const real = new MemoryStore();
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  let sent = 0;
  const store = Object.create(real) as RunStore;
  store.createRun = async (x) => {
    sent++;
    await gate;
    return real.createRun(x);
  };
  store.createRuns = async (xs) => {
    sent += xs.length;
    await gate;
    return real.createRuns(xs);
  };
  return { store, release: () => open(), sent: () => sent };
}

describe('CreateBatcher', () => {
  test('a sound store: the first creations go alone, the rest together, every run created', async () => {
    const { store, batches } = storeWith('sound');
    const out = await createMany(new CreateBatcher(store), 20);
    expect(out.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(batches).toEqual([16]);
    for (let i = 0; i < 20; i++) expect(await store.run(`r${i}`)).toBeDefined();
  });

  test.each([['throws', 'throws'], ['answers for fewer runs', 'short']] as const)('a createRuns that %s: the batch is refused, nothing hangs, and the batcher goes on', async (_label, how) => {
    const { store, batches } = storeWith(how);
    const b = new CreateBatcher(store);
    const out = await createMany(b, 10);
    expect(batches).toEqual([6]);
    expect(out.slice(0, 4).every((r) => r.status === 'fulfilled')).toBe(true);
    const refused = out.slice(4);
    expect(refused.every((r) => r.status === 'rejected')).toBe(true);
    if (how === 'short') expect(String((refused[0] as PromiseRejectedResult).reason)).toMatch(/answered 5 results for 6 runs/);
    // in flight went back to zero: a later creation goes at once
    await expect(b.createRun(init('later'))).resolves.toBeUndefined();
    expect(await store.run('later')).toBeDefined();
  });
});

describe('CreateBatcher: an abandoned creation', () => {
  test('queued behind the creations in flight, it leaves the queue when its signal aborts and is never sent; one already sent is created', async () => {
    const { store, release, sent } = heldStore();
    const b = new CreateBatcher(store);
    const inFlight = Array.from({ length: 4 }, (_, i) => b.createRun(init(`f${i}`), new AbortController().signal));
    const gone = new AbortController();
    const queued = b.createRun(init('queued'), gone.signal);
    const kept = b.createRun(init('kept'));
    expect(sent()).toBe(4);
    gone.abort(new Error('the client went away'));
    await expect(queued).rejects.toThrow('the client went away');
    release();
    await Promise.all([...inFlight, kept]);
    expect(sent()).toBe(5);
    expect(await store.run('queued')).toBeUndefined();
    expect(await store.run('kept')).toBeDefined();
    for (let i = 0; i < 4; i++) expect(await store.run(`f${i}`)).toBeDefined();
  });

  test('a signal aborted before the call: refused at once, nothing sent', async () => {
    const { store, sent } = heldStore();
    const gone = new AbortController();
    gone.abort(new Error('gone'));
    await expect(new CreateBatcher(store).createRun(init('x'), gone.signal)).rejects.toThrow('gone');
    expect(sent()).toBe(0);
  });
});

/** Resolves `p` while moving the manual clock to each sleeper in turn (the retries' backoffs). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise<void>((r) => setImmediate(r));
}

async function ticking<T>(clock: ManualClock, p: Promise<T>): Promise<T> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 1000 && !done; i++) if (!(await clock.tick())) await new Promise<void>((r) => setImmediate(r));
  return p;
}

describe('retryingCreates', () => {
  const away = (): BatonError => new BatonError('store-unreachable', 'cannot reach the store: Connection terminated unexpectedly');

  /** A memory store whose creations fail `fails` times, each after landing when `lands`, then go through. */
  function flaky(fails: number, lands: boolean): { store: MemoryStore; creates: Pick<RunStore, 'createRun'>; calls: () => number } {
    const store = new MemoryStore();
    let calls = 0;
    return {
      store,
      calls: () => calls,
      creates: {
        async createRun(x) {
          calls++;
          if (calls > fails) return store.createRun(x);
          if (lands) await store.createRun(x).catch(() => undefined);
          throw away();
        },
      },
    };
  }

  test('a store away for a moment: the creation waits it out, with one line down and one up for all that waited', async () => {
    const clock = new ManualClock(0);
    const { store, creates, calls } = flaky(3, false);
    const heard: string[] = [];
    const c = retryingCreates(creates, store, new StoreWaits(clock, 60_000, (t) => heard.push(t.state)));
    const done = Promise.all([c.createRun(init('a')), c.createRun(init('b'))]);
    await ticking(clock, done);
    expect(calls()).toBe(5);
    expect(await store.run('a')).toBeDefined();
    expect(await store.run('b')).toBeDefined();
    expect(heard).toEqual(['down', 'up']);
  });

  test('a creation that landed without its answer is its own run on the next try; another run under the id is still refused', async () => {
    const clock = new ManualClock(0);
    const { store, creates } = flaky(1, true);
    const c = retryingCreates(creates, store, new StoreWaits(clock, 60_000));
    await ticking(clock, c.createRun(init('mine')));
    expect((await store.run('mine'))?.createdAt).toBe(1_000);
    const other = init('mine');
    other.run.createdAt = 2_000;
    await expect(c.createRun(other)).rejects.toMatchObject({ code: 'run-exists' });
  });

  test('retryMs 0 for one creation: one try, its failure at once (a server answers 503), and nothing is created when the store is back', async () => {
    const clock = new ManualClock(0);
    const { store, creates, calls } = flaky(1, false);
    const c = retryingCreates(creates, store, new StoreWaits(clock, 60_000));
    await expect(c.createRun(init('once'), { retryMs: 0 })).rejects.toMatchObject({ code: 'store-unreachable' });
    expect(calls()).toBe(1);
    await clock.tick();
    expect(calls()).toBe(1);
    expect(await store.run('once')).toBeUndefined();
  });

  test('a creation waiting out the store is dropped when its signal aborts: no more tries, nothing created', async () => {
    const clock = new ManualClock(0);
    const { store, creates, calls } = flaky(2, false);
    const c = retryingCreates(creates, store, new StoreWaits(clock, 60_000));
    const gone = new AbortController();
    const p = c.createRun(init('dropped'), { signal: gone.signal });
    p.catch(() => undefined);
    await until(() => calls() === 1);
    gone.abort(new Error('the client went away'));
    await expect(p).rejects.toThrow('the client went away');
    for (let i = 0; i < 5; i++) await clock.tick();
    expect(calls()).toBe(1);
    expect(await store.run('dropped')).toBeUndefined();
  });

  test('not a store that is away (a taken id, a bad commit), or past retryMs: the error at once', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryStore();
    await store.createRun(init('taken'));
    await expect(retryingCreates(store, store, new StoreWaits(clock, 60_000)).createRun(init('taken'))).rejects.toMatchObject({ code: 'run-exists' });
    const { creates } = flaky(100, false);
    await expect(ticking(clock, retryingCreates(creates, store, new StoreWaits(clock, 1_000)).createRun(init('x')))).rejects.toMatchObject({ code: 'store-unreachable' });
    expect(clock.now()).toBeLessThan(10_000);
  });
});

/**
 * The store conformance suite: one contract, run against every store (memory, SQLite, PostgreSQL)
 * from a three-line test file each. It registers vitest blocks; the harness says how to get a fresh
 * store and a second instance over the same data (another process's view).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Json } from '../core/json.js';
import type { RunEvent } from '../engine/events.js';
import { HELD, type Commit, type LeaseExpectation, type RunFilter, type RunStore, type TaskRow, type WorkHint } from '../engine/ports.js';
import { log, newRun, T0, task, TRICKY, WORKFLOW } from './testing.js';

export { newRun, task } from './testing.js';

export interface StoreHarness {
  /** A new, empty store. The suite closes it. */
  create(): Promise<RunStore>;
  /** Another instance over the same data as `store` (a second process's view). Memory: the store itself. */
  peer(store: RunStore): Promise<RunStore>;
}


function commitOf(events: RunEvent[], tasks: TaskRow[] = [], run: Partial<Commit['run']> = {}, expect?: LeaseExpectation[]): Commit {
  const c: Commit = { events, tasks, run: { status: 'running', updatedAt: T0 + 100, endedAt: null, costUsd: 0, wakeAt: null, ...run } };
  if (expect) c.expect = expect;
  return c;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as { code?: string }).code ?? 'no code';
  }
  return 'resolved';
}

const json = (v: unknown): string => JSON.stringify(v);

export function storeConformance(name: string, h: StoreHarness): void {
  describe(`store conformance: ${name}`, () => {
    const open: RunStore[] = [];
    const fresh = async (): Promise<RunStore> => {
      const s = await h.create();
      open.push(s);
      return s;
    };
    const peer = async (s: RunStore): Promise<RunStore> => {
      const p = await h.peer(s);
      if (p !== s) open.push(p);
      return p;
    };
    afterEach(async () => {
      for (const s of open.splice(0).reverse()) await s.close();
    });

    describe('createRun and reads', () => {
      it('round-trips every field of the run, workflow, tasks and events; outputs byte for byte', async () => {
        const s = await fresh();
        const init = newRun('r1', { events: 3, tasks: [task('a', { input: TRICKY, output: TRICKY, failure: { code: 'Timeout', message: 'slow', retryable: true, details: { ms: 5 } } }), task('b', { notBefore: T0 + 5 })] });
        init.run.initialState = { seen: ['x'], nested: TRICKY };
        init.run.trigger = ['a', 1, null, { b: TRICKY }] as Json;
        init.commit.run = { status: 'waiting', updatedAt: T0 + 7, endedAt: T0 + 9, costUsd: 0.1 + 0.2, wakeAt: T0 + 60_000 };
        const completed: RunEvent = { seq: 3, at: T0 + 3, type: 'task.completed', phase: 'a', task_id: 't-a', attempt: 1, output: TRICKY, extra_keys: [], cost_usd: 0.01 };
        init.commit.events[2] = completed;
        await s.createRun(init);

        const run = await s.run('r1');
        expect(run).toEqual({ ...init.run, ...init.commit.run, seq: 3 });
        expect(json(run!.trigger)).toBe(json(init.run.trigger));
        expect(json(run!.initialState)).toBe(json(init.run.initialState));
        expect(await s.workflow(WORKFLOW.hash)).toEqual(WORKFLOW);
        expect(await s.workflow('b'.repeat(64))).toBeUndefined();

        const events = await s.events('r1');
        expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
        expect(json(events)).toBe(json(init.commit.events));
        expect(json(await s.events('r1', 2))).toBe(json([completed]));
        // a seq past any a run can hold (a client's `?after=` or Last-Event-ID) is nothing after it, not a
        // store failure (PostgreSQL's integer column refused 2^31 with 22003: a 503 for a caller's number)
        for (const after of [3, 2 ** 31, 1e20, Number.MAX_SAFE_INTEGER]) expect(await s.events('r1', after)).toEqual([]);
        for (const before of [0, -1, -(2 ** 31) - 1]) expect((await s.events('r1', before)).map((e) => e.seq)).toEqual([1, 2, 3]);
        // a limit: the first events after the seq, no more (a page of a long log reads what it shows)
        expect((await s.events('r1', 0, 2)).map((e) => e.seq)).toEqual([1, 2]);
        expect((await s.events('r1', 1, 1)).map((e) => e.seq)).toEqual([2]);
        expect((await s.events('r1', 2, 5)).map((e) => e.seq)).toEqual([3]);
        expect((await s.events('r1', -1, 1)).map((e) => e.seq)).toEqual([1]);
        expect(await s.events('r1', 2 ** 31, 1)).toEqual([]);

        const tasks = (await s.tasks('r1')).sort((x, y) => (x.phase < y.phase ? -1 : 1));
        expect(tasks).toEqual(init.commit.tasks);
        expect(json(tasks[0]!.output)).toBe(json(TRICKY));
        expect(json(tasks[0]!.input)).toBe(json(TRICKY));
      });

      it('refuses a second run with the same id (run-exists) and keeps the first', async () => {
        const s = await fresh();
        await s.createRun(newRun('dup'));
        const again = newRun('dup', { events: 2, createdAt: T0 + 1 });
        expect(await codeOf(s.createRun(again))).toBe('run-exists');
        expect((await s.run('dup'))!.createdAt).toBe(T0);
        expect(await s.events('dup')).toHaveLength(1);
      });

      it('stores a workflow once when several runs share it', async () => {
        const s = await fresh();
        await s.createRun(newRun('w1'));
        await s.createRun(newRun('w2'));
        expect(await s.workflow(WORKFLOW.hash)).toEqual(WORKFLOW);
      });

      it('answers reads of an unknown run with nothing, and transact with unknown-run', async () => {
        const s = await fresh();
        expect(await s.run('nope')).toBeUndefined();
        expect(await s.events('nope')).toEqual([]);
        expect(await s.tasks('nope')).toEqual([]);
        expect(await codeOf(s.transact('nope', 0, () => ({ commit: null, value: 1 })))).toBe('unknown-run');
      });

      it('refuses a first commit whose seqs do not start at 1 or are not contiguous, writing nothing', async () => {
        const s = await fresh();
        const bad = newRun('bad', { events: 2 });
        bad.commit.events[1] = log(3, 'a', 'gap');
        expect(await codeOf(s.createRun(bad))).toBe('store');
        expect(await s.run('bad')).toBeUndefined();
        expect(await s.events('bad')).toEqual([]);
        const late = newRun('late');
        late.commit.events[0] = { ...late.commit.events[0]!, seq: 2 };
        expect(await codeOf(s.createRun(late))).toBe('store');
        expect(await s.run('late')).toBeUndefined();
      });

      it('createRuns: many runs in one call, each as createRun would store it; a taken id, a duplicate and a bad first commit refused alone', async () => {
        const s = await fresh();
        if (!s.createRuns) return; // optional: a store without it creates each run by createRun
        await s.createRun(newRun('taken'));
        const a = newRun('a', { events: 3, tasks: [task('x', { input: TRICKY }), task('y', { notBefore: T0 + 5 })] });
        a.run.initialState = { nested: TRICKY };
        a.run.trigger = ['t', null, { b: TRICKY }] as Json;
        a.commit.run = { status: 'waiting', updatedAt: T0 + 7, endedAt: null, costUsd: 0.1 + 0.2, wakeAt: T0 + 60_000 };
        const bad = newRun('bad', { events: 2 });
        bad.commit.events[1] = log(3, 'a', 'gap');
        const other = { ...newRun('b', { createdAt: T0 + 1 }), workflow: { ...WORKFLOW, hash: 'c'.repeat(64), name: 'other' } };
        other.run = { ...other.run, workflowHash: 'c'.repeat(64), workflowName: 'other' };
        const out = await s.createRuns([a, newRun('taken', { events: 2 }), bad, other, newRun('a', { createdAt: T0 + 9 })]);
        expect(out.map((e) => (e === undefined ? 'created' : ((e as { code?: string }).code ?? 'no code')))).toEqual(['created', 'run-exists', 'store', 'created', 'run-exists']);
        // each created run reads back as createRun stores it
        expect(await s.run('a')).toEqual({ ...a.run, ...a.commit.run, seq: 3 });
        expect(json((await s.run('a'))!.trigger)).toBe(json(a.run.trigger));
        expect(json(await s.events('a'))).toBe(json(a.commit.events));
        expect((await s.tasks('a')).sort((x, y) => (x.phase < y.phase ? -1 : 1))).toEqual(a.commit.tasks);
        expect(await s.run('b')).toMatchObject({ runId: 'b', workflowHash: 'c'.repeat(64), seq: 1 });
        expect(await s.workflow('c'.repeat(64))).toEqual(other.workflow);
        expect(await s.workflow(WORKFLOW.hash)).toEqual(WORKFLOW);
        // the refused ones wrote nothing: the taken run is as it was, the bad one is not there
        expect(await s.events('taken')).toHaveLength(1);
        expect(await s.run('bad')).toBeUndefined();
        expect(await s.events('bad')).toEqual([]);
        expect((await s.runs({ limit: 10 })).map((r) => r.runId).sort()).toEqual(['a', 'b', 'taken']);
        // another process sees them, and a worker asking for work finds their ready tasks
        const p = await peer(s);
        expect((await p.run('b'))?.seq).toBe(1);
        expect(await s.createRuns([])).toEqual([]);
      });

      it('lists runs most recent first, filtered by status, limited', async () => {
        const s = await fresh();
        await s.createRun(newRun('old', { createdAt: T0 }));
        await s.createRun(newRun('mid', { createdAt: T0 + 10, status: 'waiting' }));
        await s.createRun(newRun('new', { createdAt: T0 + 20 }));
        await s.createRun(newRun('done', { createdAt: T0 + 5, status: 'completed' }));
        expect((await s.runs()).map((r) => r.runId)).toEqual(['new', 'mid', 'done', 'old']);
        expect((await s.runs({ status: ['running'] })).map((r) => r.runId)).toEqual(['new', 'old']);
        expect((await s.runs({ status: ['running', 'waiting'], limit: 2 })).map((r) => r.runId)).toEqual(['new', 'mid']);
        expect((await s.runs({ status: ['failed'] })).map((r) => r.runId)).toEqual([]);
        expect(await s.runs({ status: [] })).toEqual([]);
        expect((await s.runs({ limit: 1 }))[0]).toEqual(await s.run('new'));
      });

      it('lists the runs after a cursor (created before it, or at its time with a smaller id) and of one workflow', async () => {
        const s = await fresh();
        // three at one time: the id breaks the tie, so a page that ends among them goes on after the last
        await s.createRun(newRun('r1', { createdAt: T0 }));
        await s.createRun(newRun('r2a', { createdAt: T0 + 10, workflowName: 'other' }));
        await s.createRun(newRun('r2b', { createdAt: T0 + 10 }));
        await s.createRun(newRun('r2c', { createdAt: T0 + 10, status: 'completed' }));
        await s.createRun(newRun('r3', { createdAt: T0 + 20, workflowName: 'other' }));
        const ids = async (f: RunFilter): Promise<string[]> => (await s.runs(f)).map((r) => r.runId);
        expect(await ids({})).toEqual(['r3', 'r2c', 'r2b', 'r2a', 'r1']);
        expect(await ids({ before: { createdAt: T0 + 10, runId: 'r2c' } })).toEqual(['r2b', 'r2a', 'r1']);
        expect(await ids({ before: { createdAt: T0 + 10, runId: 'r2b' }, limit: 1 })).toEqual(['r2a']);
        expect(await ids({ before: { createdAt: T0 + 10, runId: 'r2a' } })).toEqual(['r1']);
        expect(await ids({ before: { createdAt: T0, runId: 'r1' } })).toEqual([]);
        expect(await ids({ workflow: 'other' })).toEqual(['r3', 'r2a']);
        expect(await ids({ workflow: 'other', before: { createdAt: T0 + 20, runId: 'r3' } })).toEqual(['r2a']);
        expect(await ids({ workflow: 'nothing' })).toEqual([]);
        expect(await ids({ status: ['running'], before: { createdAt: T0 + 10, runId: 'r2c' } })).toEqual(['r2b', 'r2a', 'r1']);
        expect(await ids({ status: ['completed'], workflow: 'other' })).toEqual([]);
      });
    });

    describe('transact', () => {
      it('hands decide exactly the events after knownSeq', async () => {
        const s = await fresh();
        await s.createRun(newRun('d', { events: 2 }));
        const seen: number[][] = [];
        const see = (known: number): Promise<unknown> => s.transact('d', known, (delta) => (seen.push(delta.map((e) => e.seq)), { commit: null, value: null }));
        await see(0);
        await see(1);
        await see(2);
        await s.transact('d', 2, () => ({ commit: commitOf([log(3, 'a', 'x'), log(4, 'b', 'y')]), value: null }));
        await see(2);
        await see(9);
        expect(seen).toEqual([[1, 2], [2], [], [3, 4], []]);
        const delta: RunEvent[][] = [];
        await s.transact('d', 3, (d) => (delta.push(d), { commit: null, value: null }));
        expect(json(delta[0])).toBe(json([log(4, 'b', 'y')]));
      });

      it('commits events, upserts tasks by phase and rewrites the run row; returns the value', async () => {
        const s = await fresh();
        await s.createRun(newRun('c', { tasks: [task('a'), task('b')] }));
        const claimed = task('a', { status: 'running', attempt: 1, leaseOwner: 'w1', leaseExpiresAt: T0 + 30_000, input: { q: 1 }, updatedAt: T0 + 50 });
        const added = task('c', { agent: 'y', notBefore: T0 + 99 });
        const r = await s.transact('c', 1, () => ({
          commit: commitOf([log(2, 'a', 'claimed')], [claimed, added], { status: 'waiting', updatedAt: T0 + 50, endedAt: T0 + 51, costUsd: 1.25, wakeAt: T0 + 1000 }),
          value: 'v',
        }));
        expect(r).toEqual({ ok: true, value: 'v' });
        const tasks = (await s.tasks('c')).sort((x, y) => (x.phase < y.phase ? -1 : 1));
        expect(tasks).toEqual([claimed, task('b'), added]);
        const run = await s.run('c');
        expect(run).toMatchObject({ status: 'waiting', updatedAt: T0 + 50, endedAt: T0 + 51, costUsd: 1.25, wakeAt: T0 + 1000, seq: 2 });
        expect(run!.createdAt).toBe(T0);
        // a commit without events still writes its projections; the run keeps its seq
        await s.transact('c', 2, () => ({ commit: commitOf([], [task('b', { status: 'cancelled' })], { status: 'cancelled' }), value: null }));
        expect((await s.run('c'))!.seq).toBe(2);
        expect((await s.tasks('c')).find((t) => t.phase === 'b')!.status).toBe('cancelled');
      });

      it('keeps the last row when a commit names a phase twice', async () => {
        const s = await fresh();
        await s.createRun(newRun('twice'));
        await s.transact('twice', 1, () => ({ commit: commitOf([log(2, 'a', 'x')], [task('a', { attempt: 1 }), task('a', { attempt: 2 })]), value: null }));
        expect((await s.tasks('twice')).map((t) => t.attempt)).toEqual([2]);
      });

      it('writes nothing for a null commit', async () => {
        const s = await fresh();
        await s.createRun(newRun('n'));
        const before = await s.run('n');
        expect(await s.transact('n', 1, () => ({ commit: null, value: 7 }))).toEqual({ ok: true, value: 7 });
        expect(await s.run('n')).toEqual(before);
      });

      it('writes nothing when decide throws, and lets its error through', async () => {
        const s = await fresh();
        await s.createRun(newRun('t', { tasks: [task('a')] }));
        const boom = new Error('decide failed');
        await expect(s.transact('t', 1, () => { throw boom; })).rejects.toBe(boom);
        expect(await s.events('t')).toHaveLength(1);
        expect((await s.run('t'))!.seq).toBe(1);
        expect(await s.tasks('t')).toEqual([task('a')]);
      });

      it('refuses a commit with a bad seq (gap, repeat, not contiguous) as a store fault, writing nothing', async () => {
        const s = await fresh();
        await s.createRun(newRun('q', { tasks: [task('a')] }));
        const before = { run: await s.run('q'), tasks: await s.tasks('q') };
        for (const seqs of [[3], [1], [2, 2], [2, 4], [0]]) {
          const events = seqs.map((n) => log(n, 'a', 'bad'));
          const code = await codeOf(s.transact('q', 1, () => ({ commit: commitOf(events, [task('a', { status: 'failed' })], { status: 'failed' }), value: null })));
          expect(code, `seqs ${json(seqs)}`).toBe('store');
        }
        expect(await s.events('q')).toHaveLength(1);
        expect(await s.run('q')).toEqual(before.run);
        expect(await s.tasks('q')).toEqual(before.tasks);
      });

      describe('expectations', () => {
        const lease = T0 + 30_000;
        const setup = async (): Promise<RunStore> => {
          const s = await fresh();
          const running = task('a', { status: 'running', attempt: 2, leaseOwner: 'w1', leaseExpiresAt: lease });
          await s.createRun(newRun('x', { tasks: [running, task('b'), task('c', { status: 'completed', attempt: 1 })] }));
          return s;
        };
        const attempt = (s: RunStore, expect: LeaseExpectation[]): Promise<unknown> =>
          s.transact('x', 1, () => ({ commit: commitOf([log(2, 'a', 'done')], [task('a', { status: 'completed', attempt: 2 })], {}, expect), value: 'written' }));

        it('commits while the lease is still held by the owner, for that attempt', async () => {
          const s = await setup();
          expect(await attempt(s, [{ phase: 'a', attempt: 2, owner: 'w1' }])).toEqual({ ok: true, value: 'written' });
          expect((await s.tasks('x')).find((t) => t.phase === 'a')!.status).toBe('completed');
        });

        it('refuses (ok: false, the first failed expectation) and writes nothing when the lease is not held', async () => {
          const cases: LeaseExpectation[][] = [
            [{ phase: 'a', attempt: 2, owner: 'w2' }],
            [{ phase: 'a', attempt: 1, owner: 'w1' }],
            [{ phase: 'b', attempt: 0, owner: 'w1' }],
            [{ phase: 'c', attempt: 1, owner: 'w1' }],
            [{ phase: 'zz', attempt: 1, owner: 'w1' }],
            [{ phase: 'a', attempt: 2, owner: 'w1' }, { phase: 'b', attempt: 0, owner: 'w1' }],
          ];
          for (const c of cases) {
            const s = await setup();
            const r = await attempt(s, c);
            expect(r, json(c)).toEqual({ ok: false, reason: 'expectation', failed: c[c.length - 1] });
            expect(await s.events('x')).toHaveLength(1);
            expect((await s.run('x'))!.seq).toBe(1);
            expect((await s.tasks('x')).find((t) => t.phase === 'a')!.status).toBe('running');
            await s.close();
          }
        });

        it('allows a takeover only when the lease expired before the given time', async () => {
          const s = await setup();
          const early = await attempt(s, [{ phase: 'a', attempt: 2, owner: 'w1', expiredBefore: lease }]);
          expect(early).toMatchObject({ ok: false });
          expect(await attempt(s, [{ phase: 'a', attempt: 2, owner: 'w1', expiredBefore: lease + 1 }])).toEqual({ ok: true, value: 'written' });
        });
      });

      it('serialises concurrent transactions from several instances: gap-free seqs, each decide sees every earlier event', async () => {
        const s = await fresh();
        await s.createRun(newRun('conc'));
        const stores = [s, await peer(s), await peer(s)];
        const perStore = 15;
        const deltas: number[] = [];
        const one = (st: RunStore, i: number): Promise<unknown> =>
          st.transact('conc', 0, (delta) => {
            deltas.push(delta.length);
            // every earlier commit is visible: the log is 1..n with no hole
            delta.forEach((e, k) => expect(e.seq).toBe(k + 1));
            const seq = delta.length + 1;
            return { commit: commitOf([log(seq, 'a', `from ${i}`)], [task('a', { attempt: seq })], { costUsd: seq }), value: seq };
          });
        const all = stores.flatMap((st, k) => Array.from({ length: perStore }, (_, i) => one(st, k * 100 + i)));
        const values = (await Promise.all(all)).map((r) => (r as { value: number }).value);
        const n = stores.length * perStore;
        expect([...values].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 2));
        expect([...deltas].sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
        const events = await s.events('conc');
        expect(events.map((e) => e.seq)).toEqual(Array.from({ length: n + 1 }, (_, i) => i + 1));
        expect(await s.run('conc')).toMatchObject({ seq: n + 1, costUsd: n + 1 });
        expect((await s.tasks('conc'))[0]!.attempt).toBe(n + 1);
      });
    });

    describe('snapshots', () => {
      const snap = (seq: number, format = 1, bytes = [seq, 0, 255, 7]): { seq: number; format: number; body: Uint8Array } => ({ seq, format, body: Uint8Array.from(bytes) });
      it('reads the latest snapshot of the format asked and only the events after it; every event without one', async () => {
        const s = await fresh();
        if (!s.readState || !s.saveSnapshot) return;
        await s.createRun(newRun('s1', { events: 5 }));
        const none = await s.readState('s1', 1);
        expect(none.snapshot).toBeUndefined();
        expect(none.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
        await s.saveSnapshot('s1', snap(3));
        const some = await s.readState('s1', 1);
        expect(some.snapshot?.seq).toBe(3);
        expect(Array.from(some.snapshot!.body)).toEqual([3, 0, 255, 7]);
        expect(some.events.map((e) => e.seq)).toEqual([4, 5]);
        expect(some.events).toEqual(none.events.slice(3));
        // another format is never read: the whole log instead
        const other = await s.readState('s1', 2);
        expect(other.snapshot).toBeUndefined();
        expect(other.events).toHaveLength(5);
        // another process sees it too
        const p = await peer(s);
        expect((await p.readState!('s1', 1)).snapshot?.seq).toBe(3);
        expect(await s.readState('nope', 1)).toEqual({ snapshot: undefined, events: [] });
      });

      it('keeps the latest: an older snapshot never replaces a newer one', async () => {
        const s = await fresh();
        if (!s.readState || !s.saveSnapshot) return;
        await s.createRun(newRun('s2', { events: 6 }));
        await s.saveSnapshot('s2', snap(4));
        await s.saveSnapshot('s2', snap(2));
        expect((await s.readState('s2', 1)).snapshot?.seq).toBe(4);
        await s.saveSnapshot('s2', snap(6, 1, [1, 2, 3]));
        const r = await s.readState('s2', 1);
        expect(r.snapshot?.seq).toBe(6);
        expect(Array.from(r.snapshot!.body)).toEqual([1, 2, 3]);
        expect(r.events).toEqual([]);
      });
    });

    describe('commitMany', () => {
      it('writes each run whose seq is still the one decided on, and refuses the others without writing them', async () => {
        const s = await fresh();
        if (!s.commitMany) return;
        await s.createRun(newRun('m1', { tasks: [task('a')] }));
        await s.createRun(newRun('m2', { tasks: [task('a')] }));
        await s.createRun(newRun('m3'));
        const claimed = task('a', { status: 'running', attempt: 1, leaseOwner: 'w1', leaseExpiresAt: T0 + 30_000, input: { q: TRICKY }, updatedAt: T0 + 50 });
        const r = await s.commitMany([
          { runId: 'm1', knownSeq: 1, commit: commitOf([log(2, 'a', 'one'), log(3, 'a', 'two')], [claimed], { costUsd: 2.5, wakeAt: T0 + 9 }), notify: true },
          // decided on an old state (seq 0): refused, nothing of it written
          { runId: 'm2', knownSeq: 0, commit: commitOf([log(1, 'a', 'stale')], [claimed], { costUsd: 9 }), notify: true },
          { runId: 'm3', knownSeq: 1, commit: commitOf([log(2, 'b', 'three')], [], { status: 'completed', endedAt: T0 + 60 }), notify: false },
        ]);
        expect(r.results).toEqual(['ok', 'conflict', 'ok']);
        if (r.now !== undefined) expect(Math.abs(r.now - Date.now())).toBeLessThan(60_000);
        expect((await s.events('m1')).map((e) => e.seq)).toEqual([1, 2, 3]);
        expect(json((await s.events('m1', 1)).map((e) => (e as { message?: string }).message))).toBe(json(['one', 'two']));
        expect(await s.tasks('m1')).toEqual([claimed]);
        expect(await s.run('m1')).toMatchObject({ seq: 3, costUsd: 2.5, wakeAt: T0 + 9 });
        expect((await s.events('m2')).map((e) => e.seq)).toEqual([1]);
        expect(await s.tasks('m2')).toEqual([task('a')]);
        expect(await s.run('m2')).toMatchObject({ seq: 1, costUsd: 0 });
        expect(await s.run('m3')).toMatchObject({ seq: 2, status: 'completed', endedAt: T0 + 60 });
      });

      it('conflicts with a transact that committed first, and a transact sees what it wrote', async () => {
        const s = await fresh();
        if (!s.commitMany) return;
        const other = await peer(s);
        await s.createRun(newRun('mx'));
        await other.transact('mx', 1, () => ({ commit: commitOf([log(2, 'a', 'theirs')]), value: null }));
        expect((await s.commitMany([{ runId: 'mx', knownSeq: 1, commit: commitOf([log(2, 'a', 'mine')]), notify: true }])).results).toEqual(['conflict']);
        expect((await s.commitMany([{ runId: 'mx', knownSeq: 2, commit: commitOf([log(3, 'a', 'mine')]), notify: true }])).results).toEqual(['ok']);
        const seen: number[] = [];
        await other.transact('mx', 2, (delta) => (seen.push(...delta.map((e) => e.seq)), { commit: null, value: null }));
        expect(seen).toEqual([3]);
        expect((await s.events('mx')).map((e) => (e as { message?: string }).message)).toEqual([undefined, 'theirs', 'mine']);
      });

      it('races with transacts from other instances without losing or repeating a seq', async () => {
        const s = await fresh();
        if (!s.commitMany) return;
        const others = [await peer(s), await peer(s)];
        await s.createRun(newRun('race'));
        let known = 1;
        let fast = 0;
        const viaBatch = async (): Promise<void> => {
          for (let i = 0; i < 20; i++) {
            const r = await s.commitMany!([{ runId: 'race', knownSeq: known, commit: commitOf([log(known + 1, 'a', 'batch')], [], { costUsd: known + 1 }), notify: true }]);
            if (r.results[0] === 'ok') {
              known++;
              fast++;
            } else known = (await s.run('race'))!.seq;
          }
        };
        const viaTransact = (st: RunStore): Promise<unknown> =>
          Promise.all(Array.from({ length: 10 }, () => st.transact('race', 0, (delta) => ({ commit: commitOf([log(delta.length + 1, 'b', 'tx')], [], { costUsd: delta.length + 1 }), value: null }))));
        await Promise.all([viaBatch(), ...others.map(viaTransact)]);
        const events = await s.events('race');
        expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
        expect(events.length).toBe(1 + 20 + fast);
        expect(await s.run('race')).toMatchObject({ seq: events.length, costUsd: events.length });
      });

      it('refuses lease expectations (takeovers go through transact)', async () => {
        const s = await fresh();
        if (!s.commitMany) return;
        await s.createRun(newRun('mq'));
        expect(await codeOf(s.commitMany([{ runId: 'mq', knownSeq: 1, commit: commitOf([log(2, 'a', 'x')], [], {}, [{ phase: 'a', attempt: 1, owner: 'w' }]), notify: true }]))).toBe('internal');
        expect((await s.events('mq')).length).toBe(1);
      });
    });

    describe('activity', () => {
      it('counts the active runs, their ready (not held) and running tasks by agent, and names those that opened a gate', async () => {
        const s = await fresh();
        if (!s.activity) return;
        expect(await s.activity()).toEqual({ runs: { running: 0, waiting: 0 }, ready: {}, running: {}, gated: [] });
        await s.createRun(newRun('r1', { tasks: [task('a'), task('b', { notBefore: HELD }), task('c', { status: 'running', agent: 'y', attempt: 1, leaseOwner: 'w', leaseExpiresAt: T0 + 1000 }), task('d', { status: 'completed' }), task('e', { notBefore: T0 + 60_000 })] }));
        const gated = newRun('r2', { status: 'waiting', tasks: [task('a', { agent: 'z' }), task('b', { status: 'awaiting_approval' })] });
        gated.commit.events.push({ seq: 2, at: T0 + 2, type: 'gate.opened', gate_id: 'g1', kind: 'phase', phase: 'b', approvers: [], reason: 'approve b' } as unknown as RunEvent);
        await s.createRun(gated);
        // an ended run counts for nothing, whatever its rows say
        await s.createRun(newRun('r3', { status: 'completed', tasks: [task('a'), task('b', { status: 'running', agent: 'y' })] }));
        const a = await (await peer(s)).activity!();
        // a ready task whose retry delay is still running waits for a worker all the same: it is in the queue
        expect(a).toEqual({ runs: { running: 1, waiting: 1 }, ready: { x: 2, z: 1 }, running: { y: 1 }, gated: ['r2'] });
      });
    });

    describe('findWork', () => {
      const now = T0 + 10_000;
      const setup = async (): Promise<RunStore> => {
        const s = await fresh();
        await s.createRun(newRun('ready-x', { createdAt: T0 + 1, tasks: [task('a'), task('b'), task('c', { agent: 'y', status: 'pending' })] }));
        await s.createRun(newRun('later', { createdAt: T0 + 2, tasks: [task('a', { notBefore: now + 1 }), task('b', { notBefore: now, agent: 'y' })] }));
        await s.createRun(newRun('timer', { createdAt: T0 + 3, status: 'waiting', wakeAt: now, tasks: [task('a', { status: 'awaiting_approval' })] }));
        await s.createRun(newRun('timer-later', { createdAt: T0 + 4, status: 'waiting', wakeAt: now + 1 }));
        const held = task('b', { status: 'running', attempt: 1, leaseOwner: 'w2', leaseExpiresAt: now + 1 });
        await s.createRun(newRun('lease', { createdAt: T0 + 5, tasks: [task('a', { status: 'running', attempt: 3, leaseOwner: 'w1', leaseExpiresAt: now - 1 }), held] }));
        await s.createRun(newRun('done', { createdAt: T0 + 6, status: 'completed', wakeAt: now - 5, tasks: [task('a'), task('b', { status: 'running', attempt: 1, leaseOwner: 'w', leaseExpiresAt: 0 })] }));
        await s.createRun(newRun('cancelled', { createdAt: T0, status: 'cancelled', tasks: [task('a')] }));
        return s;
      };

      it('finds ready tasks per agent (one hint per run), due timers and expired leases of live runs, oldest run first', async () => {
        const s = await setup();
        // each hint carries its run's seq (a worker holding the run at that seq knows what is due)
        const find = async (q: Parameters<RunStore['findWork']>[0]): Promise<WorkHint[]> =>
          (await s.findWork(q)).map((h) => {
            expect(h.seq).toBe(1);
            const { seq: _seq, ...rest } = h;
            return rest;
          });
        expect(await find({ agents: null, now, limit: 100 })).toEqual([
          { runId: 'ready-x', reason: 'ready' },
          { runId: 'later', reason: 'ready' },
          { runId: 'timer', reason: 'timer' },
          { runId: 'lease', reason: 'lease', phase: 'a', attempt: 3, owner: 'w1' },
        ]);
        expect(await find({ agents: ['x'], now, limit: 100 })).toEqual([
          { runId: 'ready-x', reason: 'ready' },
          { runId: 'timer', reason: 'timer' },
          { runId: 'lease', reason: 'lease', phase: 'a', attempt: 3, owner: 'w1' },
        ]);
        expect((await s.findWork({ agents: ['y', 'z'], now, limit: 100 })).map((h) => `${h.runId}:${h.reason}`)).toEqual(['later:ready', 'timer:timer', 'lease:lease']);
        expect((await s.findWork({ agents: [], now, limit: 100 })).map((h) => `${h.runId}:${h.reason}`)).toEqual(['timer:timer', 'lease:lease']);
      });

      it('waits for notBefore, wakeAt and lease expiry', async () => {
        const s = await setup();
        const later = (await s.findWork({ agents: null, now: now + 2, limit: 100 })).map((h) => `${h.runId}:${h.reason}${h.phase ? `:${h.phase}` : ''}`);
        expect(later).toEqual(['ready-x:ready', 'later:ready', 'timer:timer', 'timer-later:timer', 'lease:lease:a', 'lease:lease:b']);
        expect((await s.findWork({ agents: null, now: T0, limit: 100 })).map((h) => `${h.runId}:${h.reason}`)).toEqual(['ready-x:ready']);
      });

      it('never offers a task held by a gate, and offers the running tasks of owners named by ownersLike (live)', async () => {
        const s = await setup();
        await s.createRun(newRun('held', { createdAt: T0 + 7, tasks: [task('a', { notBefore: HELD })] }));
        await s.createRun(newRun('local', { createdAt: T0 + 8, tasks: [task('a', { status: 'running', attempt: 2, leaseOwner: 'host1:42:x', leaseExpiresAt: now + 60_000 })] }));
        const all = (await s.findWork({ agents: null, now: now + 10_000, limit: 100, ownersLike: 'host1:' })).map((h) => `${h.runId}:${h.reason}${h.live ? ':live' : ''}`);
        expect(all).not.toContain('held:ready');
        expect(all).toContain('local:lease:live');
        expect((await s.findWork({ agents: null, now: now + 10_000, limit: 100 })).map((h) => h.runId)).not.toContain('local');
      });

      it('leaves out the ready tasks named by skip (an agent of a run, or a whole run), so newer runs are offered', async () => {
        const s = await setup();
        const ready = async (skip: { runId: string; agent: string | null }[], limit = 100): Promise<string[]> =>
          (await s.findWork({ agents: null, now, limit, skip })).filter((h) => h.reason === 'ready').map((h) => h.runId);
        expect(await ready([])).toEqual(['ready-x', 'later']);
        // ready-x has only agent x ready; later has y ready now (x only at now + 1)
        expect(await ready([{ runId: 'ready-x', agent: 'x' }])).toEqual(['later']);
        expect(await ready([{ runId: 'later', agent: 'x' }])).toEqual(['ready-x', 'later']);
        expect(await ready([{ runId: 'later', agent: 'y' }])).toEqual(['ready-x']);
        expect(await ready([{ runId: 'ready-x', agent: null }, { runId: 'later', agent: 'y' }])).toEqual([]);
        // the oldest run skipped, the limit reaches the next one
        expect((await s.findWork({ agents: null, now, limit: 1, skip: [{ runId: 'ready-x', agent: 'x' }] })).map((h) => h.runId)).toEqual(['later']);
        // a skipped agent's task of another run is still offered
        expect(await ready([{ runId: 'ready-x', agent: 'y' }])).toEqual(['ready-x', 'later']);
      });

      it('returns at most limit hints, the oldest', async () => {
        const s = await setup();
        expect((await s.findWork({ agents: null, now, limit: 2 })).map((h) => h.runId)).toEqual(['ready-x', 'later']);
        expect(await s.findWork({ agents: null, now, limit: 0 })).toEqual([]);
      });

      it('gives each kind a share of the limit: many older timers due at once do not hide a newer ready run, nor ready runs a timer', async () => {
        const s = await fresh();
        for (let i = 0; i < 12; i++) await s.createRun(newRun(`t${i}`, { createdAt: T0 + i, status: 'waiting', wakeAt: now - 100 + i, tasks: [task('a', { status: 'awaiting_approval' })] }));
        await s.createRun(newRun('new', { createdAt: T0 + 50, tasks: [task('a')] }));
        const hints = (await s.findWork({ agents: null, now, limit: 8 })).map((h) => `${h.runId}:${h.reason}`);
        expect(hints).toEqual(['t0:timer', 't1:timer', 'new:ready', 't2:timer', 't3:timer', 't4:timer', 't5:timer', 't6:timer']);
        const r = await fresh();
        for (let i = 0; i < 12; i++) await r.createRun(newRun(`r${i}`, { createdAt: T0 + i, tasks: [task('a')] }));
        await r.createRun(newRun('due', { createdAt: T0 + 50, status: 'waiting', wakeAt: now }));
        expect((await r.findWork({ agents: null, now, limit: 8 })).map((h) => h.runId)).toContain('due');
        // under the limit, or with a limit too small to share, the oldest first as before
        expect((await s.findWork({ agents: null, now, limit: 3 })).map((h) => h.runId)).toEqual(['t0', 't1', 't2']);
      });

      it('forgets tasks once claimed or settled', async () => {
        const s = await setup();
        await s.transact('ready-x', 1, () => ({ commit: commitOf([log(2, 'a', 'claimed')], [task('a', { status: 'running', attempt: 1, leaseOwner: 'w', leaseExpiresAt: now + 5 }), task('b', { status: 'completed' })]), value: null }));
        await s.transact('timer', 1, () => ({ commit: commitOf([log(2, 'a', 'fired')], [], { status: 'waiting', wakeAt: null }), value: null }));
        await s.transact('lease', 1, () => ({ commit: commitOf([log(2, 'a', 'expired')], [task('a', { attempt: 3 })]), value: null }));
        expect((await s.findWork({ agents: ['x'], now, limit: 100 })).map((h) => `${h.runId}:${h.reason}`)).toEqual(['lease:ready']);
      });
    });

    describe('renewLeases', () => {
      it('extends the leases still held and returns the lost ones', async () => {
        const s = await fresh();
        const until = T0 + 99_000;
        await s.createRun(newRun('l1', { tasks: [task('a', { status: 'running', attempt: 1, leaseOwner: 'me', leaseExpiresAt: T0 }), task('b', { status: 'running', attempt: 2, leaseOwner: 'other', leaseExpiresAt: T0 }), task('c', { status: 'completed', attempt: 1 })] }));
        await s.createRun(newRun('l2', { tasks: [task('a', { status: 'running', attempt: 4, leaseOwner: 'me', leaseExpiresAt: T0 })] }));
        const held = [
          { runId: 'l1', phase: 'a', attempt: 1 },
          { runId: 'l1', phase: 'b', attempt: 2 },
          { runId: 'l1', phase: 'c', attempt: 1 },
          { runId: 'l2', phase: 'a', attempt: 3 },
          { runId: 'l2', phase: 'zz', attempt: 1 },
          { runId: 'nope', phase: 'a', attempt: 1 },
        ];
        const lost = await s.renewLeases('me', until, held);
        expect(lost).toEqual(held.slice(1));
        const leases = Object.fromEntries((await s.tasks('l1')).map((t) => [t.phase, t.leaseExpiresAt]));
        expect(leases).toEqual({ a: until, b: T0, c: null });
        expect((await s.tasks('l2'))[0]!.leaseExpiresAt).toBe(T0);
        expect(await s.renewLeases('me', until, [])).toEqual([]);
        expect(await s.renewLeases('me', until + 1, [{ runId: 'l2', phase: 'a', attempt: 4 }])).toEqual([]);
        expect((await s.tasks('l2'))[0]!.leaseExpiresAt).toBe(until + 1);
      });
    });

    describe('waitForChange', () => {
      // A store may wake its first waiter once as it starts listening (PostgreSQL: what changed
      // before LISTEN is unknown), so each test below waits once before measuring.
      it('resolves after maxMs when nothing changes', async () => {
        const s = await fresh();
        await s.waitForChange(300);
        const t = performance.now();
        await s.waitForChange(40);
        expect(performance.now() - t).toBeGreaterThanOrEqual(30);
      });

      it('resolves at once on an aborted signal and when the signal aborts', async () => {
        const s = await fresh();
        const t = performance.now();
        await s.waitForChange(60_000, AbortSignal.abort());
        const ac = new AbortController();
        const p = s.waitForChange(60_000, ac.signal);
        ac.abort();
        await p;
        expect(performance.now() - t).toBeLessThan(1_000);
      });

      it("is woken by another instance's commit well under a second", async () => {
        const s = await fresh();
        await s.createRun(newRun('wake'));
        const other = await peer(s);
        await s.waitForChange(300);
        let committed = false;
        let early = false;
        const p = s.waitForChange(10_000).then(() => void (early = !committed));
        await new Promise((r) => setTimeout(r, 30));
        const t = performance.now();
        await other.transact('wake', 1, () => ((committed = true), { commit: commitOf([log(2, 'a', 'x')]), value: null }));
        await p;
        expect(early).toBe(false);
        expect(performance.now() - t).toBeLessThan(900);
      });

      it('resolves pending waits on close and never rejects', async () => {
        const s = await h.create();
        const p = s.waitForChange(60_000);
        await s.close();
        await expect(p).resolves.toBeUndefined();
        await expect(s.waitForChange(10)).resolves.toBeUndefined();
      });
    });

    describe('takeChanged (stores whose changesComplete says it names every changed run)', () => {
      /** What `consumer` takes until `ids` are all named (a store that hears of commits asynchronously, a NOTIFY say). */
      const takeUntil = async (s: RunStore, consumer: object, ids: string[]): Promise<Map<string, number> | 'unknown'> => {
        const got = new Map<string, number>();
        const until = performance.now() + 5_000;
        for (;;) {
          const t = s.takeChanged!(consumer);
          if (t === 'unknown') return t;
          for (const [id, seq] of t) got.set(id, Math.max(seq, got.get(id) ?? 0));
          if (ids.every((id) => got.has(id)) || performance.now() > until) return got;
          await s.waitForChange(50);
        }
      };

      it("names the runs committed since each consumer's own last take, with their seq; other instances' commits too", async () => {
        const s = await fresh();
        if (!s.changesComplete) return;
        const other = await peer(s);
        const a = {};
        const b = {};
        // a consumer's first take: it heard of nothing before
        expect(s.takeChanged!(a)).toBe('unknown');
        expect(s.takeChanged!(b)).toBe('unknown');
        await s.createRun(newRun('t1'));
        await other.createRun(newRun('t2', { events: 2 }));
        await other.transact('t1', 1, () => ({ commit: commitOf([log(2, 'a', 'x'), log(3, 'a', 'y')]), value: null }));
        expect(await takeUntil(s, a, ['t1', 't2'])).toEqual(new Map([['t1', 3], ['t2', 2]]));
        // a's take left b's alone
        expect(await takeUntil(s, b, ['t1', 't2'])).toEqual(new Map([['t1', 3], ['t2', 2]]));
        // nothing since
        expect(s.takeChanged!(a)).toEqual(new Map());
        await s.commitMany!([{ runId: 't2', knownSeq: 2, commit: commitOf([log(3, 'a', 'z')]), notify: true }]);
        expect(await takeUntil(s, a, ['t2'])).toEqual(new Map([['t2', 3]]));
        // a forgotten consumer starts again from 'unknown'
        s.forgetChanged!(b);
        expect(s.takeChanged!(b)).toBe('unknown');
        expect(s.takeChanged!(b)).toEqual(new Map());
      });
    });
  });
}

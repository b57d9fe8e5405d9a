/** A worker that stops cleanly (SIGTERM, Ctrl-C of `baton worker`, `engine.stop`) hands back what it cannot finish: another worker takes it at once, not after the lease. */
import { describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { MemoryStore } from '../../src/store/memory.js';
import { eventsOf, header, until, wf } from './helpers.js';

const MODEL = wf(`${header()}workflow:
  slow: {assign: x, outputs: {by: string}}
  quick: {assign: y, outputs: {by: string}}`);

describe('engine.stop(graceMs)', () => {
  test('lets a quick attempt finish, hands a slow one back, and another worker takes it at once', async () => {
    const store = new MemoryStore();
    let started = 0;
    let release!: () => void;
    const quickDone = new Promise<void>((r) => (release = r));
    const a = createEngine({
      store,
      workerId: 'A',
      leaseMs: 86_400_000,
      agents: {
        x: () => ((started++), new Promise(() => undefined)),
        y: async () => {
          started++;
          await quickDone;
          return { by: 'A' };
        },
      },
    });
    const id = await a.create(MODEL, { runId: 'stop' });
    const driving = a.drive(id, undefined).catch(() => undefined);
    await until(() => started === 2, 'both attempts run');
    const stopping = a.stop(2000);
    setTimeout(release, 50);
    await stopping;
    await driving;
    const events = await store.events(id);
    // the quick attempt finished within the grace time and kept its output; the slow one was handed back
    expect(eventsOf(events, 'task.completed').map((e) => e.phase)).toEqual(['quick']);
    expect(eventsOf(events, 'task.lease_expired')).toMatchObject([{ phase: 'slow', owner: 'A', handed_back: true }]);
    const b = createEngine({ store, workerId: 'B', leaseMs: 86_400_000, agents: { x: () => ({ by: 'B' }), y: () => ({ by: 'B' }) } });
    const t0 = Date.now();
    const r = await b.drive(id, undefined);
    expect(r.status).toBe('completed');
    expect(r.phases['slow']).toMatchObject({ attempts: 2, output: { by: 'B' } });
    expect(Date.now() - t0).toBeLessThan(5000);
    await b.close();
  }, 20_000);
});

describe('engine.serve(signal)', () => {
  test('rejects with the error when its worker crashes, so a serving process does not live on doing nothing', async () => {
    const store = new MemoryStore();
    const e = createEngine({ store, agents: { x: () => ({}) }, faults: { at: 'flush.after-commit', hit: 2 } });
    const id = await e.create(wf(`${header()}workflow:\n  a: {assign: x}\n  b: {assign: x, depends_on: [a]}\n`), {});
    const stop = new AbortController();
    const outcome = await Promise.race([
      e.serve(stop.signal).then(
        () => 'resolved',
        (err: { code?: string }) => err.code,
      ),
      new Promise((r) => setTimeout(() => r('still serving'), 5_000)),
    ]);
    stop.abort();
    expect(outcome).toBe('fault-injected');
    expect((await store.run(id))?.status).toBe('running');
    // and a serve started after the crash rejects at once
    await expect(e.serve(new AbortController().signal)).rejects.toMatchObject({ code: 'fault-injected' });
    await e.close().catch(() => undefined);
  });
});

describe('attempts that ignore their abort', () => {
  test('a cancel of many of them at once raises no process warning (their grace timers share one listener)', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    const fan = wf(`${header()}workflow:
  a: {assign: w, outputs: {list: "integer[]"}}
  f: {assign: v, depends_on: [a], for_each: a.list, outputs: {n: integer}}`);
    let started = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const store = new MemoryStore();
    const e = createEngine({
      store,
      agents: {
        w: () => ({ list: Array.from({ length: 16 }, (_, i) => i) }),
        v: async () => {
          started++;
          await held;
          return { n: 1 };
        },
      },
    });
    const id = await e.create(fan, { runId: 'many-aborted' });
    const driving = e.drive(id, undefined);
    await until(() => started === 16, 'every item runs');
    await e.cancel(id);
    expect((await driving).status).toBe('cancelled');
    // a warning is emitted on a later tick
    await new Promise((r) => setTimeout(r, 10));
    release();
    await e.close();
    process.off('warning', onWarning);
    expect(warnings).toEqual([]);
  });
});

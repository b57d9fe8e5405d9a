/**
 * A question asked by an attempt (`ctx.requestInput`) outlives the process that asked it: `baton serve`
 * or `baton worker` is restarted, the answer comes later, and a serving worker takes it up. The process
 * that asked keeps the right to continue its attempt for a grace after the answer (30 s), because it may
 * still be waiting in memory; but a worker that stopped cleanly never continues it, and one known dead on
 * this host cannot either. Both used to hold the task for the whole grace: the answered task was stored as
 * due only 30 s later, so the new worker looked right past it. Now a stopping worker hands back the
 * attempts that wait for an answer, and an answer given where the asker is known dead says so: the task
 * is due at once. Real time and real stores; each run must end well within the grace.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import type { RunStore } from '../../src/engine/ports.js';
import { RESUME_GRACE_MS } from '../../src/engine/state.js';
import { MemoryStore } from '../../src/store/memory.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { testDatabase } from '../helpers/pg.js';
import { eventsOf, header, until, wf } from './helpers.js';

const db = testDatabase('baton_test_answer_after_stop');
beforeAll(db.create);
afterAll(db.drop);

const STORES: [string, () => Promise<RunStore> | RunStore][] = [
  ['memory', () => new MemoryStore()],
  ['sqlite', () => openSqliteStore(join(mkdtempSync(join(tmpdir(), 'baton-answer-after-stop-')), 'a.db'))],
  ['postgres', () => openPostgresStore(db.url)],
];

const MODEL = wf(`${header()}workflow:
  ask: {assign: asker, outputs: {answer: string}}
  after: {assign: plain, depends_on: [ask], inputs: {a: ask.answer}, outputs: {echo: string}}`);

/** Well under the grace the old code waited out. */
const PROMPT_MS = RESUME_GRACE_MS / 3;

function agents(who: string, asked: () => void) {
  return {
    asker: async (ctx: { requestInput(q: { question: string }): Promise<unknown> }) => {
      asked();
      return { answer: `${String(await ctx.requestInput({ question: 'which?' }))} (${who})` };
    },
    plain: (ctx: { input: Record<string, unknown> }) => ({ echo: String(ctx.input['a']) }),
  };
}

for (const [kind, open] of STORES) {
  describe(`${kind}: an answer given after the asking worker is gone`, () => {
    test('a worker that stopped cleanly: the next serving worker resumes the answered task at once', async () => {
      const store = await open();
      let asked = 0;
      const a = createEngine({ store, workerId: 'A', isOwnerDead: () => false, agents: agents('A', () => asked++) });
      const stopA = new AbortController();
      const servingA = a.serve(stopA.signal);
      const { id } = await a.start(MODEL, { detach: true });
      await until(async () => (await store.run(id))?.status === 'waiting', 'the question is asked', 100_000);
      await a.stop(1000);
      stopA.abort();
      await servingA.catch(() => undefined);
      // the hand-back is recorded; the question stays open
      const handed = eventsOf(await store.events(id), 'task.lease_expired');
      expect(handed).toMatchObject([{ phase: 'ask', owner: 'A', handed_back: true }]);
      expect((await store.run(id))?.status).toBe('waiting');

      // no process is ever known dead here: only the hand-back lets the answer go at once
      const b = createEngine({ store, workerId: 'B', isOwnerDead: () => false, agents: agents('B', () => asked++) });
      const stopB = new AbortController();
      const servingB = b.serve(stopB.signal);
      try {
        const t0 = performance.now();
        await b.respond(id, 'input-ask-1', 'blue', 'tester');
        await until(async () => (await store.run(id))?.status === 'completed', 'the run completes', 100_000);
        expect(performance.now() - t0).toBeLessThan(PROMPT_MS);
        const r = (await b.inspect(id)).result;
        expect(r.phases['ask']).toMatchObject({ attempts: 2, output: { answer: 'blue (B)' } });
        expect(r.phases['after']).toMatchObject({ output: { echo: 'blue (B)' } });
        expect(asked).toBe(2);
      } finally {
        stopB.abort();
        await servingB.catch(() => undefined);
        await b.close();
        await a.close();
      }
    }, 60_000);

    test('a worker known dead on this host: the answer says so, and a serving worker resumes at once', async () => {
      const store = await open();
      let asked = 0;
      const a = createEngine({ store, workerId: 'A', isOwnerDead: () => false, agents: agents('A', () => asked++) });
      const stopA = new AbortController();
      const servingA = a.serve(stopA.signal);
      const { id } = await a.start(MODEL, { detach: true });
      await until(async () => (await store.run(id))?.status === 'waiting', 'the question is asked', 100_000);
      // A "dies": it commits nothing more (no hand-back), and this host knows its process is gone
      stopA.abort();
      await a.close();
      await servingA.catch(() => undefined);
      expect(eventsOf(await store.events(id), 'task.lease_expired')).toEqual([]);

      // the serving worker never learns of A's death itself: the answer carries it
      const b = createEngine({ store, workerId: 'B', isOwnerDead: () => false, agents: agents('B', () => asked++) });
      const answering = createEngine({ store, workerId: 'C', isOwnerDead: (o) => o === 'A' });
      const stopB = new AbortController();
      const servingB = b.serve(stopB.signal);
      try {
        const t0 = performance.now();
        await answering.respond(id, 'input-ask-1', 'red', 'tester');
        expect(eventsOf(await store.events(id), 'gate.answered')).toMatchObject([{ gate_id: 'input-ask-1', owner_gone: true }]);
        await until(async () => (await store.run(id))?.status === 'completed', 'the run completes', 100_000);
        expect(performance.now() - t0).toBeLessThan(PROMPT_MS);
        expect((await b.inspect(id)).result.phases['ask']).toMatchObject({ attempts: 2, output: { answer: 'red (B)' } });
      } finally {
        stopB.abort();
        await servingB.catch(() => undefined);
        await b.close();
        await answering.close();
      }
    }, 60_000);

    test('a live asker keeps its attempt: an answer given elsewhere is continued by the process that asked', async () => {
      const store = await open();
      let asked = 0;
      const a = createEngine({ store, workerId: 'A', isOwnerDead: () => false, agents: agents('A', () => asked++) });
      const stopA = new AbortController();
      const servingA = a.serve(stopA.signal);
      const answering = createEngine({ store, workerId: 'C', isOwnerDead: () => false });
      try {
        const { id } = await a.start(MODEL, { detach: true });
        await until(async () => (await store.run(id))?.status === 'waiting', 'the question is asked', 100_000);
        await answering.respond(id, 'input-ask-1', 'green', 'tester');
        expect(eventsOf(await store.events(id), 'gate.answered')[0]).not.toHaveProperty('owner_gone');
        await until(async () => (await store.run(id))?.status === 'completed', 'the run completes', 100_000);
        expect((await a.inspect(id)).result.phases['ask']).toMatchObject({ attempts: 1, output: { answer: 'green (A)' } });
        expect(asked).toBe(1);
      } finally {
        stopA.abort();
        await servingA.catch(() => undefined);
        await a.close();
        await answering.close();
      }
    }, 60_000);
  });
}

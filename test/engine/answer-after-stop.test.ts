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
import type { RunResult } from '../../src/engine/result.js';
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

/** An engine serving on the store under `id`, and its stop. */
function serving(store: RunStore, id: string, asked: () => void): { engine: ReturnType<typeof createEngine>; end(): Promise<void> } {
  const engine = createEngine({ store, workerId: id, isOwnerDead: () => false, agents: agents(id, asked) });
  const stop = new AbortController();
  const loop = engine.serve(stop.signal);
  return {
    engine,
    end: async () => {
      stop.abort();
      await loop.catch(() => undefined);
      await engine.close();
    },
  };
}

/** Worker A serves a run until its agent asks its question. */
async function asking(store: RunStore, asked: () => void): Promise<{ a: ReturnType<typeof serving>; id: string }> {
  const a = serving(store, 'A', asked);
  const { id } = await a.engine.start(MODEL, { detach: true });
  await until(async () => (await store.run(id))?.status === 'waiting', 'the question is asked', 100_000);
  return { a, id };
}

/** The run completes within PROMPT_MS of `t0`; its phases as the store has them. */
async function completesSoon(store: RunStore, engine: ReturnType<typeof createEngine>, id: string, t0: number): Promise<RunResult['phases']> {
  await until(async () => (await store.run(id))?.status === 'completed', 'the run completes', 100_000);
  expect(performance.now() - t0).toBeLessThan(PROMPT_MS);
  return (await engine.inspect(id)).result.phases;
}

for (const [kind, open] of STORES) {
  describe(`${kind}: an answer given after the asking worker is gone`, () => {
    test('a worker that stopped cleanly: the next serving worker resumes the answered task at once', async () => {
      const store = await open();
      let asked = 0;
      const { a, id } = await asking(store, () => asked++);
      await a.engine.stop(1000);
      await a.end();
      // the hand-back is recorded; the question stays open
      expect(eventsOf(await store.events(id), 'task.lease_expired')).toMatchObject([{ phase: 'ask', owner: 'A', handed_back: true }]);
      expect((await store.run(id))?.status).toBe('waiting');
      // no process is ever known dead here: only the hand-back lets the answer go at once
      const b = serving(store, 'B', () => asked++);
      try {
        const t0 = performance.now();
        await b.engine.respond(id, 'input-ask-1', 'blue', 'tester');
        const phases = await completesSoon(store, b.engine, id, t0);
        expect(phases['ask']).toMatchObject({ attempts: 2, output: { answer: 'blue (B)' } });
        expect(phases['after']).toMatchObject({ output: { echo: 'blue (B)' } });
        expect(asked).toBe(2);
      } finally {
        await b.end();
      }
    }, 60_000);

    test('a worker known dead on this host: the answer says so, and a serving worker resumes at once', async () => {
      const store = await open();
      const { a, id } = await asking(store, () => undefined);
      // A "dies": its serve loop ends before any stop (no hand-back), and this host knows its process is gone
      await a.end();
      expect(eventsOf(await store.events(id), 'task.lease_expired')).toEqual([]);
      // the serving worker never learns of A's death itself: the answer carries it
      const b = serving(store, 'B', () => undefined);
      const answering = createEngine({ store, workerId: 'C', isOwnerDead: (o) => o === 'A' });
      try {
        const t0 = performance.now();
        await answering.respond(id, 'input-ask-1', 'red', 'tester');
        expect(eventsOf(await store.events(id), 'gate.answered')).toMatchObject([{ gate_id: 'input-ask-1', owner_gone: true }]);
        expect((await completesSoon(store, b.engine, id, t0))['ask']).toMatchObject({ attempts: 2, output: { answer: 'red (B)' } });
      } finally {
        await b.end();
        await answering.close();
      }
    }, 60_000);

    test('a live asker keeps its attempt: an answer given elsewhere is continued by the process that asked', async () => {
      const store = await open();
      let asked = 0;
      const { a, id } = await asking(store, () => asked++);
      const answering = createEngine({ store, workerId: 'C', isOwnerDead: () => false });
      try {
        const t0 = performance.now();
        await answering.respond(id, 'input-ask-1', 'green', 'tester');
        expect(eventsOf(await store.events(id), 'gate.answered')[0]).not.toHaveProperty('owner_gone');
        expect((await completesSoon(store, a.engine, id, t0))['ask']).toMatchObject({ attempts: 1, output: { answer: 'green (A)' } });
        expect(asked).toBe(1);
      } finally {
        await a.end();
        await answering.close();
      }
    }, 60_000);
  });
}

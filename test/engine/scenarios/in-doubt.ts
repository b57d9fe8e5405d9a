/**
 * Commits whose answer is lost: the store commits, then the call fails as a connection dropped on
 * the way back would make it (PostgreSQL behind a network that cuts). The worker cannot know whether
 * the commit landed; it rebuilds the run from the store and must find out. Claims that landed are
 * handed back and run once (never left running under its own live lease: that hung the run), a
 * resume that landed goes on, outcomes, costs and logs are not recorded twice, and the observers
 * (`onEvent`: the server's remote agents, the CLI's progress) hear of every event exactly once.
 */
import { expect } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { BatonError } from '../../../src/core/errors.js';
import type { Json } from '../../../src/core/json.js';
import type { AgentContext } from '../../../src/engine/agent.js';
import type { RunEvent } from '../../../src/engine/events.js';
import type { RunStore } from '../../../src/engine/ports.js';
import { eventsOf, expectReplays, header, wf, withClock } from '../helpers.js';
import { ASK, engineOn, overriding, untilStatus, type StoreFactory } from './common.js';

/** A dropped connection's error, as the PostgreSQL store gives it. */
function dropped(): Error {
  return new BatonError('store-unreachable', 'cannot reach the PostgreSQL store: Connection terminated unexpectedly', { cause: Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' }) });
}

/**
 * The store whose commits land but whose answer is lost (the call rejects) when `lose` says so of the
 * events committed; `lost()` counts them.
 */
export function answerLost(store: RunStore, lose: (events: readonly RunEvent[]) => boolean, loseCreations = 0): { store: RunStore; lost: () => number } {
  let lost = 0;
  let creations = loseCreations;
  const wrapped = overriding(store, {
    // a creation (or a batch of them) lands, then its answer is lost
    createRun: async (init) => {
      await store.createRun(init);
      if (creations > 0) {
        creations--;
        lost++;
        throw dropped();
      }
    },
    ...(store.createRuns
      ? {
          createRuns: async (inits: Parameters<NonNullable<RunStore['createRuns']>>[0]) => {
            const out = await store.createRuns!(inits);
            if (creations > 0) {
              creations--;
              lost++;
              throw dropped();
            }
            return out;
          },
        }
      : {}),
    transact: async (runId, knownSeq, decide, opts) => {
      let made: readonly RunEvent[] = [];
      const r = await store.transact(
        runId,
        knownSeq,
        (delta, now) => {
          const d = decide(delta, now);
          made = d.commit?.events ?? [];
          return d;
        },
        opts,
      );
      if (r.ok && made.length > 0 && lose(made)) {
        lost++;
        throw dropped();
      }
      return r;
    },
    ...(store.commitMany
      ? {
          commitMany: async (items: Parameters<NonNullable<RunStore['commitMany']>>[0]) => {
            const r = await store.commitMany!(items);
            if (items.some((it, i) => r.results[i] === 'ok' && lose(it.commit.events))) {
              lost++;
              throw dropped();
            }
            return r;
          },
        }
      : {}),
  });
  return { store: wrapped, lost: () => lost };
}

/** The first `n` commits that hold a matching event lose their answer. */
function firstWith(pred: (e: RunEvent) => boolean, n = 1): (events: readonly RunEvent[]) => boolean {
  let left = n;
  return (events) => {
    if (left <= 0 || !events.some(pred)) return false;
    left--;
    return true;
  };
}

/** Every seq from 1 to the last, once each, in order. */
function expectToldOnce(told: readonly RunEvent[], all: readonly RunEvent[]): void {
  expect(told.map((e) => e.seq)).toEqual(all.map((e) => e.seq));
}

const CHAIN = wf(`${header()}workflow:
  a: {assign: x, outputs: {n: number}}
  b: {assign: x, depends_on: [a], inputs: {n: a.n}, outputs: {n: number}}
  c: {assign: x, depends_on: [b], inputs: {n: b.n}, outputs: {n: number}}
  d: {assign: x, depends_on: [c], inputs: {n: c.n}, outputs: {n: number}}`);

/**
 * A chain whose commit of a's outcome and b's claim lands without its answer, then the same for c's
 * claim: each phase runs once, b and c are handed back and claimed again, a's completion and cost
 * are recorded once, and the observers hear of every event once.
 */
export async function claimAnswerLost(makeStore: StoreFactory): Promise<void> {
  const clock = new ManualClock(1_000);
  const calls: string[] = [];
  const { store, lost } = answerLost(await makeStore(), firstWith((e) => e.type === 'task.claimed' && (e.phase === 'b' || e.phase === 'c') && e.attempt === 1, 2));
  const told: RunEvent[] = [];
  const x = (ctx: AgentContext) => {
    calls.push(`${ctx.phase}#${ctx.attempt}`);
    ctx.reportCost(0.25);
    return { n: Number(ctx.input['n'] ?? 0) + 1 };
  };
  const engine = engineOn(store, clock, { x }, { onEvent: (e) => told.push(e) });
  const id = await engine.create(CHAIN, { runId: 'claim-lost' });
  const r = await withClock(clock, engine.drive(id, undefined), 2000);
  expect(lost()).toBe(2);
  expect(r.status).toBe('completed');
  expect(r.phases['d']).toMatchObject({ status: 'completed', output: { n: 4 } });
  // each phase ran once: the claims whose answer was lost never started, and were handed back
  expect(calls).toEqual(['a#1', 'b#2', 'c#2', 'd#1']);
  expect(eventsOf(r.events, 'task.lease_expired').map((e) => `${e.phase}#${e.attempt}`)).toEqual(['b#1', 'c#1']);
  // what the lost commits carried is recorded once: no stale outcome, no second cost
  expect(eventsOf(r.events, 'task.stale_outcome')).toEqual([]);
  expect(eventsOf(r.events, 'task.completed').map((e) => e.phase)).toEqual(['a', 'b', 'c', 'd']);
  expect(r.cost_usd).toBeCloseTo(1, 9);
  expectToldOnce(told, r.events);
  await expectReplays(store, r);
  await engine.close();
}

/** A fan-out whose item claims land without their answer: every item runs once and the phase gathers them all. */
export async function itemClaimAnswerLost(makeStore: StoreFactory): Promise<void> {
  const clock = new ManualClock(1_000);
  const ran = new Map<string, number>();
  const { store, lost } = answerLost(await makeStore(), firstWith((e) => e.type === 'task.claimed' && e.phase.startsWith('each['), 3));
  const told: RunEvent[] = [];
  const model = wf(`${header()}workflow:
  each: {assign: x, for_each: $trigger.items, inputs: {v: $item}, outputs: {v: number}, max_parallel: 3}
  sum: {assign: y, depends_on: [each], inputs: {all: each.v}, outputs: {n: number}}`);
  const engine = engineOn(
    store,
    clock,
    {
      x: (ctx) => {
        const key = `${ctx.phase}[${ctx.item!.index}]`;
        ran.set(key, (ran.get(key) ?? 0) + 1);
        return { v: ctx.input['v'] as number };
      },
      y: (ctx) => ({ n: (ctx.input['all'] as number[]).reduce((s, v) => s + v, 0) }),
    },
    { onEvent: (e) => told.push(e) },
  );
  const items = Array.from({ length: 10 }, (_, i) => i + 1);
  const id = await engine.create(model, { runId: 'items-lost', trigger: { items } });
  const r = await withClock(clock, engine.drive(id, undefined), 3000);
  expect(lost()).toBe(3);
  expect(r.status).toBe('completed');
  expect(r.phases['sum']).toMatchObject({ status: 'completed', output: { n: 55 } });
  expect(Object.fromEntries([...ran].filter(([, n]) => n !== 1))).toEqual({});
  expect(ran.size).toBe(10);
  expect(eventsOf(r.events, 'task.stale_outcome')).toEqual([]);
  expectToldOnce(told, r.events);
  await expectReplays(store, r);
  await engine.close();
}

/**
 * The ASK workflow on a store whose first two commits holding a matching event lose their answer,
 * the asker's question answered 'blue' as soon as the run waits. The clock moves while the run waits
 * for its answer (the worker retries after a backoff on it).
 */
async function answeredAsk(makeStore: StoreFactory, runId: string, lose: (e: RunEvent) => boolean, ask: (ctx: AgentContext) => Promise<Json>) {
  const clock = new ManualClock(1_000);
  const base = await makeStore();
  const { store, lost } = answerLost(base, firstWith(lose, 2));
  const asked: number[] = [];
  const told: RunEvent[] = [];
  const engine = engineOn(
    store,
    clock,
    {
      asker: async (ctx) => {
        asked.push(ctx.attempt);
        return { answer: await ask(ctx) };
      },
      plain: () => ({}),
    },
    { onEvent: (e) => told.push(e) },
  );
  const id = await engine.create(ASK, { runId });
  const done = engine.drive(id, undefined);
  const answered = (async () => {
    await untilStatus(base, id, 'waiting');
    await engine.respond(id, 'input-ask-1', 'blue', 'dave');
  })();
  const [r] = await withClock(clock, Promise.all([done, answered]), 3000);
  expect(lost()).toBe(2);
  expect(r.status).toBe('completed');
  expect(r.phases['ask']).toMatchObject({ status: 'completed', attempts: 1, output: { answer: 'blue' } });
  expect(asked).toEqual([1]);
  expect(eventsOf(r.events, 'task.completed').map((e) => e.phase).sort()).toEqual(['after', 'ask', 'side']);
  expect(eventsOf(r.events, 'task.stale_outcome')).toEqual([]);
  expectToldOnce(told, r.events);
  await expectReplays(store, r);
  await engine.close();
  return r;
}

/**
 * The commit that resumes an answered attempt lands without its answer, and so does the run's last
 * commit: the answered attempt goes on (it was left waiting for ever, its task running under this
 * worker's lease), and the run ends once, its last outcome recorded once.
 */
export async function resumeAnswerLost(makeStore: StoreFactory): Promise<void> {
  const r = await answeredAsk(makeStore, 'resume-lost', (e) => e.type === 'task.resumed' || e.type === 'run.completed', (ctx) => ctx.requestInput({ question: 'colour?' }));
  expect(eventsOf(r.events, 'task.resumed')).toHaveLength(1);
}

/**
 * An agent's input request (and its checkpoint) commit without their answer: the agent's
 * `requestInput` and `checkpoint` wait for the store rather than fail, get what was decided, and the
 * attempt goes on once answered. Before, the agent's call failed with the store's error though the
 * gate had opened, and a second attempt had to ask again.
 */
export async function inputRequestAnswerLost(makeStore: StoreFactory): Promise<void> {
  const r = await answeredAsk(
    makeStore,
    'ask-lost',
    (e) => e.type === 'gate.opened' || e.type === 'task.checkpoint',
    async (ctx) => {
      await ctx.checkpoint({ step: 1 });
      return ctx.requestInput({ question: 'colour?' });
    },
  );
  expect(eventsOf(r.events, 'gate.opened')).toHaveLength(1);
  expect(eventsOf(r.events, 'task.checkpoint')).toHaveLength(1);
}

/**
 * A run's creation lands without its answer: the start tries again, finds the id taken by the run it
 * made itself, and goes on with it (a start used to fail, and a second one to be refused as a taken
 * id). A start with an id another run took is still refused.
 */
export async function creationAnswerLost(makeStore: StoreFactory): Promise<void> {
  const clock = new ManualClock(1_000);
  const { store, lost } = answerLost(await makeStore(), () => false, 1);
  const engine = engineOn(store, clock, { x: (ctx) => ({ n: Number(ctx.input['n'] ?? 0) + 1 }) });
  const id = await withClock(clock, engine.create(CHAIN, { runId: 'made-once' }), 500);
  expect(lost()).toBe(1);
  const r = await withClock(clock, engine.drive(id, undefined), 2000);
  expect(r.status).toBe('completed');
  expect(eventsOf(r.events, 'run.started')).toHaveLength(1);
  await expect(engine.create(CHAIN, { runId: 'made-once' })).rejects.toMatchObject({ code: 'run-exists' });
  await engine.close();
}

const GATED = wf(`${header()}workflow:
  a: {assign: x, x-require_approval: {approvers: [alice, bob]}, outputs: {n: number}}
  b: {assign: x, depends_on: [a], inputs: {n: a.n}, outputs: {n: number}}`);

/**
 * A one-off command (approve, cancel: another process's, as `baton approve` is) commits without its
 * answer: the command tries again, finds its own decision made, and succeeds; the gate is decided once
 * and the run goes on. It used to fail with the store's error though the gate had opened, and trying
 * again was refused as "already approved". A repeat that follows no lost answer, and another decider,
 * are still refused.
 */
export async function commandAnswerLost(makeStore: StoreFactory): Promise<void> {
  const clock = new ManualClock(1_000);
  const raw = await makeStore();
  const driver = engineOn(raw, clock, { x: (ctx) => ({ n: Number(ctx.input['n'] ?? 0) + 1 }) });
  const id = await driver.create(GATED, { runId: 'decided-once' });
  const { store, lost } = answerLost(raw, (events) => events.some((e) => e.type === 'gate.decided' || e.type === 'run.cancelled'));
  const commands = engineOn(store, clock, {});
  await withClock(clock, commands.approve(id, 'approve-a', 'alice', 'fine'), 500);
  expect(lost()).toBe(1);
  await expect(commands.approve(id, 'approve-a', 'alice', 'fine')).rejects.toMatchObject({ code: 'gate-refused' });
  await expect(commands.approve(id, 'approve-a', 'bob')).rejects.toMatchObject({ code: 'gate-refused' });
  const r = await withClock(clock, driver.drive(id, undefined), 2000);
  expect(r.status).toBe('completed');
  expect(eventsOf(r.events, 'gate.decided')).toHaveLength(1);
  expect(eventsOf(r.events, 'task.completed')).toHaveLength(2);
  // a cancel whose answer is lost: cancelled once, and the command succeeds
  const other = await driver.create(GATED, { runId: 'cancelled-once' });
  await withClock(clock, commands.cancel(other, 'no longer needed'), 500);
  expect(lost()).toBe(2);
  const events = await raw.events(other);
  expect(eventsOf(events, 'run.cancelled')).toHaveLength(1);
  expect((await raw.run(other))?.status).toBe('cancelled');
  await commands.close();
  await driver.close();
}

export const IN_DOUBT_SCENARIOS: Record<string, (makeStore: StoreFactory) => Promise<void>> = {
  claimAnswerLost,
  itemClaimAnswerLost,
  resumeAnswerLost,
  inputRequestAnswerLost,
  creationAnswerLost,
  commandAnswerLost,
};

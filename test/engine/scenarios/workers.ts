/** Several workers on one store: two drivers, serving workers, heartbeats and lost leases, store failures, inputs a store must keep exactly. */
import fc from 'fast-check';
import { expect } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { createEngine } from '../../../src/api/engine.js';
import { BatonError } from '../../../src/core/errors.js';
import type { AgentContext, AgentHandler } from '../../../src/engine/agent.js';
import type { RunEvent } from '../../../src/engine/events.js';
import type { RunStore, TxDecision } from '../../../src/engine/ports.js';
import type { Json } from '../../../src/core/json.js';
import { deferred, eventsOf, expectReplays, header, settle, until, wf, withClock } from '../helpers.js';
import { ASK, deaf, overriding, type Invocation, LONG_LEASE, RECOVERY_WORKFLOW, RISKY, type StoreFactory, TAKEOVER, deferredOf, engineOn, HOUR, recoveryAgents, statusOf, untilEventType, untilStatus } from './common.js';
import { timersKeepTheirTimeAcrossARestart } from './recovery.js';

/** Two engines drive the same run at once: every attempt runs exactly once, and the result is whole. */
export async function twoDriversOneRun(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const log: Invocation[] = [];
  const a = engineOn(store, clock, recoveryAgents('A', clock, log), { workerId: 'A', concurrency: 2 });
  const b = engineOn(store, clock, recoveryAgents('B', clock, log), { workerId: 'B', concurrency: 2 });
  const id = await a.create(RECOVERY_WORKFLOW, { trigger: { seed: 1 } });
  const [ra, rb] = await withClock(clock, Promise.all([a.drive(id, undefined), b.drive(id, undefined)]));
  expect(ra.status).toBe('completed');
  expect(rb.status).toBe('completed');
  expect(rb.phases).toEqual(ra.phases);
  const seen = new Set<string>();
  for (const i of log) {
    const k = `${i.phase}#${i.attempt}`;
    expect(seen.has(k), k).toBe(false);
    seen.add(k);
  }
  for (const name of Object.keys(ra.phases)) expect(log.filter((i) => i.phase === name && !(name === 'flaky' && i.attempt === 1)), name).toHaveLength(1);
  expect(eventsOf(ra.events, 'task.stale_outcome')).toEqual([]);
  await expectReplays(store, ra);
  await a.close();
  await b.close();
}

/** A long attempt keeps its lease by heartbeats: a second worker looking at the run never takes it over. */
export async function heartbeatsKeepTheLease(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const leaseMs = 3000;
  const release = deferredOf<Record<string, Json>>();
  const started: string[] = [];
  const slow = (who: string) => (ctx: AgentContext) => (started.push(`${who}${ctx.attempt}`), release.promise);
  const a = createEngine({ store, clock, leaseMs, workerId: 'A', isOwnerDead: () => false, agents: { slow: slow('A'), w: () => ({ by: 'A' }) } });
  const pa = a.drive(await a.create(TAKEOVER, { runId: 'beat' }), undefined);
  await until(() => started.length === 1, 'A starts x');
  const b = createEngine({ store, clock, leaseMs, workerId: 'B', isOwnerDead: () => false, agents: { slow: slow('B'), w: () => ({ by: 'B' }) } });
  const pb = b.drive('beat', undefined);
  for (let t = 0; t < 10; t++) await clock.advance(leaseMs / 2);
  expect(started).toEqual(['A1']);
  expect(eventsOf(await store.events('beat'), 'task.lease_expired')).toEqual([]);
  release.resolve({ by: 'A' });
  const [ra, rb] = await withClock(clock, Promise.all([pa, pb]));
  expect(ra.status).toBe('completed');
  expect(rb.status).toBe('completed');
  expect(started).toEqual(['A1']);
  await a.close();
  await b.close();
}

/** `serve` workers run runs they did not start; each runs only the agents it binds, the others' tasks wait for them. */
export async function serveWorkersSplitAgents(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const ran: string[] = [];
  const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {v: number}}
  b: {assign: y, depends_on: [a], inputs: {v: a.v}, outputs: {v: number}}
  c: {assign: x, depends_on: [b], inputs: {v: b.v}, outputs: {v: number}}`);
  const x = (ctx: AgentContext) => (ran.push(`X:${ctx.phase}`), { v: ((ctx.input['v'] as number | undefined) ?? 0) + 1 });
  const y = (ctx: AgentContext) => (ran.push(`Y:${ctx.phase}`), { v: (ctx.input['v'] as number) * 10 });
  const starter = engineOn(store, clock, { x, y }, { workerId: 'S' });
  const id = await starter.create(model);
  const wx = engineOn(store, clock, { x }, { workerId: 'WX', pollMs: 10 });
  const ctl = new AbortController();
  const sx = wx.serve(ctl.signal);
  await until(async () => (await store.tasks(id)).find((t) => t.phase === 'b')?.status === 'ready', 'a done, b ready');
  await settle();
  expect((await store.tasks(id)).find((t) => t.phase === 'b')!.status).toBe('ready'); // no worker binds y yet
  const wy = engineOn(store, clock, { y }, { workerId: 'WY', pollMs: 10 });
  const sy = wy.serve(ctl.signal);
  await until(async () => (await statusOf(store, id)) === 'completed', 'the run completes');
  ctl.abort();
  await Promise.all([sx, sy]);
  expect(ran).toEqual(['X:a', 'Y:b', 'X:c']);
  const { result } = await starter.inspect(id);
  expect(result.phases['c']!.output).toEqual({ v: 11 });
  await expectReplays(store, result);
  for (const e of [starter, wx, wy]) await e.close();
}

/** Cancelling from another terminal while the driver waits at a gate; commands on an ended run are refused. */
export async function cancelWhileWaiting(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  let aborted = false;
  const e = engineOn(store, clock, {
    asker: async (ctx) => {
      ctx.signal.addEventListener('abort', () => (aborted = true));
      return { answer: await ctx.requestInput({ question: 'q' }) };
    },
    plain: () => ({}),
  });
  const id = await e.create(ASK);
  const p = e.drive(id, undefined);
  await untilStatus(store, id, 'waiting');
  const other = engineOn(store, clock, {}, { workerId: 'T' });
  await other.cancel(id, 'changed my mind');
  const r = await p;
  expect(r.status).toBe('cancelled');
  expect(r.phases['ask']!.status).toBe('cancelled');
  expect(r.suspended_phases).toEqual([]);
  await until(() => aborted, 'the suspended attempt is aborted');
  await expect(other.respond(id, 'input-ask-1', 'x', 'u')).rejects.toMatchObject({ code: 'gate-refused' });
  // ASK has no run gate: a gate the run never had is unknown, ended or not
  await expect(other.approve(id, 'approval', 'u')).rejects.toMatchObject({ code: 'unknown-gate' });
  await expect(other.resume('nope')).rejects.toMatchObject({ code: 'unknown-run' });
  // driving an ended run resolves at once with its result
  const again = await other.resume(id);
  expect(again.status).toBe('cancelled');
  await expectReplays(store, r);
  await e.close();
  await other.close();
}

export const WORKER_SCENARIOS = { twoDriversOneRun, randomInterleavings, driveAfterServe, stopsAbortAttemptsInFlight, heartbeatsKeepTheLease, abortedCodeHoldsItsRetry, abortedCodeHoldsUntilItsGrace, lostLeaseStopsTheAttempt, serveWorkersSplitAgents, cancelWhileWaiting, serveWorkerIdlesAtAGate, serveWorkerFiresTimersOfParkedRuns, transientStoreFailure, storeDownForAWhile, unreadableLogFailsLoudly, timersKeepTheirTimeAcrossARestart, runIdIsIdempotent, runInputsMustBeJson };

/** A serving worker facing ready tasks it cannot claim (held by a gate) waits; it does not spin on the store. */
export async function serveWorkerIdlesAtAGate(makeStore: StoreFactory): Promise<void> {
  const inner = await makeStore();
  let finds = 0;
  // every findWork yields to the event loop, so a spinning worker is counted rather than starving the test
  const store = overriding(inner, {
    findWork: async (q) => {
      finds++;
      await new Promise<void>((r) => setImmediate(r));
      return inner.findWork(q);
    },
  });
  const clock = new ManualClock(0);
  const s = engineOn(store, clock, { x: (ctx) => (ctx.phase === 'a' ? { risk: 9 } : {}), y: () => ({}) }, { workerId: 'S', pollMs: 10 });
  const id = await s.create(RISKY());
  const ctl = new AbortController();
  const serving = s.serve(ctl.signal);
  await untilStatus(store, id, 'waiting');
  await settle(5);
  const before = finds;
  await settle(200);
  expect(finds - before).toBeLessThan(20);
  await s.approve(id, 'approval', 'alice');
  await untilStatus(store, id, 'completed');
  ctl.abort();
  await serving;
  await s.close();
}

/**
 * A serving worker fires the timers of runs it does not hold: a gate's expiry (abort, proceed), an
 * escalation and the run's deadline while a gate waits. Such a run is parked (a gated run costs no
 * memory); its timer brings it back, and it must stay held until the commit that fires it. It was taken
 * up and parked again at every look, and the timer never fired under `baton worker` or `baton serve`.
 */
export async function serveWorkerFiresTimersOfParkedRuns(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const gated = (gov: string) =>
    wf(`${header(`governance:
  require_approval: {when: "true", approvers: [alice]${gov}}`)}workflow:
  a: {assign: x}
  b: {assign: x, depends_on: [a]}`);
  const creator = engineOn(store, clock, { x: () => ({}) }, { workerId: 'C' });
  const abort = await creator.create(gated(', timeout_hours: 1, on_timeout: abort'));
  const proceed = await creator.create(gated(', timeout_hours: 1, on_timeout: proceed'));
  const deadline = await creator.create(gated(''), { timeoutMs: HOUR / 2 });
  const escalate = await creator.create(
    wf(`${header(`governance:
  require_approval: {when: "true", approvers: [alice]}
  escalation: {contact: "ops@example.com", after_hours: 0.25}`)}workflow:
  a: {assign: x}`),
  );
  const s = engineOn(store, clock, { x: () => ({}) }, { workerId: 'S', pollMs: 10 });
  const ctl = new AbortController();
  const serving = s.serve(ctl.signal);
  try {
    for (const id of [abort, proceed, deadline, escalate]) await untilStatus(store, id, 'waiting');
    // the worker parks every one of them (they wait on their gates); time passes in steps, as a day does
    for (let t = 0; t < 8; t++) {
      await settle(20);
      await clock.advance(HOUR / 4);
    }
    await untilStatus(store, abort, 'failed');
    await untilStatus(store, proceed, 'completed');
    await untilStatus(store, deadline, 'failed');
    await untilEventType(store, escalate, 'gate.escalated');
    expect((await s.inspect(abort)).result.error).toMatchObject({ code: 'ApprovalTimeout' });
    expect((await s.inspect(deadline)).result.error).toMatchObject({ code: 'RunTimeout' });
    expect(await statusOf(store, escalate)).toBe('waiting');
  } finally {
    ctl.abort();
    await serving;
    await s.close();
    await creator.close();
  }
}

/** One commit fails (the store was briefly unreachable): the worker retries what it observed and the run completes, nothing run twice. */
export async function transientStoreFailure(makeStore: StoreFactory): Promise<void> {
  for (let n = 1; n <= 12; n++) {
    const inner = await makeStore();
    let calls = 0;
    // the n-th commit fails, through transact or the fast path alike
    const store = overriding(inner, {
      transact: (...args) => {
        calls++;
        if (calls === n) return Promise.reject(new Error('connection reset'));
        return inner.transact(...args);
      },
      ...(inner.commitMany
        ? {
            commitMany: (items: Parameters<NonNullable<RunStore['commitMany']>>[0]) => {
              calls++;
              if (calls === n) return Promise.reject(new Error('connection reset'));
              return inner.commitMany!(items);
            },
          }
        : {}),
    });
    const clock = new ManualClock(0);
    const log: Invocation[] = [];
    const e = createEngine({ store, clock, leaseMs: 60_000, agents: recoveryAgents('A', clock, log), workerId: 'A' });
    const r = await withClock(clock, e.run(RECOVERY_WORKFLOW, { trigger: { seed: 1 } }));
    expect(r.status, `failure at transaction ${n}`).toBe('completed');
    expect(log, `failure at transaction ${n}`).toHaveLength(8);
    await expectReplays(store, r);
    await e.close();
  }
}

/** A chosen run id can be started once: a second start is refused and stores nothing. */
export async function runIdIsIdempotent(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const e = engineOn(store, new ManualClock(0), { x: () => ({}) });
  const model = wf(`${header()}workflow:\n  a: {assign: x}`);
  await e.create(model, { runId: 'nightly-1' });
  await expect(e.create(model, { runId: 'nightly-1' })).rejects.toMatchObject({ code: 'run-exists' });
  expect(await store.runs()).toHaveLength(1);
  const r = await e.drive('nightly-1', undefined);
  expect(r.status).toBe('completed');
  expect(eventsOf(r.events, 'run.started')).toHaveLength(1);
  await e.close();
}

/** The store refuses commits for a while: the worker backs off (no busy retries) and finishes once it is back. */
export async function storeDownForAWhile(makeStore: StoreFactory): Promise<void> {
  const inner = await makeStore();
  let down = false;
  let refused = 0;
  const refuse = (): Promise<never> => {
    refused++;
    return Promise.reject(new Error('connection refused'));
  };
  const store = overriding(inner, {
    transact: (...args) => (down ? refuse() : inner.transact(...args)),
    ...(inner.commitMany ? { commitMany: (items: Parameters<NonNullable<RunStore['commitMany']>>[0]) => (down ? refuse() : inner.commitMany!(items)) } : {}),
  });
  const clock = new ManualClock(0);
  const log: Invocation[] = [];
  const e = createEngine({ store, clock, leaseMs: LONG_LEASE, agents: recoveryAgents('A', clock, log), workerId: 'A' });
  const id = await e.create(RECOVERY_WORKFLOW, { trigger: { seed: 1 } });
  down = true;
  const p = e.drive(id, undefined);
  // one refusal, then the worker waits for its backoff (100 ms, 200 ms, ...), not for the next turn
  await until(() => refused >= 1, 'the first refusal');
  await settle(10);
  expect(refused).toBe(1);
  await clock.advance(100);
  await until(() => refused >= 2, 'the second refusal');
  expect(refused).toBe(2);
  await clock.advance(60_000);
  await settle(10);
  // backoff doubling to 5 s, with jitter (50-100% of each delay): about 20 tries a minute, not one a turn
  expect(refused).toBeLessThan(30);
  down = false;
  const r = await withClock(clock, p);
  expect(r.status).toBe('completed');
  expect(log).toHaveLength(8);
  await expectReplays(store, r);
  await e.close();
}

/** A log the engine cannot read (an event of an unknown type arrives): the driver fails loudly, it does not retry forever. */
export async function unreadableLogFailsLoudly(makeStore: StoreFactory): Promise<void> {
  const inner = await makeStore();
  let poison = false;
  const store = overriding(inner, {
    transact: <T>(runId: string, knownSeq: number, decide: (delta: RunEvent[]) => TxDecision<T>) =>
      inner.transact(runId, knownSeq, (delta) => decide(poison ? [...delta, { type: 'task.teleported', seq: knownSeq + delta.length + 1, at: 0 } as unknown as RunEvent] : delta)),
    // the event arrives as another process's commit: a fast commit finds the run moved on and reads the log
    ...(inner.commitMany
      ? { commitMany: (items: Parameters<NonNullable<RunStore['commitMany']>>[0]) => (poison ? Promise.resolve({ results: items.map(() => 'conflict' as const) }) : inner.commitMany!(items)) }
      : {}),
  });
  const e = engineOn(store, new ManualClock(0), {
    x: () => {
      poison = true;
      return {};
    },
  });
  const model = wf(`${header()}workflow:\n  a: {assign: x}\n  b: {assign: x, depends_on: [a]}`);
  await expect(e.run(model)).rejects.toMatchObject({ code: 'internal' });
  await e.close();
}

/** A trigger or initial state that is not JSON is refused before anything is stored. */
export async function runInputsMustBeJson(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const e = engineOn(store, new ManualClock(0), { x: (ctx) => ({ saw: ctx.input['t'] ?? null }) });
  const model = wf(`${header()}workflow:\n  a: {assign: x, inputs: {t: $trigger.t}}`);
  for (const trigger of [{ t: new Date(0) }, { t: () => 1 }, { t: NaN }, cyclicTrigger()] as unknown[]) {
    await expect(e.create(model, { trigger: trigger as Json })).rejects.toMatchObject({ code: 'usage' });
  }
  await expect(e.create(model, { trigger: { t: 1 }, initialState: [1] as unknown as Record<string, Json> })).rejects.toMatchObject({ code: 'usage' });
  expect(await store.runs()).toEqual([]);
  const r = await e.run(model, { trigger: { t: 1, gone: undefined } as unknown as Json });
  expect(r.status).toBe('completed');
  expect(r.events[0]).toMatchObject({ trigger: { t: 1 } });
  expect(Object.keys((await store.run(r.runId))!.trigger as object)).toEqual(['t']);
  await e.close();
}

export function cyclicTrigger(): unknown {
  const o: Record<string, unknown> = {};
  o['o'] = o;
  return o;
}

/** The store's data calls, which a partition fails (its waits hear of nothing). */
const STORE_CALLS = new Set(['createRun', 'createRuns', 'run', 'runs', 'workflow', 'events', 'tasks', 'readState', 'saveSnapshot', 'transact', 'commitMany', 'findWork', 'renewLeases', 'clockNow']);

/**
 * A worker cut off from the store (its renewals, commits and reads all fail) gives its attempt up before
 * the lease runs out: the agent is aborted and the task handed back. So the attempt another worker takes
 * over once the lease has run out never runs beside it. It used to run on until a renewal got through
 * again, after the store came back: two executions of one task at once, the first recorded as stale.
 */
export async function lostLeaseStopsTheAttempt(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const leaseMs = 9000;
  let away = false;
  const aStore = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'waitForChange') return deaf;
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => (away && typeof prop === 'string' && STORE_CALLS.has(prop) ? Promise.reject(new BatonError('store-unreachable', 'connect ECONNREFUSED 127.0.0.1:5432')) : (v as (...x: unknown[]) => unknown).apply(target, args));
    },
  });
  let started = false;
  let abortedAt: number | undefined;
  const a = createEngine({
    store: aStore,
    clock,
    leaseMs,
    workerId: 'A',
    isOwnerDead: () => false,
    agents: {
      slow: (ctx) => {
        started = true;
        ctx.signal.addEventListener('abort', () => (abortedAt = clock.now()));
        return new Promise(() => undefined);
      },
      w: (ctx) => ({ by: ctx.input['by'] as string }),
    },
  });
  const pa = a.drive(await a.create(TAKEOVER, { runId: 'lost' }), undefined);
  pa.catch(() => undefined);
  await until(() => started, 'A runs x');
  const leaseEnd = eventsOf(await store.events('lost'), 'task.claimed')[0]!.lease_expires_at!;
  away = true;
  // every renewal fails: a little before the lease runs out (a tenth of it, at most a second), A gives the attempt up
  await clock.advance(leaseMs - 500);
  await until(() => abortedAt !== undefined, "A's attempt is stopped");
  expect(abortedAt!).toBeLessThan(leaseEnd);
  const b = engineOn(store, clock, { slow: () => ({ by: 'B' }), w: (ctx) => ({ by: ctx.input['by'] as string }) }, { workerId: 'B', leaseMs, isOwnerDead: () => false });
  const r = await withClock(clock, b.resume('lost'));
  expect(r.status).toBe('completed');
  expect(r.phases['x']).toMatchObject({ attempts: 2, output: { by: 'B' } });
  const second = eventsOf(r.events, 'task.claimed').find((e) => e.phase === 'x' && e.attempt === 2)!;
  expect(second.worker).toBe('B');
  expect(second.at).toBeGreaterThanOrEqual(leaseEnd);
  // A's hand-back, sent once the store answers again, finds the task moved on: nothing is recorded for it
  away = false;
  const ra = await withClock(clock, pa);
  expect(ra.status).toBe('completed');
  const events = await store.events('lost');
  expect(eventsOf(events, 'task.stale_outcome')).toEqual([]);
  expect(eventsOf(events, 'task.lease_expired').map((e) => [e.attempt, e.owner, e.handed_back ?? false])).toEqual([[1, 'A', false]]);
  await a.close();
  await b.close();
}

/** Two drivers and a serving worker on one run, with random agent latencies: no attempt runs twice, every phase completes once. */
export async function randomInterleavings(makeStore: StoreFactory): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 16, maxLength: 16 }), fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 3 }), async (turns, ca, cb) => {
      const store = await makeStore();
      const clock = new ManualClock(0);
      const log: Invocation[] = [];
      let k = 0;
      const agents = (engine: string): Record<string, AgentHandler> => {
        const base = recoveryAgents(engine, clock, log);
        const delayed = (h: AgentHandler): AgentHandler => async (ctx) => {
          await settle(turns[k++ % turns.length]);
          return h(ctx);
        };
        return { w: delayed(base['w']!), flaky: delayed(base['flaky']!) };
      };
      const a = engineOn(store, clock, agents('A'), { workerId: 'A', concurrency: ca });
      const b = engineOn(store, clock, agents('B'), { workerId: 'B', concurrency: cb });
      const id = await a.create(RECOVERY_WORKFLOW, { trigger: { seed: 1 } });
      const [ra, rb] = await withClock(clock, Promise.all([a.drive(id, undefined), b.drive(id, undefined)]));
      expect(ra.status).toBe('completed');
      expect(rb.phases).toEqual(ra.phases);
      const keys = log.map((i) => `${i.phase}#${i.attempt}`);
      expect(new Set(keys).size).toBe(keys.length);
      expect(eventsOf(ra.events, 'task.completed')).toHaveLength(7);
      expect(ra.phases['tail']!.output!['n']).toBe(3 * 3 + 102 + 1 + 1);
      await expectReplays(store, ra);
      await a.close();
      await b.close();
    }),
    { numRuns: 40 },
  );
}

/** Driving a run the same engine already took up while serving gives the whole result, events included. */
export async function driveAfterServe(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const e = engineOn(store, clock, { x: () => ({}) }, { pollMs: 10 });
  const ctl = new AbortController();
  const serving = e.serve(ctl.signal);
  const model = wf(`${header('governance:\n  require_approval: {when: "trigger.big"}')}workflow:\n  a: {assign: x}\n  b: {assign: x, depends_on: [a]}`);
  const id = await e.create(model, { trigger: { big: true } });
  await untilStatus(store, id, 'waiting');
  // a serving worker keeps no run that waits on a gate (it costs no memory): drive() takes it up again
  await settle(20);
  expect(e.work.holds(id)).toBe(false);
  const p = e.drive(id, undefined);
  await e.approve(id, 'approval', 'u');
  // the clock moves: a claim that found the run held by the approval's commit backs off for a few (clock) milliseconds
  const r = await withClock(clock, p);
  expect(r.status).toBe('completed');
  expect(r.events).toEqual(await store.events(id));
  ctl.abort();
  await serving;
  await e.close();
}

/** Stopping a run from outside (cancel from another terminal, a budget exceeded elsewhere) aborts the attempts in flight through ctx.signal. */
export async function stopsAbortAttemptsInFlight(makeStore: StoreFactory): Promise<void> {
  for (const how of ['cancel', 'budget'] as const) {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const model = wf(`${header('governance: {max_cost_usd: 1}')}workflow:
  slow: {assign: s}
  spender: {assign: p, depends_on: [gate]}
  gate: {assign: g}
  after: {assign: s, depends_on: [slow]}`);
    const aborted: unknown[] = [];
    const go = deferred();
    const e = engineOn(store, clock, {
      s: (ctx) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener('abort', () => {
            aborted.push(ctx.phase);
            reject(ctx.signal.reason);
          });
        }),
      g: async () => (await go.promise, {}),
      p: () => ({ _cost: 5 }),
    });
    const id = await e.create(model);
    const p = e.drive(id, undefined);
    await until(async () => eventsOf(await store.events(id), 'task.claimed').length === 2, 'slow and gate run');
    if (how === 'cancel') {
      const other = engineOn(store, clock, {}, { workerId: 'T' });
      await other.cancel(id, 'stop it');
      await other.close();
    }
    go.resolve(undefined);
    const r = await p;
    expect(r.status, how).toBe(how === 'cancel' ? 'cancelled' : 'failed');
    if (how === 'budget') expect(r.error?.code).toBe('BudgetExceededError');
    await until(() => aborted.length === 1, 'the slow attempt is aborted');
    expect(aborted).toEqual(['slow']);
    expect(r.phases['slow']!.status).toBe('cancelled');
    expect(r.phases['after']!.status).toBe('cancelled');
    await settle();
    // the gate's late outcome may reach the store after the stop (a database's NOTIFY is not instant):
    // then it is recorded as stale and never applied
    for (const st of eventsOf(await store.events(id), 'task.stale_outcome')) expect(st).toMatchObject({ phase: 'gate', outcome: 'completed' });
    await expectReplays(store, r);
    await e.close();
  }
}

/**
 * A phase timeout aborts an attempt whose agent ignores its signal: its code runs on in worker A. The
 * retry is A's until that code settles (A starts it then) or its abort grace ends: worker B, looking at
 * the same run, never starts attempt 2 beside it. B used to take the retry at once (two executions).
 */
export async function abortedCodeHoldsItsRetry(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const model = wf(`${header()}workflow:
  a: {assign: x, x-timeout_ms: 300, retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 1}, outputs: {by: string}}`);
  const started: string[] = [];
  const running = new Set<string>();
  const overlaps: string[] = [];
  const release = deferredOf<void>();
  const deafFirst = (who: string) => async (ctx: AgentContext) => {
    started.push(`${who}${ctx.attempt}`);
    if (running.size > 0) overlaps.push(`${who}${ctx.attempt} beside ${[...running].join(',')}`);
    running.add(`${who}${ctx.attempt}`);
    try {
      if (ctx.attempt === 1) await release.promise; // ignores ctx.signal
      return { by: who };
    } finally {
      running.delete(`${who}${ctx.attempt}`);
    }
  };
  const a = engineOn(store, clock, { x: deafFirst('A') }, { workerId: 'A', isOwnerDead: () => false, abortGraceMs: 5000 });
  const id = await a.create(model, { runId: 'deaf' });
  const pa = a.drive(id, undefined);
  await until(() => started.length === 1, 'A starts attempt 1');
  const b = engineOn(store, clock, { x: deafFirst('B') }, { workerId: 'B', isOwnerDead: () => false, abortGraceMs: 5000 });
  const pb = b.drive(id, undefined);
  await clock.advance(300); // the timeout: attempt 1 fails, its code runs on
  await until(async () => eventsOf(await store.events(id), 'task.retrying').length === 1, 'the retry');
  const retrying = eventsOf(await store.events(id), 'task.retrying')[0] as { held_by?: string; held_until?: number };
  expect(retrying).toMatchObject({ held_by: 'A' });
  for (let t = 0; t < 8; t++) {
    await clock.advance(250);
    await settle(10);
  }
  expect(started).toEqual(['A1']); // 2 s later: nobody started attempt 2 beside A's running code
  release.resolve();
  // the holder starts it as soon as its code settles, without waiting for the rest of the grace
  await until(() => started.length === 2, 'attempt 2');
  expect(clock.now()).toBe(2300);
  const [ra, rb] = await withClock(clock, Promise.all([pa, pb]));
  expect(ra.status).toBe('completed');
  expect(rb.status).toBe('completed');
  expect(started).toEqual(['A1', 'A2']);
  expect(overlaps).toEqual([]);
  await a.close();
  await b.close();
}

/** The same, with code that never settles: the retry waits the abort grace (5 s), then goes on (A says `AbortIgnored` if the run is still going). */
export async function abortedCodeHoldsUntilItsGrace(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const model = wf(`${header()}workflow:
  a: {assign: x, x-timeout_ms: 300, retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 1}, outputs: {by: string}}`);
  const started: { who: string; at: number }[] = [];
  const deaf = (who: string) => (ctx: AgentContext) => {
    started.push({ who: `${who}${ctx.attempt}`, at: clock.now() });
    return ctx.attempt === 1 ? new Promise<never>(() => undefined) : { by: who };
  };
  const a = engineOn(store, clock, { x: deaf('A') }, { workerId: 'A', isOwnerDead: () => false, abortGraceMs: 5000 });
  const id = await a.create(model, { runId: 'deaf2' });
  const pa = a.drive(id, undefined);
  await until(() => started.length === 1, 'A starts attempt 1');
  const b = engineOn(store, clock, { x: deaf('B') }, { workerId: 'B', isOwnerDead: () => false, abortGraceMs: 5000 });
  const pb = b.drive(id, undefined);
  const [ra, rb] = await withClock(clock, Promise.all([pa, pb]));
  expect(ra.status).toBe('completed');
  expect(rb.status).toBe('completed');
  expect(started).toHaveLength(2);
  expect(started[1]!.at).toBeGreaterThanOrEqual(300 + 5000);
  // (A's AbortIgnored warning comes with its grace: B may have claimed and completed attempt 2 in that same instant, the run then over)
  await a.close();
  await b.close();
}

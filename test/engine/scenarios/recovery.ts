/** Crash-recovery scenarios: a crash at every fault point and hit, then a second engine on the same store; lease takeovers; timers across a restart. */
import { expect } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { createEngine, type Engine } from '../../../src/api/engine.js';
import type { AgentHandler } from '../../../src/engine/agent.js';
import { AgentError } from '../../../src/engine/agent.js';
import type { RunStore } from '../../../src/engine/ports.js';
import { FAULT_POINTS, type FaultPoint } from '../../../src/engine/worker.js';
import type { Json } from '../../../src/core/json.js';
import { eventsOf, expectReplays, header, settle, until, wf, withClock } from '../helpers.js';
import { type CrashOutcome, HOUR, type Invocation, RECOVERY_WORKFLOW, type StoreFactory, TAKEOVER, deferredOf, engineOn, partitioned, recoveryAgents, untilStatus } from './common.js';

/**
 * Runs RECOVERY_WORKFLOW on engine A armed with `fault`, expects the fault, then finishes it with
 * engine B on the same store and checks that nothing was lost or repeated. Resolves to whether the
 * fault fired (a hit count past the run's end does not fire).
 */
export async function crashAndResume(makeStore: StoreFactory, at: FaultPoint, hit: number, concurrency?: number): Promise<CrashOutcome> {
  const store = await makeStore();
  const clock = new ManualClock(1_000_000);
  const log: Invocation[] = [];
  const runId = `crash-${at}-${hit}`;
  const a = engineOn(store, clock, recoveryAgents('A', clock, log), { workerId: 'A', faults: { at, hit }, isOwnerDead: () => false, ...(concurrency !== undefined ? { concurrency } : {}) });
  let fault: unknown;
  try {
    const r = await withClock(clock, a.run(RECOVERY_WORKFLOW, { runId, trigger: { seed: 1 } }));
    expect(r.status).toBe('completed');
  } catch (e) {
    fault = e;
  }
  await a.close();
  if (fault === undefined) return { crashed: false };
  expect(fault).toMatchObject({ code: 'fault-injected' });
  await settle();
  const ofA = log.length;
  // a process that dies before invoking its h-th attempt invoked exactly h - 1 (none after the crash)
  if (at === 'attempt.before-invoke') expect(ofA).toBe(hit - 1);

  // what was durable at the crash
  const before = await a.inspect(runId);
  const crashAt = clock.now();
  const pre = before.result.phases;
  const preCompleted = Object.entries(pre).filter(([, p]) => p.status === 'completed');
  const pendingRetry = before.state.phases.get('flaky')!.status === 'ready' ? before.state.phases.get('flaky')!.notBefore : undefined;

  // the restart comes later than the crash
  await clock.advance(1000);
  const restartAt = clock.now();
  const b = engineOn(store, clock, recoveryAgents('B', clock, log), { workerId: 'B', isOwnerDead: (o) => o === 'A', ...(concurrency !== undefined ? { concurrency } : {}) });
  const r = await withClock(clock, b.resume(runId));
  await b.close();

  expect(r.status, `${at} #${hit}`).toBe('completed');
  // the dead owner is known: B took its tasks over at once, not when A's (day-long) leases expired
  expect(r.ended_at! - restartAt).toBeLessThan(60_000);
  for (const [name, p] of preCompleted) {
    // byte for byte, and never run again
    expect(JSON.stringify(r.phases[name]!.output), name).toBe(JSON.stringify(p.output));
    expect(r.phases[name]!.attempts).toBe(p.attempts);
    expect(r.phases[name]!.cost_usd).toBe(p.cost_usd);
    expect(log.filter((i) => i.phase === name && i.engine === 'B'), name).toEqual([]);
  }
  for (const name of Object.keys(r.phases)) {
    const mine = log.filter((i) => i.phase === name);
    // one key for every attempt of a task; no attempt number runs twice
    expect(new Set(mine.map((i) => i.key)).size, name).toBe(1);
    expect(mine[0]!.key).toBe(r.phases[name]!.task_id);
    expect(new Set(mine.map((i) => i.attempt)).size, name).toBe(mine.length);
    const byB = mine.filter((i) => i.engine === 'B');
    if (pre[name]!.status !== 'completed') {
      // B's first attempt is a new one
      expect(byB[0]?.attempt, name).toBe(pre[name]!.attempts + 1);
      if (name !== 'flaky') expect(byB, name).toHaveLength(1);
    }
    // A ran nothing after its crash
    expect(log.slice(ofA).filter((i) => i.engine === 'A')).toEqual([]);
  }
  // the flaky phase: one failed attempt and one success in all
  const flakyOk = log.filter((i) => i.phase === 'flaky' && i.attempt > 1);
  expect(flakyOk.length).toBeGreaterThanOrEqual(1);
  // a retry delay pending at the crash fires at its original time, not from the restart
  if (pendingRetry !== undefined) {
    const claim = eventsOf(r.events, 'task.claimed').find((e) => e.phase === 'flaky' && e.at >= crashAt && e.worker === 'B');
    expect(claim?.at).toBe(Math.max(pendingRetry, restartAt));
  }
  // the run's cost is the sum of its phases' costs
  expect(r.cost_usd).toBeCloseTo(Object.values(r.phases).reduce((s, p) => s + p.cost_usd, 0), 6);
  // the chain's arithmetic holds whichever engine ran which phase
  expect(r.phases['root']!.output!['n']).toBe(2);
  expect(r.phases['tail']!.output!['n']).toBe(3 * 3 + 102 + 1 + 1);
  await expectReplays(store, r);
  return { crashed: true };
}

/** Every hit of a fault point until a run no longer reaches it. Returns how many crashes were tested. */
export async function crashEverywhere(makeStore: StoreFactory, at: FaultPoint, concurrency?: number): Promise<number> {
  let n = 0;
  for (let hit = 1; hit < 200; hit++) {
    const o = await crashAndResume(makeStore, at, hit, concurrency);
    if (!o.crashed) break;
    n++;
  }
  return n;
}

/** A crashed worker's lease expires (no isOwnerDead): a second engine takes over only then. */
export async function leaseExpiryTakeover(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const leaseMs = 10_000;
  const log: string[] = [];
  const a = engineOn(store, clock, { slow: (ctx) => (log.push(`A${ctx.attempt}`), {}), w: () => ({}) }, { workerId: 'A', leaseMs, faults: { at: 'attempt.after-return' }, isOwnerDead: () => false });
  await expect(a.run(TAKEOVER, { runId: 'lease' })).rejects.toMatchObject({ code: 'fault-injected' });
  await a.close();
  const claimedAt = eventsOf(await store.events('lease'), 'task.claimed')[0]!.at;
  const b = engineOn(store, clock, { slow: (ctx) => (log.push(`B${ctx.attempt}`), { by: 'B' }), w: (ctx) => ({ by: ctx.input['by'] as string }) }, { workerId: 'B', leaseMs, isOwnerDead: () => false });
  const p = b.resume('lease');
  await settle();
  expect(log).toEqual(['A1']); // A's lease still holds
  const r = await withClock(clock, p);
  expect(r.status).toBe('completed');
  expect(log).toEqual(['A1', 'B2']);
  const expired = eventsOf(r.events, 'task.lease_expired');
  expect(expired).toEqual([expect.objectContaining({ phase: 'x', attempt: 1, owner: 'A' })]);
  expect(expired[0]!.at).toBeGreaterThan(claimedAt + leaseMs);
  expect(r.phases['x']).toMatchObject({ attempts: 2, output: { by: 'B' } });
  await expectReplays(store, r);
  await b.close();
}

/**
 * A stalled worker's attempt completes after its lease expired and another worker took the task:
 * the late completion is recorded as task.stale_outcome and never overwrites the newer attempt.
 */
export async function lateCompletionAfterTakeover(makeStore: StoreFactory): Promise<void> {
  for (const newerDone of [false, true]) {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const leaseMs = 10_000;
    const dA = deferredOf<Record<string, Json>>();
    const dB = deferredOf<Record<string, Json>>();
    const a = createEngine({ store: partitioned(store), clock, leaseMs, workerId: 'A', isOwnerDead: () => false, agents: { slow: () => dA.promise, w: () => ({ by: 'A' }) } });
    const pa = a.drive(await a.create(TAKEOVER, { runId: 'late' }), undefined);
    pa.catch(() => undefined);
    await until(async () => eventsOf(await store.events('late'), 'task.claimed').length === 1, 'A claims x');
    await clock.advance(leaseMs + 1);
    const b = engineOn(store, clock, { slow: () => dB.promise, w: (ctx) => ({ by: `y after ${ctx.input['by'] as string}` }) }, { workerId: 'B', leaseMs, isOwnerDead: () => false });
    const pb = b.resume('late');
    await until(async () => eventsOf(await store.events('late'), 'task.claimed').some((e) => e.worker === 'B'), 'B takes x over');
    if (newerDone) {
      dB.resolve({ by: 'B' });
      await until(async () => eventsOf(await store.events('late'), 'task.completed').some((e) => e.phase === 'x'), 'B completes x');
    }
    dA.resolve({ by: 'A' });
    await until(async () => eventsOf(await store.events('late'), 'task.stale_outcome').length === 1, 'the stale outcome');
    const stale = eventsOf(await store.events('late'), 'task.stale_outcome')[0]!;
    expect(stale).toMatchObject({ phase: 'x', attempt: 1, worker: 'A', outcome: 'completed' });
    const mid = await b.inspect('late');
    expect(mid.result.phases['x']!.attempts).toBe(2);
    if (!newerDone) {
      expect(mid.result.phases['x']!.status).toBe('running');
      expect(mid.result.phases['x']!.output).toBeNull();
      expect(mid.tasks.find((t) => t.phase === 'x')).toMatchObject({ status: 'running', attempt: 2, leaseOwner: 'B' });
      dB.resolve({ by: 'B' });
    }
    const r = await withClock(clock, pb);
    await a.close();
    expect(r.status).toBe('completed');
    expect(r.phases['x']).toMatchObject({ status: 'completed', attempts: 2, output: { by: 'B' } });
    expect(r.phases['y']!.output).toEqual({ by: 'y after B' });
    expect(eventsOf(r.events, 'task.completed').filter((e) => e.phase === 'x')).toHaveLength(1);
    await expectReplays(store, r);
    await b.close();
  }
}

// ---- crash recovery with gates and input ------------------------------------------------------------

export const GATED_WORKFLOW = wf(`${header(`governance:
  require_approval: {when: "a.n > 0", approvers: [alice]}`)}workflow:
  a: {assign: w, outputs: {n: number}}
  side: {assign: w, outputs: {n: number}}
  ask: {assign: asker, depends_on: [a], outputs: {answer: string}}
  pub: {assign: w, depends_on: [ask], inputs: {x: ask.answer}, outputs: {n: number}, x-require_approval: {approvers: [ed]}}`);

export function gatedAgents(engine: string, log: Invocation[]): Record<string, AgentHandler> {
  return {
    w: async (ctx) => {
      log.push({ engine, phase: ctx.phase, attempt: ctx.attempt, key: ctx.idempotencyKey });
      await settle(1);
      return { n: 1, seen: ctx.input['x'] ?? null };
    },
    asker: async (ctx) => {
      log.push({ engine, phase: ctx.phase, attempt: ctx.attempt, key: ctx.idempotencyKey });
      const answer = await ctx.requestInput({ question: 'go?', choices: ['go', 'stop'] });
      return { answer: answer as string };
    },
  };
}

/** Awaits `p` while a human at another terminal decides every gate that opens, and the clock moves on. */
export async function withHuman<T>(p: Promise<T>, store: RunStore, runId: string, clock: ManualClock): Promise<T> {
  let done = false;
  let value: { ok: true; v: T } | { ok: false; e: unknown } | undefined;
  p.then(
    (v) => ((done = true), (value = { ok: true, v })),
    (e: unknown) => ((done = true), (value = { ok: false, e })),
  );
  const human = engineOn(store, clock, {}, { workerId: 'human' });
  for (let i = 0; i < 3000 && !done; i++) {
    await settle(2);
    if (done) break;
    // the run may not be stored yet (a database round trip away)
    const seen = await human.inspect(runId).catch((e: unknown) => {
      if ((e as { code?: string }).code === 'unknown-run') return undefined;
      throw e;
    });
    for (const g of seen?.result.gates ?? []) {
      if (g.status !== 'open') continue;
      const act = g.kind === 'input' ? human.respond(runId, g.id, 'go', 'someone') : human.approve(runId, g.id, g.approvers[0] ?? 'someone');
      await act.catch(() => undefined);
    }
    if (i % 10 === 9) await clock.tick();
  }
  await human.close();
  if (!value) throw new Error('the run did not end');
  if (!value.ok) throw value.e;
  return value.v;
}

export async function crashAndResumeGated(makeStore: StoreFactory, at: FaultPoint, hit: number): Promise<CrashOutcome> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const log: Invocation[] = [];
  const runId = `gated-${at}-${hit}`;
  const a = engineOn(store, clock, gatedAgents('A', log), { workerId: 'A', faults: { at, hit }, isOwnerDead: () => false });
  let fault: unknown;
  try {
    const r = await withHuman(a.run(GATED_WORKFLOW, { runId }), store, runId, clock);
    expect(r.status).toBe('completed');
  } catch (e) {
    fault = e;
  }
  await a.close();
  if (fault === undefined) return { crashed: false };
  expect(fault).toMatchObject({ code: 'fault-injected' });
  await settle();
  const before = (await a.inspect(runId)).result.phases;
  const b = engineOn(store, clock, gatedAgents('B', log), { workerId: 'B', isOwnerDead: (o) => o === 'A' });
  const r = await withHuman(b.resume(runId), store, runId, clock);
  await b.close();
  expect(r.status, `${at} #${hit}`).toBe('completed');
  expect(r.phases['pub']!.output).toEqual({ n: 1, seen: 'go' });
  expect(r.phases['ask']!.output).toEqual({ answer: 'go' });
  expect(r.gates.map((g) => [g.id, g.status]).sort()).toEqual([
    ['approval', 'approved'],
    ['approve-pub', 'approved'],
    ['input-ask-1', 'answered'],
  ]);
  for (const [name, p] of Object.entries(before)) {
    if (p.status === 'completed') {
      expect(JSON.stringify(r.phases[name]!.output)).toBe(JSON.stringify(p.output));
      expect(log.filter((i) => i.phase === name && i.engine === 'B')).toEqual([]);
    }
  }
  for (const name of Object.keys(r.phases)) {
    const mine = log.filter((i) => i.phase === name);
    expect(new Set(mine.map((i) => i.attempt)).size, name).toBe(mine.length);
  }
  await expectReplays(store, r);
  return { crashed: true };
}

export async function crashEverywhereGated(makeStore: StoreFactory, at: FaultPoint): Promise<number> {
  let n = 0;
  for (let hit = 1; hit < 200; hit++) {
    const o = await crashAndResumeGated(makeStore, at, hit);
    if (!o.crashed) break;
    n++;
  }
  return n;
}

/** The run deadline and a gate's expiry pending when the driver died fire at their original times after a resume. */
export async function timersKeepTheirTimeAcrossARestart(makeStore: StoreFactory): Promise<void> {
  // the run deadline
  {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const model = wf(`${header()}workflow:
  a: {assign: x}
  b: {assign: x, depends_on: [a]}`);
    const a = engineOn(store, clock, { x: () => new Promise(() => undefined) }, { workerId: 'A' });
    const id = await a.create(model, { timeoutMs: 10_000 });
    const pa = a.drive(id, undefined);
    await until(async () => eventsOf(await store.events(id), 'task.claimed').length === 1, 'a runs');
    await clock.advance(3000);
    await a.close();
    await expect(pa).rejects.toBeDefined();
    await clock.advance(2000);
    const b = engineOn(store, clock, { x: () => new Promise(() => undefined) }, { workerId: 'B', isOwnerDead: (o) => o === 'A' });
    const r = await withClock(clock, b.resume(id));
    expect(r.status).toBe('failed');
    expect(r.error).toMatchObject({ code: 'RunTimeout' });
    expect(clock.now()).toBe(10_000);
    expect(r.events.at(-1)!.at).toBe(10_000);
    await expectReplays(store, r);
    await b.close();
  }
  // a gate's expiry (on_timeout: abort)
  {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const model = wf(`${header(`governance:
  require_approval: {timeout_hours: 2, on_timeout: abort}`)}workflow:
  a: {assign: x}`);
    const a = engineOn(store, clock, { x: () => ({}) }, { workerId: 'A' });
    const id = await a.create(model);
    const pa = a.drive(id, undefined);
    await untilStatus(store, id, 'waiting');
    await a.close();
    await expect(pa).rejects.toBeDefined();
    await clock.advance(HOUR);
    const b = engineOn(store, clock, { x: () => ({}) }, { workerId: 'B' });
    const r = await withClock(clock, b.resume(id));
    expect(r.error).toMatchObject({ code: 'ApprovalTimeout' });
    expect(clock.now()).toBe(2 * HOUR);
    await b.close();
  }
}

/** Workflows whose runs end in other ways: a failure with skips and dependents, a fallback agent, a budget stop. */
export const ENDINGS: Record<string, { model: ReturnType<typeof wf>; agents: () => Record<string, AgentHandler> }> = {
  failure: {
    model: wf(`${header()}workflow:
  a: {assign: x, outputs: {v: number}}
  b: {assign: bad, depends_on: [a], retry: {max_attempts: 2, initial_delay_ms: 500}}
  c: {assign: x, depends_on: [b]}
  d: {assign: x, depends_on: [a], skip_when: "a.v > 0", outputs: {v: number}}
  e: {assign: x, depends_on: [d], inputs: {v: d.v}}
  f: {assign: x, depends_on: [a], inputs: {v: a.v}, outputs: {v: number}}`),
    agents: () => ({ x: (ctx) => ({ v: ((ctx.input['v'] as number | undefined) ?? 0) + 1 }), bad: () => Promise.reject(new AgentError('Broken', 'always')) }),
  },
  fallback: {
    model: wf(`${header()}workflow:
  a: {assign: x, outputs: {by: string}, retry: {max_attempts: 2, initial_delay_ms: 100, fallback_agent: y}}
  b: {assign: y, depends_on: [a], inputs: {by: a.by}, outputs: {by: string}}`),
    agents: () => ({ x: () => Promise.reject(new Error('down')), y: (ctx) => ({ by: `y after ${(ctx.input['by'] as string | undefined) ?? 'nothing'}` }) }),
  },
  // the cost comes with the outcome (`_cost`), never ahead of it: a cost reported while the attempt runs may be
  // committed before the outcome, and an attempt that a crash then runs again spends it again, which the
  // budget counts (at least once), so that run does not end as the one that never crashed. Whether a report
  // got a commit of its own depended on the worker loop's timing (a flake under load); that case is
  // costReportedThenCrashed below, made to happen every time
  budget: {
    model: wf(`${header('governance: {max_cost_usd: 1}')}workflow:
  a: {assign: x}
  b: {assign: x, depends_on: [a]}
  c: {assign: x, depends_on: [b]}`),
    agents: () => ({ x: () => ({ _cost: 0.5 }) }),
  },
};

/**
 * A cost an attempt reported is committed, then its worker dies before the outcome: the new attempt
 * reports its own, and both count (the money was spent twice: at least once, as the attempts are). The
 * agent waits until its report is stored before it returns, so the crash falls between them every time.
 */
export async function costReportedThenCrashed(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const model = wf(`${header('governance: {max_cost_usd: 10}')}workflow:
  a: {assign: x}
  b: {assign: x, depends_on: [a]}`);
  const runId = 'cost-then-crash';
  const reported = async (phase: string, attempt: number) =>
    until(async () => eventsOf(await store.events(runId), 'task.cost').some((e) => e.phase === phase && e.attempt === attempt), `the cost of ${phase} #${attempt} stored`);
  const x = (engine: string): AgentHandler => async (ctx) => {
    ctx.reportCost(0.4);
    if (engine === 'A') await reported(ctx.phase, ctx.attempt);
    return { _cost: 0.1 };
  };
  // A's commits: the claim of a, a's reported cost, then a's outcome: it dies before the third
  const a = engineOn(store, clock, { x: x('A') }, { workerId: 'A', faults: { at: 'flush.before-commit', hit: 3 }, isOwnerDead: () => false });
  await expect(withClock(clock, a.run(model, { runId }))).rejects.toMatchObject({ code: 'fault-injected' });
  await a.close();
  const stored = await store.events(runId);
  expect(eventsOf(stored, 'task.cost').map((e) => [e.phase, e.attempt, e.usd])).toEqual([['a', 1, 0.4]]);
  expect(eventsOf(stored, 'task.completed')).toEqual([]);
  const b = engineOn(store, clock, { x: x('B') }, { workerId: 'B', isOwnerDead: (o) => o === 'A' });
  const r = await withClock(clock, b.resume(runId));
  await b.close();
  expect(r.status).toBe('completed');
  expect(r.phases['a']).toMatchObject({ status: 'completed', attempts: 2 });
  expect(r.phases['a']!.cost_usd).toBeCloseTo(0.4 + 0.4 + 0.1, 9);
  expect(r.phases['b']!.cost_usd).toBeCloseTo(0.5, 9);
  expect(r.cost_usd).toBeCloseTo(1.4, 9);
  await expectReplays(store, r);
}

/** The same run crashed at `at` (hit `hit`) and resumed ends exactly as the run that never crashed. */
export async function crashMatchesReference(makeStore: StoreFactory, ending: string): Promise<number> {
  const { model, agents } = ENDINGS[ending]!;
  const summary = (r: Awaited<ReturnType<Engine['run']>>) =>
    Object.fromEntries(Object.entries(r.phases).map(([n, p]) => [n, { status: p.status, output: p.output, error: p.error?.code ?? null, agent: p.agent ?? null }]));
  const refClock = new ManualClock(0);
  const ref = engineOn(await makeStore(), refClock, agents());
  const expected = await withClock(refClock, ref.run(model));
  await ref.close();
  let crashes = 0;
  for (const at of FAULT_POINTS) {
    for (let hit = 1; hit < 100; hit++) {
      const store = await makeStore();
      const clock = new ManualClock(0);
      const a = engineOn(store, clock, agents(), { workerId: 'A', faults: { at, hit }, isOwnerDead: () => false });
      let fault: unknown;
      const runId = `end-${ending}`;
      try {
        const r = await withClock(clock, a.run(model, { runId }));
        expect(summary(r)).toEqual(summary(expected));
      } catch (e) {
        fault = e;
      }
      await a.close();
      if (fault === undefined) break;
      expect(fault).toMatchObject({ code: 'fault-injected' });
      crashes++;
      const b = engineOn(store, clock, agents(), { workerId: 'B', isOwnerDead: (o) => o === 'A' });
      const r = await withClock(clock, b.resume(runId));
      await b.close();
      expect(r.status, `${ending}: ${at} #${hit}`).toBe(expected.status);
      expect(r.error?.code ?? null).toBe(expected.error?.code ?? null);
      expect(summary(r), `${ending}: ${at} #${hit}`).toEqual(summary(expected));
      await expectReplays(store, r);
    }
  }
  return crashes;
}

/**
 * Real timing, simulated: every store call takes time on the manual clock (`slowly`), so a due time
 * can pass *during* a commit, exactly when the old engine lost its wake-ups. Short retry delays
 * (0, 1, 2 ms), gate expiries, run deadlines and lease takeovers must all still fire, on every store.
 */
import { expect } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import { AgentError, type AgentContext } from '../../../src/engine/agent.js';
import type { RunStore } from '../../../src/engine/ports.js';
import { eventsOf, expectReplays, header, until, wf, withClock } from '../helpers.js';
import { engineOn, HOUR, overriding, type StoreFactory } from './common.js';

/**
 * The store with every call taking simulated time: before it reaches the store (a lock, a round
 * trip) and between the decision and the commit. `step` says how long, in ms.
 */
export function slowly(store: RunStore, clock: ManualClock, step: () => number): RunStore {
  return overriding(store, {
    transact: (runId, knownSeq, decide, opts) => {
      clock.jump(step());
      return store.transact(
        runId,
        knownSeq,
        (delta, now) => {
          const d = decide(delta, now);
          clock.jump(step());
          return d;
        },
        opts,
      );
    },
    // the fast path: time passes before the batch reaches the store and while it commits
    ...(store.commitMany
      ? {
          commitMany: async (items: Parameters<NonNullable<RunStore['commitMany']>>[0]) => {
            clock.jump(step());
            const r = await store.commitMany!(items);
            clock.jump(step());
            return r;
          },
        }
      : {}),
    findWork: (q) => {
      clock.jump(step());
      return store.findWork(q);
    },
    renewLeases: (owner, until, held) => {
      clock.jump(step());
      return store.renewLeases(owner, until, held);
    },
    events: (runId, after) => {
      clock.jump(step());
      return store.events(runId, after);
    },
  });
}

/** 1-3 ms per store call, a fixed sequence (no randomness in a test). */
function steps(): () => number {
  let i = 0;
  return () => [1, 3, 2, 1, 2][i++ % 5]!;
}

const flakyOnce = (ctx: AgentContext): Record<string, number> => {
  if (ctx.attempt === 1) throw new AgentError('Flaky', 'the first attempt fails');
  return { n: ctx.attempt };
};

/** A chain and a fan whose every phase fails once and retries after `delay` ms, while each store call takes 1-3 ms. */
async function shortRetries(makeStore: StoreFactory, delay: number): Promise<void> {
  const clock = new ManualClock(1_000);
  const store = slowly(await makeStore(), clock, steps());
  const retry = `retry: {max_attempts: 3, backoff: constant, initial_delay_ms: ${delay}}`;
  const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {n: number}, ${retry}}
  b: {assign: x, depends_on: [a], outputs: {n: number}, ${retry}}
  c: {assign: x, depends_on: [a], outputs: {n: number}, ${retry}}
  d: {assign: x, depends_on: [b, c], outputs: {n: number}, ${retry}}`);
  const engine = engineOn(store, clock, { x: flakyOnce });
  const id = await engine.create(model, { runId: `retry-${delay}` });
  const r = await withClock(clock, engine.drive(id, undefined), 2000);
  expect(r.status).toBe('completed');
  for (const p of ['a', 'b', 'c', 'd']) expect(r.phases[p]).toMatchObject({ status: 'completed', attempts: 2 });
  // the retry's due time is kept by the store with the task row: never claimed before it
  for (const e of eventsOf(r.events, 'task.retrying')) {
    const claim = eventsOf(r.events, 'task.claimed').find((c) => c.phase === e.phase && c.attempt === e.next_attempt)!;
    expect(claim.at).toBeGreaterThanOrEqual(e.at + delay);
  }
  await expectReplays(store, r);
  await engine.close();
}

export const retryAfter0ms = (m: StoreFactory): Promise<void> => shortRetries(m, 0);
export const retryAfter1ms = (m: StoreFactory): Promise<void> => shortRetries(m, 1);
export const retryAfter2ms = (m: StoreFactory): Promise<void> => shortRetries(m, 2);

/** A gate that expires during a commit proceeds; a deadline that passes during one ends the run. */
export async function gateExpiryAndDeadlineDuringCommits(makeStore: StoreFactory): Promise<void> {
  const clock = new ManualClock(1_000);
  const store = slowly(await makeStore(), clock, steps());
  const gated = wf(`${header()}workflow:
  a: {assign: x, outputs: {n: number}, x-require_approval: {timeout_hours: 0.000001, on_timeout: proceed}}
  b: {assign: x, depends_on: [a], outputs: {n: number}}`);
  const engine = engineOn(store, clock, { x: (ctx) => ({ n: ctx.attempt }), slow: () => new Promise(() => undefined) });
  const r = await withClock(clock, engine.drive(await engine.create(gated, { runId: 'expiry' }), undefined), 2000);
  expect(r.status).toBe('completed');
  expect(eventsOf(r.events, 'gate.expired').map((e) => e.action)).toEqual(['proceed']);
  const deadline = wf(`${header()}workflow:
  a: {assign: slow}`);
  const d = await withClock(clock, engine.drive(await engine.create(deadline, { runId: 'deadline', timeoutMs: 5 }), undefined), 2000);
  expect(d.status).toBe('failed');
  expect(d.error).toMatchObject({ code: 'RunTimeout' });
  expect(d.ended_at! - d.started_at).toBeGreaterThanOrEqual(5);
  await engine.close();
  void HOUR;
}

/**
 * A worker that stops renewing (its process froze) loses its task once the lease expires, while
 * store calls take time; the takeover is fenced: a renewal in between keeps the task where it is.
 */
export async function leaseTakeoverDuringCommits(makeStore: StoreFactory): Promise<void> {
  const clock = new ManualClock(1_000);
  const base = await makeStore();
  const leaseMs = 300;
  const frozen = overriding(base, { renewLeases: () => Promise.resolve([]) });
  const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {by: string}}
  b: {assign: x, depends_on: [a], outputs: {by: string}}`);
  const started: string[] = [];
  const a = engineOn(slowly(frozen, clock, steps()), clock, { x: (ctx) => (started.push(`A${ctx.phase}${ctx.attempt}`), ctx.phase === 'a' ? new Promise(() => undefined) : { by: 'A' }) }, { workerId: 'A', leaseMs, isOwnerDead: () => false });
  const id = await a.create(model, { runId: 'takeover' });
  const pa = a.drive(id, undefined).catch(() => undefined);
  await until(() => started.length === 1, 'A starts a');
  const b = engineOn(slowly(base, clock, steps()), clock, { x: (ctx) => (started.push(`B${ctx.phase}${ctx.attempt}`), { by: 'B' }) }, { workerId: 'B', leaseMs, isOwnerDead: () => false });
  const rb = await withClock(clock, b.drive(id, undefined), 3000);
  expect(rb.status).toBe('completed');
  expect(started).toEqual(['Aa1', 'Ba2', 'Bb1']);
  const expired = eventsOf(rb.events, 'task.lease_expired');
  expect(expired).toHaveLength(1);
  // taken over only once the lease had expired in the store's clock
  expect(expired[0]!.at).toBeGreaterThan(eventsOf(rb.events, 'task.claimed')[0]!.lease_expires_at!);
  await a.close();
  await pa;
  await b.close();
}

export const TIMING_SCENARIOS: Record<string, (makeStore: StoreFactory) => Promise<void>> = {
  retryAfter0ms,
  retryAfter1ms,
  retryAfter2ms,
  gateExpiryAndDeadlineDuringCommits,
  leaseTakeoverDuringCommits,
};

/** Shared by the scenarios: engines on a store, waiting on the stored run, and the workflows and agents several families use. */
import { ManualClock } from '../../../src/core/clock.js';
import { createEngine, type Engine, type EngineOptions } from '../../../src/api/engine.js';
import type { AgentContext, AgentHandler } from '../../../src/engine/agent.js';
import { AgentError } from '../../../src/engine/agent.js';
import type { RunStore } from '../../../src/engine/ports.js';
import type { Json } from '../../../src/core/json.js';
import { header, settle, until, wf } from '../helpers.js';

export type StoreFactory = () => RunStore | Promise<RunStore>;

export const HOUR = 3_600_000;

/** Long leases: heartbeats would otherwise be most of a manual clock's sleepers. */
export const LONG_LEASE = 86_400_000;

export function engineOn(store: RunStore, clock: ManualClock, agents: Record<string, AgentHandler>, extra: Partial<EngineOptions> = {}): Engine {
  return createEngine({ store, clock, agents, leaseMs: LONG_LEASE, ...extra });
}

export async function statusOf(store: RunStore, runId: string): Promise<string> {
  return (await store.run(runId))!.status;
}

export async function untilStatus(store: RunStore, runId: string, status: string): Promise<void> {
  await until(async () => (await statusOf(store, runId)) === status, `run ${runId} ${status}`);
}

export async function gateOf(engine: Engine, runId: string, gateId: string) {
  const { result } = await engine.inspect(runId);
  return result.gates.find((g) => g.id === gateId);
}

// ---- run gate ----------------------------------------------------------------------------------

export const RISKY = (extraGov = '', aSkip = '') =>
  wf(`${header(`governance:
  require_approval: {when: "a.risk > 5", approvers: [alice]${extraGov}}
  escalation: {contact: "ops@example.com"}`)}workflow:
  a: {assign: x, outputs: {risk: number}${aSkip}}
  b: {assign: x, depends_on: [a]}
  c: {assign: y}
  d: {assign: y, depends_on: [c]}`);

export async function untilEventType(store: RunStore, runId: string, type: string): Promise<void> {
  await until(async () => (await store.events(runId)).some((x) => x.type === type), type);
}

// ---- input gates --------------------------------------------------------------------------------

export const ASK = wf(`${header()}workflow:
  ask: {assign: asker, outputs: {answer: any}}
  after: {assign: plain, depends_on: [ask], inputs: {a: ask.answer}}
  side: {assign: plain}`);

/** A chain, a fan, a phase with a retry delay, and costs (reported and `_cost`). */
export const RECOVERY_WORKFLOW = wf(`${header('governance: {max_cost_usd: 100}')}workflow:
  root: {assign: w, inputs: {seed: $trigger.seed}, outputs: {n: number}}
  f1: {assign: w, depends_on: [root], inputs: {n: root.n}, outputs: {n: number}}
  f2: {assign: w, depends_on: [root], inputs: {n: root.n}, outputs: {n: number}}
  f3: {assign: w, depends_on: [root], inputs: {n: root.n}, outputs: {n: number}}
  flaky: {assign: flaky, depends_on: [root], inputs: {n: root.n}, outputs: {n: number}, retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 5000}}
  join: {assign: w, depends_on: [f1, f2, f3, flaky], inputs: {a: f1.n, b: f2.n, c: f3.n, d: flaky.n}, outputs: {n: number}}
  tail: {assign: w, depends_on: [join], inputs: {n: join.n}, outputs: {n: number}}`);

export interface Invocation {
  engine: string;
  phase: string;
  attempt: number;
  key: string;
}

/** Agents that record every invocation; outputs depend on the attempt and the time, so a re-run would show. */
export function recoveryAgents(engine: string, clock: ManualClock, log: Invocation[]): Record<string, AgentHandler> {
  const note = (ctx: AgentContext) => log.push({ engine, phase: ctx.phase, attempt: ctx.attempt, key: ctx.idempotencyKey });
  const sum = (input: Record<string, Json>) => Object.values(input).reduce<number>((s, v) => s + (typeof v === 'number' ? v : 0), 0);
  return {
    w: async (ctx) => {
      note(ctx);
      await settle(1);
      ctx.reportCost(0.01);
      return { n: sum(ctx.input) + 1, by: `${engine}#${ctx.attempt}@${clock.now()}`, _cost: 0.02 };
    },
    flaky: async (ctx) => {
      note(ctx);
      await settle(1);
      if (ctx.attempt === 1) throw new AgentError('Flaky', 'first attempts fail');
      return { n: sum(ctx.input) + 100, by: `${engine}#${ctx.attempt}@${clock.now()}` };
    },
  };
}

export type CrashOutcome = { crashed: false } | { crashed: true };

export const TAKEOVER = wf(`${header()}workflow:
  x: {assign: slow, outputs: {by: string}}
  y: {assign: w, depends_on: [x], inputs: {by: x.by}, outputs: {by: string}}`);

/** The store with some of its methods replaced (a failing network, a counter): the rest reach the store. */
export function overriding(store: RunStore, over: Partial<RunStore>): RunStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (Object.prototype.hasOwnProperty.call(over, prop)) return over[prop as keyof RunStore];
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** A waitForChange that hears of no change: it ends only when its signal aborts. */
export const deaf: RunStore['waitForChange'] = (_ms, signal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) resolve();
    else signal?.addEventListener('abort', () => resolve(), { once: true });
  });

/** A store as seen by a stalled worker: its heartbeats reach nobody and it hears of no change. */
export function partitioned(store: RunStore): RunStore {
  return overriding(store, { renewLeases: () => Promise.resolve([]), waitForChange: deaf });
}

export function deferredOf<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * A clock whose time is set by the test and whose timers never fire on their own. A sleep shorter than
 * a second is a worker's backoff (its transaction found the run locked by another, PostgreSQL; a commit
 * that failed), not a timer of the run: it ends in real time, and durations are measured on the real
 * monotonic clock. When neither moved, a worker that backed off 3 ms as the test approved a gate held
 * the approval for good (2-3 in 100 runs on PostgreSQL).
 */
export class SetClock {
  t = 0;
  now(): number {
    return this.t;
  }
  monotonic(): number {
    return performance.now();
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = ms < 1000 ? setTimeout(resolve, Math.max(0, ms)) : undefined;
      signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
}

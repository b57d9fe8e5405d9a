/** Fan-out scenarios (`for_each`): items as tasks, gathered outputs, tolerated failures, item skips, retries, parallelism, crashes, `--failed-items`. */
import { expect } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import type { AgentContext, AgentHandler } from '../../../src/engine/agent.js';
import { AgentError } from '../../../src/engine/agent.js';
import type { RunStore } from '../../../src/engine/ports.js';
import { FAULT_POINTS, type FaultPoint } from '../../../src/engine/worker.js';
import type { RunResult } from '../../../src/engine/result.js';
import { eventsOf, expectReplays, header, settle, wf, withClock } from '../helpers.js';
import { type StoreFactory, engineOn } from './common.js';

/** outline -> draft (one item per section) -> assemble. */
export function fanWorkflow(fan = 'max_parallel: 2', draftExtra = ''): ReturnType<typeof wf> {
  return wf(`${header()}types:
  Section: {name: string, words: integer}
workflow:
  outline:
    assign: o
    inputs: {n: $trigger.n}
    outputs: {sections: "Section[]"}
  draft:
    assign: d
    depends_on: [outline]
    for_each: outline.sections
    ${fan}
    inputs: {name: $item.name, position: $index}
    outputs: {text: string}
    ${draftExtra}
  assemble:
    assign: a
    depends_on: [draft]
    inputs: {texts: draft.text}
    outputs: {all: string}`);
}

const sections = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `s${i}`, words: i % 3 === 0 ? 0 : 10 * i }));

export interface FanLog {
  calls: { key: string; attempt: number; index: number | undefined; phase: string }[];
  running: number;
  peak: number;
}

/** Agents: `o` outlines `n` sections, `d` drafts one (failing those `fails` says), `a` joins. */
export function fanAgents(log: FanLog, fails: (ctx: AgentContext) => boolean = () => false): Record<string, AgentHandler> {
  return {
    o: (ctx) => ({ sections: sections(ctx.input['n'] as number) }),
    d: async (ctx) => {
      log.calls.push({ key: ctx.idempotencyKey, attempt: ctx.attempt, index: ctx.item?.index, phase: ctx.phase });
      log.running++;
      log.peak = Math.max(log.peak, log.running);
      try {
        await settle(2);
        if (fails(ctx)) throw new AgentError('DraftFailed', `item ${ctx.item?.index ?? -1} failed`, {}, true);
        return { text: `${ctx.input['position'] as number}:${ctx.input['name'] as string}` };
      } finally {
        log.running--;
      }
    },
    a: (ctx) => ({ all: (ctx.input['texts'] as (string | null)[]).map((t) => t ?? '-').join(',') }),
  };
}

export const newLog = (): FanLog => ({ calls: [], running: 0, peak: 0 });

/** Every fan-out scenario by name (STORE_SCENARIOS runs them on each store). */
export const FANOUT_SCENARIOS: Record<string, (makeStore: StoreFactory) => Promise<unknown>> = {
  fanOutGathers: (m) => fanOutGathers(m),
  fanOutEmpty: (m) => fanOutEmpty(m),
  fanOutTolerated: (m) => fanOutTolerated(m),
  fanOutSkipItems: (m) => fanOutSkipItems(m),
  fanOutItemRetry: (m) => fanOutItemRetry(m),
  fanOutCrashEverywhere: (m) => fanOutCrashEverywhere(m),
  fanOutRerunFailedItems: (m) => fanOutRerunFailedItems(m),
  fanOutFolded: (m) => fanOutFolded(m),
};

async function check(store: RunStore, r: RunResult): Promise<void> {
  await expectReplays(store, r);
}

/** Items run as tasks in parallel up to max_parallel; outputs are gathered in item order. */
export async function fanOutGathers(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const log = newLog();
  const e = engineOn(store, clock, fanAgents(log), { concurrency: 8 });
  const r = await withClock(clock, e.run(fanWorkflow(), { runId: 'fan-1', trigger: { n: 7 } }));
  await e.close();
  expect(r.status).toBe('completed');
  expect(r.phases['draft']!.output).toEqual({ text: ['0:s0', '1:s1', '2:s2', '3:s3', '4:s4', '5:s5', '6:s6'] });
  expect(r.phases['assemble']!.output).toEqual({ all: '0:s0,1:s1,2:s2,3:s3,4:s4,5:s5,6:s6' });
  // each item its own task: its own key, one attempt, the phase name the agent sees is the phase's
  expect(log.calls.map((c) => c.key).sort()).toEqual(Array.from({ length: 7 }, (_, i) => `fan-1:draft[${i}]`).sort());
  expect(new Set(log.calls.map((c) => c.phase))).toEqual(new Set(['draft']));
  expect(log.peak).toBe(2);
  expect(eventsOf(r.events, 'task.fanned_out')).toEqual([expect.objectContaining({ phase: 'draft', items: 7 })]);
  expect(eventsOf(r.events, 'task.claimed').filter((x) => x.phase.startsWith('draft['))).toHaveLength(7);
  expect(r.phases['draft[3]']).toMatchObject({ status: 'completed', output: { text: '3:s3' }, input: { name: 's3', position: 3 } });
  const rows = await store.tasks('fan-1');
  expect(rows.find((t) => t.phase === 'draft[6]')).toMatchObject({ status: 'completed', output: { text: '6:s6' } });
  await check(store, r);
}

/** An empty array completes the phase at once with empty arrays. */
export async function fanOutEmpty(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const log = newLog();
  const e = engineOn(store, clock, fanAgents(log));
  const r = await withClock(clock, e.run(fanWorkflow(), { trigger: { n: 0 } }));
  await e.close();
  expect(r.status).toBe('completed');
  expect(r.phases['draft']!.output).toEqual({ text: [] });
  expect(r.phases['assemble']!.output).toEqual({ all: '' });
  expect(log.calls).toEqual([]);
  await check(store, r);
}

/** tolerated_failures: exactly at the limit the phase completes (null slots); one past it fails. */
export async function fanOutTolerated(makeStore: StoreFactory): Promise<void> {
  const cases: { fan: string; failing: number; ok: boolean }[] = [
    { fan: 'tolerated_failures: 2', failing: 2, ok: true },
    { fan: 'tolerated_failures: 2', failing: 3, ok: false },
    { fan: 'tolerated_failures: "20%"', failing: 2, ok: true },
    { fan: 'tolerated_failures: "20%"', failing: 3, ok: false },
    { fan: 'max_parallel: 3', failing: 1, ok: false },
  ];
  for (const c of cases) {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const log = newLog();
    const e = engineOn(store, clock, fanAgents(log, (ctx) => ctx.item!.index % 2 === 1 && ctx.item!.index < 2 * c.failing), { concurrency: 2 });
    const r = await withClock(clock, e.run(fanWorkflow(c.fan), { trigger: { n: 10 } }));
    await e.close();
    const what = `${c.fan}, ${c.failing} failing`;
    if (c.ok) {
      expect(r.status, what).toBe('completed');
      const text = r.phases['draft']!.output!['text'] as (string | null)[];
      expect(text.filter((t) => t === null), what).toHaveLength(c.failing);
      expect(text[1], what).toBeNull();
      expect(text[0], what).toBe('0:s0');
      expect(r.phases['draft[1]']).toMatchObject({ status: 'failed', error: { code: 'DraftFailed' } });
    } else {
      expect(r.status, what).toBe('failed');
      expect(r.phases['draft']!.error, what).toMatchObject({ code: 'FanOutFailed', details: { items: 10, failed: c.failing } });
      expect(r.phases['assemble']!.status).toBe('failed');
      // the remaining items were cancelled, not run
      const statuses = Object.entries(r.phases).filter(([k]) => k.startsWith('draft[')).map(([, p]) => p.status);
      expect(statuses.some((s) => s === 'ready' || s === 'running' || s === 'pending'), what).toBe(false);
      expect(log.calls.length, what).toBeLessThan(10);
    }
    await check(store, r);
  }
}

/** skip_when reading `$item` skips single items (slot null, recorded as skipped). */
export async function fanOutSkipItems(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const log = newLog();
  const e = engineOn(store, clock, fanAgents(log));
  const r = await withClock(clock, e.run(fanWorkflow('max_parallel: 2', 'skip_when: "$item.words == 0"'), { trigger: { n: 7 } }));
  await e.close();
  expect(r.status).toBe('completed');
  // sections 0, 3, 6 have no words
  expect(r.phases['draft']!.output).toEqual({ text: [null, '1:s1', '2:s2', null, '4:s4', '5:s5', null] });
  expect(r.phases['draft[3]']).toMatchObject({ status: 'skipped', skipped_reason: 'skip_when' });
  expect(log.calls.map((c) => c.index).sort()).toEqual([1, 2, 4, 5]);
  await check(store, r);
}

/** One item's retries are its own: it fails once and succeeds, the others run once. */
export async function fanOutItemRetry(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const log = newLog();
  const e = engineOn(store, clock, fanAgents(log, (ctx) => ctx.item!.index === 2 && ctx.attempt === 1));
  const r = await withClock(clock, e.run(fanWorkflow('max_parallel: 4', 'retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 1000, retryable_errors: [DraftFailed]}'), { trigger: { n: 5 } }));
  await e.close();
  expect(r.status).toBe('completed');
  expect(r.phases['draft']!.output).toEqual({ text: ['0:s0', '1:s1', '2:s2', '3:s3', '4:s4'] });
  expect(r.phases['draft[2]']!.attempts).toBe(2);
  for (const i of [0, 1, 3, 4]) expect(r.phases[`draft[${i}]`]!.attempts).toBe(1);
  expect(eventsOf(r.events, 'task.retrying').map((x) => x.phase)).toEqual(['draft[2]']);
  expect(new Set(log.calls.filter((c) => c.index === 2).map((c) => c.key))).toEqual(new Set([`${r.runId}:draft[2]`]));
  await check(store, r);
}

/**
 * A crash at `at` (hit `hit`) mid-fan-out, then a second engine on the same store: the items completed
 * before the crash are never run again, the rest run once more, the gathered outputs are whole and in order.
 */
export async function fanOutCrash(makeStore: StoreFactory, at: FaultPoint, hit: number): Promise<boolean> {
  const store = await makeStore();
  const clock = new ManualClock(1_000_000);
  const logA = newLog();
  const runId = `fan-crash-${at}-${hit}`;
  const model = fanWorkflow('max_parallel: 3');
  const a = engineOn(store, clock, fanAgents(logA), { workerId: 'A', faults: { at, hit }, isOwnerDead: () => false, concurrency: 4 });
  let fault: unknown;
  try {
    await withClock(clock, a.run(model, { runId, trigger: { n: 9 } }));
  } catch (x) {
    fault = x;
  }
  await a.close();
  if (fault === undefined) return false;
  expect(fault).toMatchObject({ code: 'fault-injected' });
  await settle();
  const before = await a.inspect(runId);
  const doneBefore = Object.entries(before.result.phases).filter(([k, p]) => k.startsWith('draft[') && p.status === 'completed');
  await clock.advance(1000);
  const logB = newLog();
  const b = engineOn(store, clock, fanAgents(logB), { workerId: 'B', isOwnerDead: (o) => o === 'A', concurrency: 4 });
  const r = await withClock(clock, b.resume(runId));
  await b.close();
  expect(r.status, `${at} #${hit}`).toBe('completed');
  expect(r.phases['draft']!.output).toEqual({ text: sections(9).map((s, i) => `${i}:${s.name}`) });
  for (const [k, p] of doneBefore) {
    expect(logB.calls.filter((c) => c.key === `${runId}:${k}`), k).toEqual([]);
    expect(r.phases[k]!.output).toEqual(p.output);
  }
  // every item ran to completion exactly once in all (its attempts numbered apart)
  for (let i = 0; i < 9; i++) {
    const mine = [...logA.calls, ...logB.calls].filter((c) => c.index === i);
    expect(new Set(mine.map((c) => c.attempt)).size, `item ${i}`).toBe(mine.length);
    expect(eventsOf(r.events, 'task.completed').filter((x) => x.phase === `draft[${i}]`), `item ${i}`).toHaveLength(1);
  }
  expect(logB.peak).toBeLessThanOrEqual(3);
  await expectReplays(store, r);
  return true;
}

/** Every fault point, hits 1 to 4 (or until the run ends before the hit). */
export async function fanOutCrashEverywhere(makeStore: StoreFactory): Promise<void> {
  let fired = 0;
  for (const at of FAULT_POINTS) {
    for (let hit = 1; hit <= 4; hit++) {
      if (!(await fanOutCrash(makeStore, at, hit))) break;
      fired++;
    }
  }
  expect(fired).toBeGreaterThanOrEqual(FAULT_POINTS.length + 6);
}

/** `rerun --from PHASE --failed-items`: only the failed and skipped items run again; the rest are reused. */
export async function fanOutRerunFailedItems(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const log = newLog();
  let broken = true;
  const e = engineOn(store, clock, fanAgents(log, (ctx) => broken && (ctx.item!.index === 1 || ctx.item!.index === 4)));
  const model = fanWorkflow('tolerated_failures: 1', 'skip_when: "$item.words == 0 && $index > 5"');
  const first = await withClock(clock, e.run(model, { trigger: { n: 7 } }));
  expect(first.status).toBe('failed');
  expect(first.phases['draft']!.error?.code).toBe('FanOutFailed');
  const ranFirst = log.calls.length;
  broken = false;
  log.calls.length = 0;
  const id = await e.rerun(first.runId, 'draft', { failedItems: true });
  const r = await withClock(clock, e.drive(id, undefined));
  // --failed-items names a phase with items
  await expect(e.rerun(first.runId, 'outline', { failedItems: true })).rejects.toMatchObject({ code: 'usage' });
  await e.close();
  expect(r.status).toBe('completed');
  expect(r.phases['draft']!.output).toEqual({ text: ['0:s0', '1:s1', '2:s2', '3:s3', '4:s4', '5:s5', null] });
  const reran = log.calls.map((c) => c.index).sort();
  // failed items 1 and 4 and those cancelled or never opened when the phase failed; never one that completed
  const completedFirst = Object.entries(first.phases).filter(([k, p]) => k.startsWith('draft[') && p.status === 'completed').map(([k]) => Number(k.slice(6, -1)));
  for (const i of completedFirst) {
    expect(reran).not.toContain(i);
    expect(r.phases[`draft[${i}]`]).toMatchObject({ status: 'completed', reused_from: first.runId });
  }
  expect(reran).toContain(1);
  expect(reran).toContain(4);
  expect(reran.length + completedFirst.length + 1).toBe(7);
  expect(ranFirst).toBeGreaterThan(0);
  await expectReplays(store, r);
}

/**
 * A run that keeps no event log (`keepEvents: false`, as `baton run` and serving workers drive runs)
 * folds settled items out of its state: it holds the items in flight, not one state per item, and
 * gives the same outputs; its result counts the settled items and lists the failed ones. A crash
 * mid-fan is resumed by such a run too, without running a completed item again.
 */
export async function fanOutFolded(makeStore: StoreFactory): Promise<void> {
  const n = 60;
  const model = fanWorkflow('max_parallel: 3\n    tolerated_failures: 2', 'skip_when: "$item.words == 0"');
  const fails = (ctx: AgentContext) => ctx.item!.index === 4 || ctx.item!.index === 8;
  const reference = await (async () => {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const e = engineOn(store, clock, fanAgents(newLog(), fails), { concurrency: 4 });
    const r = await withClock(clock, e.run(model, { trigger: { n } }));
    await e.close();
    return r;
  })();
  expect(reference.status).toBe('completed');
  expect(reference.phases['draft[1]']).toMatchObject({ status: 'completed' });

  const store = await makeStore();
  const clock = new ManualClock(0);
  let widest = 0;
  const e = engineOn(store, clock, fanAgents(newLog(), fails), { concurrency: 4, onEvent: (_, state) => (widest = Math.max(widest, state.phases.size)) });
  const r = await withClock(clock, e.run(model, { runId: 'folded', trigger: { n }, keepEvents: false }));
  expect(r.status).toBe('completed');
  expect(r.phases['draft']!.output).toEqual(reference.phases['draft']!.output);
  expect(r.phases['assemble']!.output).toEqual(reference.phases['assemble']!.output);
  // 20 sections have no words (skipped), 2 items fail (tolerated), 38 complete
  expect(r.phases['draft']!.items).toEqual({ count: n, completed: 38, failed: 2, skipped: 20, cancelled: 0 });
  expect(reference.phases['draft']!.items).toEqual(r.phases['draft']!.items);
  expect(r.phases['draft[4]']).toMatchObject({ status: 'failed', error: { code: 'DraftFailed' } });
  expect(r.phases['draft[1]']).toBeUndefined();
  expect(r.phases['draft[0]']).toBeUndefined();
  // three phases, a window of three items and the two failed ones (and the step that folds them): never one state per item
  expect(widest).toBeLessThan(15);
  // an inspection reads the whole log: every item is there
  const seen = await e.inspect('folded');
  expect(seen.result.phases['draft[1]']).toMatchObject({ status: 'completed', output: { text: '1:s1' } });
  expect(seen.result.phases['draft[0]']).toMatchObject({ status: 'skipped' });
  await expectReplays(store, seen.result);
  await e.close();

  // a crash after some items committed, resumed by a worker that folds (from the log, or a folded snapshot)
  for (const hit of [5, 12]) {
    const s2 = await makeStore();
    const c2 = new ManualClock(1_000_000);
    const logA = newLog();
    const runId = `folded-crash-${hit}`;
    const a = engineOn(s2, c2, fanAgents(logA, fails), { workerId: 'A', faults: { at: 'flush.after-commit', hit }, isOwnerDead: () => false, concurrency: 4, snapshotEvery: 1 });
    await expect(withClock(c2, a.run(model, { runId, trigger: { n }, keepEvents: false }))).rejects.toMatchObject({ code: 'fault-injected' });
    await a.close();
    await settle();
    const before = await a.inspect(runId);
    const doneBefore = Object.entries(before.result.phases).filter(([k, p]) => k.startsWith('draft[') && p.status === 'completed');
    expect(doneBefore.length, `hit ${hit}`).toBeGreaterThan(0);
    await c2.advance(1000);
    const logB = newLog();
    const b = engineOn(s2, c2, fanAgents(logB, fails), { workerId: 'B', isOwnerDead: (o) => o === 'A', concurrency: 4 });
    const rb = await withClock(c2, b.resume(runId, { keepEvents: false }));
    const full = (await b.inspect(runId)).result;
    await b.close();
    expect(rb.status, `hit ${hit}`).toBe('completed');
    expect(rb.phases['draft']!.output).toEqual(reference.phases['draft']!.output);
    for (const [k] of doneBefore) expect(logB.calls.filter((c) => c.key === `${runId}:${k}`), k).toEqual([]);
    const events = await s2.events(runId);
    for (let i = 0; i < n; i++) expect(events.filter((x) => x.type === 'task.completed' && x.phase === `draft[${i}]`).length, `item ${i}`).toBeLessThanOrEqual(1);
    await expectReplays(s2, full);
  }
}

/** Test helpers shared by the engine tests and the store scenarios: no real sleeps, injected clocks. */
import { expect } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import type { RunEvent } from '../../src/engine/events.js';
import type { RunStore } from '../../src/engine/ports.js';
import { replay } from '../../src/engine/state.js';
import { toResult, type RunResult } from '../../src/engine/result.js';
import { parseWorkflow } from '../../src/workflow/compile.js';
import type { WorkflowModel } from '../../src/workflow/model.js';

export function wf(yaml: string): WorkflowModel {
  const r = parseWorkflow(yaml);
  if (!r.ok) throw new Error(r.diagnostics.map((d) => `${d.code}: ${d.message}`).join('\n'));
  return r.model;
}

export function header(extra = ''): string {
  return `openintent: "1.0"\ninfo: {name: "T"}\n${extra}\n`;
}

/** Lets pending promise continuations and immediates run (no timers, no clock). */
export async function settle(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Waits, turn by turn, until `pred` holds; fails the test when it never does. */
export async function until(pred: () => boolean | Promise<boolean>, what = 'condition', turns = 5000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (await pred()) return;
    await new Promise<void>((r) => setTimeout(r, 1));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Waits until the stored run has an event matching `pred`. */
export async function untilEvent(store: RunStore, runId: string, pred: (e: RunEvent) => boolean, what = 'event'): Promise<RunEvent> {
  let found: RunEvent | undefined;
  await until(async () => {
    found = (await store.events(runId)).find(pred);
    return found !== undefined;
  }, what);
  return found!;
}

/** Awaits `p` while moving a manual clock from timer to timer (never a real sleep). */
export async function withClock<T>(clock: ManualClock, p: Promise<T>, maxTicks = 6000): Promise<T> {
  let done = false;
  let value: { ok: true; v: T } | { ok: false; e: unknown } | undefined;
  p.then(
    (v) => {
      done = true;
      value = { ok: true, v };
    },
    (e: unknown) => {
      done = true;
      value = { ok: false, e };
    },
  );
  // no timer to move to: the run waits on real I/O (a database round trip), so give it real time
  for (let i = 0; i < maxTicks && !done; i++) if (!(await clock.tick())) await new Promise<void>((r) => setTimeout(r, 5));
  await settle(2);
  if (!value) throw new Error('the run did not end within the clock ticks');
  if (!value.ok) throw value.e;
  return value.v;
}

/** The stored event log replays to the same result as the one given (replay(events) == state). */
export async function expectReplays(store: RunStore, result: RunResult): Promise<void> {
  const events = await store.events(result.runId);
  const again = toResult(replay(result.runId, events), [...events]);
  expect(again.status).toBe(result.status);
  expect(again.phases).toEqual(result.phases);
  expect(again.gates).toEqual(result.gates);
  expect(again.cost_usd).toBe(result.cost_usd);
  expect(again.suspended_phases).toEqual(result.suspended_phases);
  expect(again.error).toEqual(result.error);
  // the stored projections (run row, task rows) are those of the replayed state
  const run = await store.run(result.runId);
  expect(run?.status).toBe(again.status);
  expect(run?.costUsd).toBeCloseTo(again.cost_usd, 6);
  const rows = await store.tasks(result.runId);
  expect(rows.map((t) => t.phase).sort()).toEqual(Object.keys(again.phases).sort());
  for (const t of rows) {
    const p = again.phases[t.phase]!;
    expect({ phase: t.phase, status: t.status, attempt: t.attempt, output: t.output, failure: t.failure, input: t.input }).toEqual({
      phase: t.phase,
      status: p.status,
      attempt: p.attempts,
      output: p.output,
      failure: p.error ?? null,
      input: p.input,
    });
  }
}

export function deferred<T = unknown>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export function types(events: readonly RunEvent[]): string[] {
  return events.map((e) => `${e.type}${'phase' in e && e.phase !== undefined ? ` ${e.phase}` : 'gate_id' in e ? ` ${e.gate_id}` : ''}`);
}

/** Events of one type, typed. */
export function eventsOf<T extends RunEvent['type']>(events: readonly RunEvent[], type: T): Extract<RunEvent, { type: T }>[] {
  return events.filter((e): e is Extract<RunEvent, { type: T }> => e.type === type);
}

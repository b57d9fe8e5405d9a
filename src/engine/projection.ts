/**
 * The projections a store keeps beside the event log (the run row, one row per task), computed
 * from the run state after a decision. Stores write them as given.
 */
import { HELD, type Commit, type LeaseExpectation, type RunUpdate, type TaskRow } from './ports.js';
import { nextTimer, storedNotBefore } from './due.js';
import { phaseModelOf, type Plan } from './plan.js';
import { runStatusOf, type RunState } from './state.js';
import type { RunEvent } from './events.js';

export function taskRow(plan: Plan, state: RunState, phase: string, now: number): TaskRow {
  const p = state.phases.get(phase)!;
  return {
    phase,
    taskId: p.taskId,
    status: p.status === 'completed' && p.partial ? 'partial' : p.status,
    attempt: p.attempts,
    agent: p.nextAgent ?? phaseModelOf(plan, phase)?.assign ?? p.agent ?? '',
    leaseOwner: p.status === 'running' ? (p.leaseOwner ?? null) : null,
    leaseExpiresAt: p.status === 'running' ? (p.leaseExpiresAt ?? null) : null,
    notBefore: storedNotBefore(plan, state, phase, HELD),
    input: p.input ?? null,
    output: p.output ?? null,
    failure: p.error ?? null,
    updatedAt: now,
  };
}

export function runUpdate(state: RunState, now: number): RunUpdate {
  return {
    status: runStatusOf(state),
    updatedAt: now,
    endedAt: state.endedAt ?? null,
    costUsd: state.costUsd,
    wakeAt: nextTimer(state),
  };
}

export function buildCommit(plan: Plan, state: RunState, events: RunEvent[], touched: ReadonlySet<string>, now: number, expect?: LeaseExpectation[]): Commit {
  // made at its size (a growing array cost a commit of two rows more than the rows)
  const tasks = new Array<TaskRow>(touched.size);
  let n = 0;
  // a folded item (compactItems) has settled: its row was written when it did
  for (const name of touched) if (state.phases.has(name)) tasks[n++] = taskRow(plan, state, name, now);
  tasks.length = n;
  const c: Commit = { events, run: runUpdate(state, now), tasks };
  if (expect && expect.length > 0) c.expect = expect;
  return c;
}

/**
 * Test data for stores (the conformance suite, store tests, the store benchmark, the golden store
 * file): runs and task rows in the port's shapes. No test framework here, so benchmarks can use it.
 */
import type { JsonObject } from '../core/json.js';
import type { RunEvent, RunStatus } from '../engine/events.js';
import type { NewRun, RunRecord, TaskRow } from '../engine/ports.js';

export const T0 = 1_763_000_000_000;
export const WORKFLOW = { hash: 'a'.repeat(64), name: 'wf', source: 'openintent: "1.0"\nname: wf\n', path: '/tmp/wf.yaml' };

/** Values that a careless JSON column would change: key order, escapes, unicode, numbers. */
export const TRICKY: JsonObject = {
  zeta: 1,
  alpha: [1.5, -2.5e-7, 1e21, 0.1, 123456789012345, null, true],
  'key with "quotes" and \\ backslash': 'line\nbreak\ttab \u0000 nul',
  emoji: '🎻 naïve ☃ \u2028',
  lone: '\ud800',
  nested: { b: { d: [], c: {} }, a: '' },
  '': 'empty key',
  '10': 'numeric key after letters',
};

export function newRun(runId: string, o: { createdAt?: number; status?: RunStatus; tasks?: TaskRow[]; wakeAt?: number | null; events?: number; workflowName?: string } = {}): NewRun {
  const createdAt = o.createdAt ?? T0;
  const run: RunRecord = {
    runId,
    workflowHash: WORKFLOW.hash,
    workflowName: o.workflowName ?? WORKFLOW.name,
    status: o.status ?? 'running',
    trigger: { topic: 'violins', n: 3, list: ['a', 'b'] },
    initialState: null,
    bindings: { module: '/abs/agents.mjs', stubs: ['x'] },
    options: { concurrency: 4, autoApprove: false },
    createdAt,
    updatedAt: createdAt,
    endedAt: null,
    costUsd: 0,
    seq: 0,
    wakeAt: o.wakeAt ?? null,
  };
  const events: RunEvent[] = [{ seq: 1, at: createdAt, type: 'run.started', run_id: runId, workflow: 'wf', trigger: run.trigger, phases: ['a', 'b'] }];
  for (let i = 2; i <= (o.events ?? 1); i++) events.push(log(i, 'a', `event ${i}`));
  return {
    run,
    workflow: WORKFLOW,
    commit: { events, run: { status: run.status, updatedAt: createdAt, endedAt: null, costUsd: 0, wakeAt: run.wakeAt }, tasks: o.tasks ?? [] },
  };
}

export function task(phase: string, o: Partial<TaskRow> = {}): TaskRow {
  return {
    phase,
    taskId: `t-${phase}`,
    status: 'ready',
    attempt: 0,
    agent: 'x',
    leaseOwner: null,
    leaseExpiresAt: null,
    notBefore: null,
    input: null,
    output: null,
    failure: null,
    updatedAt: T0,
    ...o,
  };
}

export function log(seq: number, phase: string, message: string): RunEvent {
  return { seq, at: T0 + seq, type: 'task.log', phase, task_id: `t-${phase}`, attempt: 1, message };
}

/** The chaos test's checks, on made-up histories: a clean one passes, and each broken rule is named. */
import { describe, expect, test } from 'vitest';
import { checkInvariants, summarize, why, type CheckInput, type ExecLine, type StoredEvent } from './invariants.js';

const PHASES = ['a', 'b'];

function exec(id: string, phase: string, attempt: number, pid: number, from: number, to: number | undefined, output?: unknown): ExecLine[] {
  const start: ExecLine = { k: 'start', id, run: 'r1', phase, attempt, pid, t: from };
  if (to === undefined) return [start];
  return [start, { k: 'end', id, run: 'r1', phase, attempt, pid, t: to, ok: output !== undefined, ...(output !== undefined ? { output } : {}) }];
}

function completed(phase: string, attempt: number, output: unknown): StoredEvent {
  return { type: 'task.completed', phase, attempt, output };
}

/** a: attempt 1 fails, attempt 2 succeeds; b: attempt 1 succeeds. */
function clean(): CheckInput {
  return {
    phases: PHASES,
    runs: [{ runId: 'r1', status: 'completed', events: [completed('a', 2, { v: 'x2' }), completed('b', 1, { v: 'y1' }), { type: 'run.completed' }] }],
    log: [...exec('e1', 'a', 1, 10, 0, 5), ...exec('e2', 'a', 2, 11, 6, 9, { v: 'x2' }), ...exec('e3', 'b', 1, 10, 10, 12, { v: 'y1' })],
    deaths: new Map(),
    exits: [],
  };
}

describe('chaos invariants', () => {
  test('a clean history has no violation', () => {
    expect(checkInvariants(clean())).toEqual([]);
  });

  test('a run that did not complete, and one whose phase never completed', () => {
    const h = clean();
    h.runs.push({ runId: 'r2', status: 'running', events: [] });
    h.runs[0]!.events = h.runs[0]!.events.filter((e) => e.phase !== 'b');
    expect(summarize(checkInvariants(h))).toEqual({ 'run-not-completed': 1, 'phase-not-completed': 1 });
  });

  test('two completions of one phase', () => {
    const h = clean();
    h.log.push(...exec('e4', 'b', 2, 11, 13, 14, { v: 'y2' }));
    h.runs[0]!.events.push(completed('b', 2, { v: 'y2' }));
    expect(checkInvariants(h).map((v) => [v.code, v.phase])).toEqual([['phase-completed-twice', 'b']]);
  });

  test('a recorded output that no successful execution of that attempt returned is a lost completion', () => {
    const h = clean();
    h.runs[0]!.events[0] = completed('a', 2, { v: 'other' });
    expect(checkInvariants(h).map((v) => v.code)).toEqual(['completion-lost']);
    const h2 = clean();
    h2.runs[0]!.events[0] = completed('a', 1, { v: 'x2' }); // the right output under the wrong attempt
    expect(checkInvariants(h2).map((v) => v.code)).toEqual(['completion-lost']);
  });

  test('overlapping executions of one task, and one attempt started twice', () => {
    const h = clean();
    h.log.push(...exec('e5', 'a', 3, 12, 7, 8)); // inside attempt 2's [6, 9]
    expect(checkInvariants(h).map((v) => v.code)).toEqual(['overlap']);
    const h2 = clean();
    h2.log.push(...exec('e6', 'b', 1, 12, 20, 21));
    expect(checkInvariants(h2).map((v) => v.code)).toEqual(['attempt-ran-twice']);
  });

  test('an execution that never ended lasts until its process died; unknown death: forever', () => {
    const h = clean();
    h.log = [...exec('k1', 'a', 1, 99, 0, undefined), ...h.log.filter((l) => l.id !== 'e1')];
    // pid 99 was killed at 5.5, before attempt 2 started at 6: no overlap
    expect(checkInvariants({ ...h, deaths: new Map([[99, 5.5]]) })).toEqual([]);
    // killed at 7: attempt 2 began beside it
    expect(checkInvariants({ ...h, deaths: new Map([[99, 7]]) }).map((v) => v.code)).toEqual(['overlap']);
    expect(checkInvariants(h).map((v) => v.code)).toEqual(['overlap']);
  });

  test('an execution nested in a long one is caught even after a short one ended', () => {
    const h = clean();
    h.log = [...exec('l1', 'b', 1, 10, 0, 100, { v: 'y1' }), ...exec('l2', 'b', 2, 11, 1, 2), ...exec('l3', 'b', 3, 12, 50, 51), ...exec('e2', 'a', 2, 11, 6, 9, { v: 'x2' })];
    expect(checkInvariants(h).filter((v) => v.code === 'overlap')).toHaveLength(2);
  });

  test('what a dead worker said: its first error line, else its last', () => {
    expect(why('worker w1 serving x\nfile:///a.js:3\n  throw e;\n\nError: Connection terminated unexpectedly\n    at Client.x\n\nNode.js v20.20.2\n')).toBe('Error: Connection terminated unexpectedly');
    expect(why('baton worker: cannot reach the store\n')).toBe('baton worker: cannot reach the store');
  });

  test('a worker that exited by itself', () => {
    const h = clean();
    h.exits.push({ pid: 7, code: 1, signal: null, stderr: 'Error: Connection terminated unexpectedly\n' });
    expect(checkInvariants(h).map((v) => v.code)).toEqual(['worker-exited']);
  });
});

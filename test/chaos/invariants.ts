/**
 * The invariants of the chaos test, checked from what the store recorded and what the agents logged.
 * A pure function of data, so its own test feeds it made-up histories that break each rule.
 *
 *   run-not-completed      every run ends, completed
 *   phase-not-completed    every phase of a run has one `task.completed`...
 *   phase-completed-twice  ...and no more than one
 *   attempt-ran-twice      one attempt number of a task started in two executions
 *   overlap                two executions of one task ran at the same time (an execution without an
 *                          end ran until its process died: killed by the harness or exited)
 *   completion-lost        a `task.completed` whose output no successful execution of that attempt returned
 *   worker-exited          a worker process ended by itself (the harness did not kill it)
 */
import { isDeepStrictEqual } from 'node:util';

export interface ExecLine {
  k: 'start' | 'end';
  id: string;
  run: string;
  phase: string;
  attempt: number;
  pid: number;
  t: number;
  ok?: boolean;
  output?: unknown;
}

/** The stored events the checks read (a subset of RunEvent's fields). */
export interface StoredEvent {
  type: string;
  phase?: string;
  attempt?: number;
  output?: unknown;
}

export interface StoredRun {
  runId: string;
  status: string;
  events: StoredEvent[];
}

export interface WorkerExit {
  pid: number;
  code: number | null;
  signal: string | null;
  stderr: string;
}

export type ViolationCode = 'run-not-completed' | 'phase-not-completed' | 'phase-completed-twice' | 'attempt-ran-twice' | 'overlap' | 'completion-lost' | 'worker-exited';

export interface Violation {
  code: ViolationCode;
  run?: string;
  phase?: string;
  detail: string;
}

export interface CheckInput {
  runs: StoredRun[];
  /** The phases every run has. */
  phases: readonly string[];
  log: ExecLine[];
  /** When each worker process died or was stopped (wall ms): the end of its unfinished executions. */
  deaths: ReadonlyMap<number, number>;
  /** Worker processes that ended without the harness asking. */
  exits: WorkerExit[];
  /** Names of some pids for the details (the skewed worker). */
  labels?: ReadonlyMap<number, string>;
}

interface Execution {
  id: string;
  run: string;
  phase: string;
  attempt: number;
  pid: number;
  from: number;
  to: number;
  ok: boolean | undefined;
  output: unknown;
}

export function executions(log: readonly ExecLine[], deaths: ReadonlyMap<number, number>): Execution[] {
  const ends = new Map<string, ExecLine>();
  for (const l of log) if (l.k === 'end') ends.set(l.id, l);
  return log
    .filter((l) => l.k === 'start')
    .map((s) => {
      const e = ends.get(s.id);
      return { id: s.id, run: s.run, phase: s.phase, attempt: s.attempt, pid: s.pid, from: s.t, to: e ? e.t : (deaths.get(s.pid) ?? Infinity), ok: e?.ok, output: e?.output };
    });
}

export function checkInvariants(input: CheckInput): Violation[] {
  const out: Violation[] = [];
  const who = (pid: number): string => `pid ${pid}${input.labels?.has(pid) ? `, ${input.labels.get(pid)}` : ''}`;
  const execs = executions(input.log, input.deaths);
  const byTask = new Map<string, Execution[]>();
  for (const x of execs) {
    const key = `${x.run}\u0000${x.phase}`;
    let list = byTask.get(key);
    if (!list) byTask.set(key, (list = []));
    list.push(x);
  }

  for (const r of input.runs) {
    if (r.status !== 'completed') out.push({ code: 'run-not-completed', run: r.runId, detail: `status ${r.status} after ${r.events.length} events; last: ${r.events.slice(-3).map((e) => `${e.type}${e.phase ? ` ${e.phase}` : ''}`).join(', ')}` });
    for (const phase of input.phases) {
      const done = r.events.filter((e) => e.type === 'task.completed' && e.phase === phase);
      if (done.length === 0 && r.status === 'completed') out.push({ code: 'phase-not-completed', run: r.runId, phase, detail: 'the run completed without it' });
      if (done.length > 1) out.push({ code: 'phase-completed-twice', run: r.runId, phase, detail: `${done.length} task.completed events (attempts ${done.map((e) => e.attempt).join(', ')})` });
      const mine = byTask.get(`${r.runId}\u0000${phase}`) ?? [];
      for (const e of done) {
        const match = mine.some((x) => x.ok === true && x.attempt === e.attempt && isDeepStrictEqual(x.output, e.output));
        if (!match) out.push({ code: 'completion-lost', run: r.runId, phase, detail: `attempt ${e.attempt} recorded ${JSON.stringify(e.output)}, which no successful execution of it returned` });
      }
    }
  }

  for (const [, list] of byTask) {
    const seen = new Map<number, Execution>();
    for (const x of list) {
      const other = seen.get(x.attempt);
      if (other) out.push({ code: 'attempt-ran-twice', run: x.run, phase: x.phase, detail: `attempt ${x.attempt} started in ${who(other.pid)} and ${who(x.pid)}` });
      seen.set(x.attempt, x);
    }
    const sorted = [...list].sort((a, b) => a.from - b.from);
    let last: Execution | undefined;
    for (const x of sorted) {
      if (last && x.from < last.to) {
        const during = last.to === Infinity ? 'which never ended' : `which ran ${(last.to - x.from).toFixed(1)} ms longer`;
        out.push({ code: 'overlap', run: x.run, phase: x.phase, detail: `attempt ${x.attempt} (${who(x.pid)}) started during attempt ${last.attempt} (${who(last.pid)}), ${during}` });
      }
      if (!last || x.to > last.to) last = x;
    }
  }

  // exit code 13: Node's "unsettled top-level await": the loop's promise was left pending and the event loop emptied
  for (const e of input.exits) out.push({ code: 'worker-exited', detail: `pid ${e.pid} exited (code ${e.code}${e.code === 13 ? ': unsettled top-level await' : ''}, signal ${e.signal}): ${why(e.stderr)}` });
  return out;
}

/** What a dead worker said: its first error line (an uncaught exception's), else its last line. */
export function why(stderr: string): string {
  const lines = stderr.trim().split('\n');
  return (lines.find((l) => /^\s*(\w*Error\b|error:)/.test(l)) ?? lines.at(-1) ?? '').trim().slice(0, 300);
}

/** Counts by code, for a one-line summary. */
export function summarize(vs: readonly Violation[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const v of vs) c[v.code] = (c[v.code] ?? 0) + 1;
  return c;
}

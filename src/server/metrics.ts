/**
 * `/metrics` in the Prometheus text format (version 0.0.4). Counters and the attempt latency
 * histogram count what this process's worker did (the engine's onEvent); the gauges (queue depth by
 * agent, running attempts, open gates, runs by status) are read from the store's rows at each scrape,
 * so they cover every worker on the store.
 */
import { BoundedMap } from '../core/lru.js';
import type { RunEvent } from '../engine/events.js';
import { HELD, type ActivityCounts, type RunStore } from '../engine/ports.js';
import { loadState } from '../engine/snapshot.js';
import type { RunState } from '../engine/state.js';

/** Seconds; a phase's attempt from its claim to its outcome. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];
/** How many active runs a scrape reads (newest first), on a store that cannot count them itself (no RunStore.activity). */
const SCRAPE_RUNS = 1000;
/** Claims remembered for the latency histogram; beyond this the oldest are dropped (an attempt that never ends). */
const MAX_OPEN_ATTEMPTS = 100_000;
/** The window of `baton_phases_per_second` (ms). */
const RATE_WINDOW_MS = 60_000;
/** Completion times kept for it at most (a rate above ~1,600 phases/s reads as that). */
const MAX_RECENT = 100_000;

export class ServerMetrics {
  private phasesCompleted = new Map<string, number>();
  private phasesFailed = new Map<string, number>();
  private attemptsFailed = new Map<string, number>();
  private readonly claimed = new BoundedMap<string, number>(MAX_OPEN_ATTEMPTS);
  private readonly latency = new Map<string, { buckets: number[]; sum: number; count: number }>();
  private readonly requests = new Map<string, number>();
  private runsStarted = 0;
  private attemptsStarted = new Map<string, number>();
  /** Completion times (event time, ms) in the last window, oldest first. */
  private readonly recent: number[] = [];
  private recentHead = 0;

  /** `now`: the clock the phases-per-second window is read in (the engine's; default the system clock). */
  constructor(private readonly now: () => number = Date.now) {}

  /** The engine's onEvent: what the worker of this process commits. */
  onEvent = (e: RunEvent, state: RunState): void => {
    switch (e.type) {
      case 'run.started':
        this.runsStarted++;
        return;
      case 'task.claimed':
        this.claimed.set(`${state.runId}\u0000${e.phase}\u0000${e.attempt}`, e.at);
        inc(this.attemptsStarted, e.agent);
        return;
      case 'task.completed':
        // a rerun's reused output ran nowhere now
        if (e.reused_from !== undefined) return;
        this.endAttempt(state.runId, e.phase, e.attempt, e.at, 'completed', state);
        inc(this.phasesCompleted, agentOf(state, e.phase));
        this.completedAt(e.at);
        return;
      case 'task.attempt_failed':
        this.endAttempt(state.runId, e.phase, e.attempt, e.at, 'failed', state);
        inc(this.attemptsFailed, agentOf(state, e.phase));
        return;
      case 'task.failed':
        inc(this.phasesFailed, agentOf(state, e.phase));
        return;
      default:
        return;
    }
  };

  private completedAt(at: number): void {
    if (this.recent.length - this.recentHead >= MAX_RECENT) this.recentHead++;
    this.recent.push(at);
  }

  /** Phases completed per second over the last minute (event times against `now`). */
  phasesPerSecond(): number {
    const from = this.now() - RATE_WINDOW_MS;
    while (this.recentHead < this.recent.length && this.recent[this.recentHead]! < from) this.recentHead++;
    // compact now and then: the array holds one window at most
    if (this.recentHead > 1024 && this.recentHead * 2 > this.recent.length) {
      this.recent.splice(0, this.recentHead);
      this.recentHead = 0;
    }
    return (this.recent.length - this.recentHead) / (RATE_WINDOW_MS / 1000);
  }

  /** One HTTP request answered. */
  request(route: string, status: number): void {
    inc(this.requests, `${route}\u0000${status}`);
  }

  private endAttempt(runId: string, phase: string, attempt: number, at: number, outcome: string, state: RunState): void {
    const key = `${runId}\u0000${phase}\u0000${attempt}`;
    const start = this.claimed.get(key);
    if (start === undefined) return;
    this.claimed.delete(key);
    const s = Math.max(0, (at - start) / 1000);
    const k = `${agentOf(state, phase)}\u0000${outcome}`;
    let h = this.latency.get(k);
    if (!h) this.latency.set(k, (h = { buckets: BUCKETS.map(() => 0), sum: 0, count: 0 }));
    for (const [i, b] of BUCKETS.entries()) if (s <= b) h.buckets[i]!++;
    h.sum += s;
    h.count++;
  }

  /**
   * The exposition: counters from this process, gauges from the store. `parked`: the tasks this server
   * holds for remote agents that no remote agent has claimed yet (RemoteAgents.waitingForClaim), as
   * `runId \u0000 task key`: the store has them running (the server's worker claimed them), but they
   * wait in a queue for an agent, so they count in the queue depth, not among the running.
   */
  async render(store: RunStore, parked?: ReadonlySet<string>): Promise<string> {
    const out: string[] = [];
    const counter = (name: string, help: string, m: ReadonlyMap<string, number>, label: string): void => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
      for (const [k, v] of m) out.push(`${name}{${label}="${esc(k)}"} ${v}`);
    };
    out.push('# HELP baton_runs_started_total Runs started through this server process.', '# TYPE baton_runs_started_total counter', `baton_runs_started_total ${this.runsStarted}`);
    counter('baton_phases_completed_total', 'Phases completed by the worker of this process, by agent.', this.phasesCompleted, 'agent');
    counter('baton_phases_failed_total', 'Phases failed (after their retries) in the worker of this process, by agent.', this.phasesFailed, 'agent');
    out.push('# HELP baton_phases_per_second Phases completed per second by the worker of this process, over the last minute.', '# TYPE baton_phases_per_second gauge', `baton_phases_per_second ${round(this.phasesPerSecond())}`);
    counter('baton_attempts_started_total', 'Attempts claimed by the worker of this process, by agent.', this.attemptsStarted, 'agent');
    counter('baton_attempts_failed_total', 'Attempts failed in the worker of this process, by agent.', this.attemptsFailed, 'agent');
    out.push('# HELP baton_attempt_duration_seconds Time from an attempt’s claim to its outcome, by agent and outcome.', '# TYPE baton_attempt_duration_seconds histogram');
    for (const [k, h] of this.latency) {
      const [agent, outcome] = k.split('\u0000') as [string, string];
      const l = `agent="${esc(agent)}",outcome="${outcome}"`;
      for (const [i, b] of BUCKETS.entries()) out.push(`baton_attempt_duration_seconds_bucket{${l},le="${b}"} ${h.buckets[i]}`);
      out.push(`baton_attempt_duration_seconds_bucket{${l},le="+Inf"} ${h.count}`, `baton_attempt_duration_seconds_sum{${l}} ${h.sum}`, `baton_attempt_duration_seconds_count{${l}} ${h.count}`);
    }
    out.push('# HELP baton_http_requests_total HTTP requests answered, by route and status.', '# TYPE baton_http_requests_total counter');
    for (const [k, v] of this.requests) {
      const [route, status] = k.split('\u0000') as [string, string];
      out.push(`baton_http_requests_total{route="${esc(route)}",status="${status}"} ${v}`);
    }
    const g = await gauges(store, parked ?? new Set());
    out.push('# HELP baton_queue_depth Tasks waiting for a worker or a remote agent (not those held by a gate), by agent (from the store, and this server’s remote queues).', '# TYPE baton_queue_depth gauge');
    for (const [a, n] of g.ready) out.push(`baton_queue_depth{agent="${esc(a)}"} ${n}`);
    out.push('# HELP baton_tasks_running Attempts running, by agent (from the store; a remote agent’s only once one claimed it).', '# TYPE baton_tasks_running gauge');
    for (const [a, n] of g.running) out.push(`baton_tasks_running{agent="${esc(a)}"} ${n}`);
    out.push('# HELP baton_gates_open Open gates, by kind (from the store).', '# TYPE baton_gates_open gauge');
    for (const [k, n] of g.gates) out.push(`baton_gates_open{kind="${esc(k)}"} ${n}`);
    out.push('# HELP baton_runs_active Runs running or waiting (from the store).', '# TYPE baton_runs_active gauge');
    for (const [s, n] of g.runs) out.push(`baton_runs_active{status="${s}"} ${n}`);
    return out.join('\n') + '\n';
  }
}

type Gauges = { ready: Map<string, number>; running: Map<string, number>; gates: Map<string, number>; runs: Map<string, number> };

async function gauges(store: RunStore, parked: ReadonlySet<string>): Promise<Gauges> {
  if (store.activity) return counted(store, await store.activity(), parked);
  const ready = new Map<string, number>();
  const running = new Map<string, number>();
  const gates = new Map<string, number>([['run', 0], ['phase', 0], ['access', 0], ['input', 0]]);
  const runs = new Map<string, number>([['running', 0], ['waiting', 0]]);
  for (const r of await store.runs({ status: ['running', 'waiting'], limit: SCRAPE_RUNS })) {
    inc(runs, r.status);
    for (const t of await store.tasks(r.runId)) {
      // a task held by a gate waits for a human, not for a worker: not in the queue
      if (t.status === 'ready' && t.notBefore !== HELD) inc(ready, t.agent);
      else if (t.status === 'running') inc(parked.size > 0 && parked.has(`${r.runId}\u0000${t.phase}`) ? ready : running, t.agent);
    }
    // gates live in the event log; a run with none open is `running` with no task held (cheap to skip is not safe: read them)
    // from the run's latest snapshot and the events after it: a long run's whole log was replayed at every scrape
    const { state } = await loadState(store, r.runId);
    for (const gate of state.gates.values()) if (gate.status === 'open') inc(gates, gate.kind);
  }
  return { ready, running, gates, runs };
}

/**
 * The gauges from the store's own counts (RunStore.activity): every active run, whatever their number,
 * in three statements. Open gates are read from the state of the runs that ever opened one (the others
 * have none: a run with many plain runs beside it reads no state). A task parked for a remote agent is
 * running in the store and counts in the queue.
 */
async function counted(store: RunStore, a: ActivityCounts, parked: ReadonlySet<string>): Promise<Gauges> {
  const ready = new Map(Object.entries(a.ready));
  const running = new Map(Object.entries(a.running));
  const gates = new Map<string, number>([['run', 0], ['phase', 0], ['access', 0], ['input', 0]]);
  const runs = new Map<string, number>([['running', a.runs.running], ['waiting', a.runs.waiting]]);
  if (parked.size > 0) {
    const byRun = new Map<string, Set<string>>();
    for (const key of parked) {
      const cut = key.indexOf('\u0000');
      const runId = key.slice(0, cut);
      let phases = byRun.get(runId);
      if (!phases) byRun.set(runId, (phases = new Set()));
      phases.add(key.slice(cut + 1));
    }
    for (const [runId, phases] of byRun) {
      for (const t of await store.tasks(runId)) {
        if (t.status !== 'running' || !phases.has(t.phase)) continue;
        inc(ready, t.agent);
        const n = (running.get(t.agent) ?? 0) - 1;
        if (n > 0) running.set(t.agent, n);
        else running.delete(t.agent);
      }
    }
  }
  for (const runId of a.gated) {
    const { state } = await loadState(store, runId);
    for (const gate of state.gates.values()) if (gate.status === 'open') inc(gates, gate.kind);
  }
  return { ready, running, gates, runs };
}

/** The agent of a phase's last attempt, else the one it is assigned (a fan-out phase settles without an attempt of its own; a phase can fail before any) */
function agentOf(state: RunState, phase: string): string {
  return state.phases.get(phase)?.agent ?? state.graph?.assign?.get(phase) ?? 'unknown';
}

function inc(m: Map<string, number>, k: string): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** A label value: backslash, quote and newline escaped. */
function esc(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

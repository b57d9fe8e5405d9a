/**
 * The executor: schedules a compiled workflow over its DAG, owns the wiring between phases
 * (RFC-0024 §3), and records every transition as an event. Decisions are made from the run state
 * (state.ts), which changes only through events; I/O is reached through ports (store, agents, clock).
 *
 * Scheduling keeps, per phase, a counter of unfinished dependencies; a finished phase decrements
 * its dependents' counters and settles those that reach zero. Each phase is visited a constant
 * number of times, so a run costs O(phases + edges).
 */
import { systemClock, type Clock } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import { cloneJson, isPlainObject, type Json, type JsonObject } from '../core/json.js';
import { checkTaskOutputs, tryResolveTaskInputs } from '../workflow/runtime.js';
import type { PhaseModel, WorkflowModel } from '../workflow/model.js';
import { AgentError, type AgentContext, type AgentHandler } from './agent.js';
import { BudgetExceededError } from './errors.js';
import type { FailureRecord, NewEvent, RunEvent } from './events.js';
import type { RunStore } from './ports.js';
import { backoffDelay, isRetryable } from './retry.js';
import { applyEvent, initialState, taskIdFor, toResult, type RunResult, type RunState } from './state.js';

export interface ExecutorOptions {
  agents: Readonly<Record<string, AgentHandler>>;
  store: RunStore;
  trigger?: Json;
  /** Run-level initial state: `$initial_state.*` keys a phase's own `initial_state` does not set. */
  initialState?: JsonObject;
  /** Most attempts running at once (default 32). */
  concurrency?: number;
  /** Run timeout in ms (overrides governance.timeout_hours). */
  timeoutMs?: number;
  clock?: Clock;
  /** Cancels the run: running attempts are aborted, the rest cancelled. */
  signal?: AbortSignal;
  onEvent?: (event: RunEvent, state: RunState) => void;
  runId?: string;
}

export const DEFAULT_CONCURRENCY = 32;

class TimeoutError extends AgentError {
  constructor(ms: number) {
    super('Timeout', `the attempt timed out after ${ms} ms`, { timeout_ms: ms });
  }
}

class StopSignal extends Error {
  override readonly name = 'StopSignal';
}

/** One attempt of one phase: its cost, its abort signal (made on demand: most agents never read it). */
class Attempt implements AgentContext {
  costUsd = 0;
  settled = false;
  private ctl: AbortController | undefined;
  private rejectFn: ((e: unknown) => void) | undefined;
  abortReason: unknown;

  constructor(
    private readonly run: Executor,
    readonly index: number,
    readonly input: JsonObject,
    /** The resolved input as recorded (kept for retries). */
    readonly resolved: JsonObject,
    readonly phase: string,
    readonly taskId: string,
    readonly runId: string,
    readonly attempt: number,
    readonly agent: string,
    readonly initialState: JsonObject,
  ) {}

  get signal(): AbortSignal {
    this.ctl ??= new AbortController();
    if (this.abortReason !== undefined && !this.ctl.signal.aborted) this.ctl.abort(this.abortReason);
    return this.ctl.signal;
  }

  /** Runs the handler; settles early when the attempt is aborted (timeout, stop), even if the agent never returns. */
  invoke(handler: AgentHandler): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      this.rejectFn = reject;
      try {
        const r = handler(this);
        if (r !== null && typeof r === 'object' && typeof (r as PromiseLike<unknown>).then === 'function') (r as PromiseLike<unknown>).then(resolve, reject);
        else resolve(r);
      } catch (e) {
        reject(e);
      }
    });
  }

  abort(reason: unknown): void {
    if (this.settled || this.abortReason !== undefined) return;
    this.abortReason = reason;
    this.ctl?.abort(reason);
    this.rejectFn?.(reason);
  }

  reportCost(usd: number): void {
    if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0) throw new TypeError(`reportCost expects a finite, non-negative number of USD, got ${String(usd)}`);
    if (this.settled) return;
    this.run.addCost(this, usd);
  }

  getSiblingOutput(phase: string): JsonObject | undefined {
    return this.run.siblingOutput(this, phase);
  }

  log(message: string): void {
    if (!this.settled) this.run.log(this, String(message));
  }
}

interface Queued {
  index: number;
  input: JsonObject | undefined;
  attempt: number;
  agent: string;
}

export class Executor {
  readonly runId: string;
  private readonly model: WorkflowModel;
  private readonly opts: ExecutorOptions;
  private readonly clock: Clock;
  private readonly concurrency: number;
  private readonly phases: PhaseModel[];
  private readonly index = new Map<string, number>();
  private readonly remaining: Int32Array;
  private readonly dependents: number[][];
  private readonly outputs = new Map<string, JsonObject>();
  private readonly state: RunState;
  private readonly events: RunEvent[] = [];
  private buffer: RunEvent[] = [];
  private readonly queue: Queued[] = [];
  private queueHead = 0;
  private readonly attempts = new Set<Attempt>();
  private running = 0;
  private open: number;
  private stopping: { kind: 'failed'; failure: FailureRecord } | { kind: 'cancelled'; reason: string } | undefined;
  private readonly runCtl = new AbortController();
  private readonly alerted = new Set<string>();
  private finish!: (r: RunResult) => void;
  private fail!: (e: unknown) => void;
  private ended = false;
  private firstFailure: { phase: string; failure: FailureRecord } | undefined;
  private pumping = false;
  /** Phases whose dependencies all finished, waiting to be settled (a worklist: no recursion down long chains). */
  private readonly unblocked: number[] = [];
  private draining = false;

  constructor(model: WorkflowModel, opts: ExecutorOptions) {
    this.model = model;
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? DEFAULT_CONCURRENCY));
    this.runId = opts.runId ?? newRunId(this.clock.now());
    this.phases = model.phases;
    this.phases.forEach((p, i) => this.index.set(p.name, i));
    this.remaining = new Int32Array(this.phases.length);
    this.dependents = this.phases.map(() => []);
    this.phases.forEach((p, i) => {
      this.remaining[i] = p.dependsOn.length;
      for (const d of p.dependsOn) this.dependents[this.index.get(d)!]!.push(i);
    });
    this.open = this.phases.length;
    this.state = initialState(this.runId);
  }

  /** Agent ids the workflow needs (assign and fallback_agent) that have no handler, with their phases. */
  static unboundAgents(model: WorkflowModel, agents: Readonly<Record<string, unknown>>): Map<string, string[]> {
    const missing = new Map<string, string[]>();
    const need = (agent: string, phase: string): void => {
      if (Object.prototype.hasOwnProperty.call(agents, agent) && typeof agents[agent] === 'function') return;
      const list = missing.get(agent) ?? [];
      if (!list.includes(phase)) list.push(phase);
      missing.set(agent, list);
    };
    for (const p of model.phases) {
      need(p.assign, p.name);
      if (p.retry.fallbackAgent) need(p.retry.fallbackAgent, p.name);
    }
    return missing;
  }

  async run(): Promise<RunResult> {
    const unbound = Executor.unboundAgents(this.model, this.opts.agents);
    if (unbound.size > 0) {
      const list = [...unbound].map(([a, ps]) => `\`${a}\` (phase${ps.length === 1 ? '' : 's'} ${ps.join(', ')})`).join(', ');
      throw new BatonError('unbound-agent', `no handler is bound for agent${unbound.size === 1 ? '' : 's'} ${list}; bind them with --agents, declare \`x-command\`, or dry-run with --stub-agents`);
    }
    const done = new Promise<RunResult>((resolve, reject) => {
      this.finish = resolve;
      this.fail = reject;
    });
    await this.opts.store.createRun({ runId: this.runId, workflow: this.model.info.name, createdAt: this.clock.now() });
    this.emit({ type: 'run.started', run_id: this.runId, workflow: this.model.info.name, trigger: this.opts.trigger ?? null, phases: this.phases.map((p) => p.name) });
    await this.commit();

    const timeoutMs = this.opts.timeoutMs ?? (this.model.governance.timeoutHours !== undefined ? this.model.governance.timeoutHours * 3_600_000 : undefined);
    if (timeoutMs !== undefined) {
      this.clock.sleep(timeoutMs, this.runCtl.signal).then(
        () => this.stop({ kind: 'failed', failure: { code: 'RunTimeout', message: `the run timed out after ${formatMs(timeoutMs)}`, retryable: false, details: { timeout_ms: timeoutMs } } }),
        () => undefined,
      );
    }
    const signal = this.opts.signal;
    if (signal) {
      if (signal.aborted) this.stop({ kind: 'cancelled', reason: reasonText(signal.reason) });
      else signal.addEventListener('abort', () => this.stop({ kind: 'cancelled', reason: reasonText(signal.reason) }), { once: true, signal: this.runCtl.signal });
    }
    if (!this.stopping) {
      for (let i = 0; i < this.phases.length; i++) if (this.remaining[i] === 0) this.unblocked.push(i);
      this.drain();
      this.pump();
    }
    this.maybeEnd();
    return done;
  }

  // ---- events -------------------------------------------------------------------------------

  private emit(e: NewEvent): RunEvent {
    const ev = e as RunEvent;
    ev.seq = this.state.seq + 1;
    ev.at = this.clock.now();
    this.events.push(ev);
    this.buffer.push(ev);
    applyEvent(this.state, ev);
    this.opts.onEvent?.(ev, this.state);
    return ev;
  }

  /** Makes buffered events durable. Sync stores return nothing and cost nothing here. */
  private commit(): void | Promise<void> {
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    return this.opts.store.append(this.runId, batch);
  }

  private taskId(i: number): string {
    return taskIdFor(this.runId, this.phases[i]!.name);
  }

  // ---- scheduling ---------------------------------------------------------------------------

  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    try {
      for (let k = 0; k < this.unblocked.length; k++) this.settle(this.unblocked[k]!);
    } finally {
      this.unblocked.length = 0;
      this.draining = false;
    }
  }

  /** All dependencies of phase i have finished: skip it, fail it, or make it ready. */
  private settle(i: number): void {
    if (this.stopping) return;
    const p = this.phases[i]!;
    const task_id = this.taskId(i);
    for (const d of p.dependsOn) {
      const s = this.state.phases.get(d)!.status;
      if (s === 'failed' || s === 'cancelled') {
        this.terminal(i, { type: 'task.failed', phase: p.name, task_id, attempts: 0, failure: { code: 'UpstreamFailed', message: `upstream phase '${d}' ${s}`, retryable: false, details: { upstream: d } } });
        return;
      }
    }
    if (p.inputs) {
      for (const b of p.inputs) {
        if (b.source.kind === 'phase' && this.state.phases.get(b.source.phase)!.status === 'skipped') {
          this.terminal(i, { type: 'task.skipped', phase: p.name, task_id, reason: 'upstream_skipped', detail: `input '${b.name}' (${b.ref}) comes from skipped phase '${b.source.phase}'` });
          return;
        }
      }
    }
    if (p.skipWhen) {
      const scope: Record<string, unknown> = { trigger: this.opts.trigger ?? null, initial_state: this.initialStateOf(p) };
      for (const n of p.skipWhen.names) {
        const out = this.outputs.get(n);
        if (out !== undefined) scope[n] = out;
      }
      let skip: unknown;
      try {
        skip = p.skipWhen.evaluate(scope);
      } catch (e) {
        this.terminal(i, {
          type: 'task.failed',
          phase: p.name,
          task_id,
          attempts: 0,
          failure: { code: 'SkipConditionError', message: `skip_when \`${p.skipWhen.source}\` could not be evaluated: ${(e as Error).message}`, retryable: false },
        });
        return;
      }
      if (skip === true) {
        this.terminal(i, { type: 'task.skipped', phase: p.name, task_id, reason: 'skip_when', detail: `skip_when \`${p.skipWhen.source}\` is true` });
        return;
      }
      if (skip !== false) {
        this.terminal(i, { type: 'task.failed', phase: p.name, task_id, attempts: 0, failure: { code: 'SkipConditionError', message: `skip_when \`${p.skipWhen.source}\` gave ${JSON.stringify(skip) ?? typeof skip}, not a boolean`, retryable: false } });
        return;
      }
    }
    this.emit({ type: 'task.ready', phase: p.name, task_id });
    this.queue.push({ index: i, input: undefined, attempt: 1, agent: p.assign });
  }

  private initialStateOf(p: PhaseModel): JsonObject {
    const run = this.opts.initialState;
    return run ? { ...run, ...p.initialState } : p.initialState;
  }

  /** Starts queued attempts while slots are free. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.stopping && this.running < this.concurrency && this.queueHead < this.queue.length) {
        const q = this.queue[this.queueHead++]!;
        if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
          this.queue.splice(0, this.queueHead);
          this.queueHead = 0;
        }
        this.claim(q);
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Claim-time validation (§3.1), then hand-off. */
  private claim(q: Queued): void {
    const p = this.phases[q.index]!;
    const task_id = this.taskId(q.index);
    let input = q.input;
    if (!input) {
      const r = tryResolveTaskInputs(p, this.outputs, { trigger: this.opts.trigger ?? null, initialState: this.initialStateOf(p), taskId: task_id });
      if (!r.ok) {
        // upstream outputs never change once recorded: a rejected claim can never succeed, so the task fails now
        const payload = r.error.toJSON();
        this.emit({ type: 'task.claim_rejected', phase: p.name, task_id, error: payload });
        this.terminal(q.index, { type: 'task.failed', phase: p.name, task_id, attempts: 0, failure: { code: r.error.error, error: r.error.error, message: r.error.message, retryable: false, details: payload } });
        return;
      }
      input = r.input;
    }
    this.running++;
    this.emit({ type: 'task.claimed', phase: p.name, task_id, attempt: q.attempt, agent: q.agent, input });
    // each attempt gets its own copy: an agent that mutates ctx.input cannot touch recorded outputs
    const own = p.inputs && p.inputs.length > 0 ? cloneJson(input) : {};
    const att = new Attempt(this, q.index, own, input, p.name, task_id, this.runId, q.attempt, q.agent, this.initialStateOf(p));
    void this.execute(att).catch((e: unknown) => this.crash(e));
  }

  private async execute(att: Attempt): Promise<void> {
    const p = this.phases[att.index]!;
    const handler = this.opts.agents[att.agent]!;
    this.attempts.add(att);
    const committed = this.commit();
    if (committed) await committed; // the claim is durable before the agent sees the task
    let timer: AbortController | undefined;
    if (p.timeoutMs !== undefined) {
      const ms = p.timeoutMs;
      timer = new AbortController();
      this.clock.sleep(ms, timer.signal).then(
        () => att.abort(new TimeoutError(ms)),
        () => undefined,
      );
    }
    let result: unknown;
    let thrown: unknown;
    let ok = true;
    try {
      result = await att.invoke(handler);
    } catch (e) {
      ok = false;
      thrown = e;
    }
    att.settled = true;
    timer?.abort();
    this.attempts.delete(att);
    if (att.abortReason instanceof StopSignal || this.ended) return; // the stop already recorded this attempt's fate

    this.running--;
    if (ok) this.complete(att, result);
    else {
      const failure = toFailure(thrown);
      this.emit({ type: 'task.attempt_failed', phase: p.name, task_id: att.taskId, attempt: att.attempt, failure });
      this.retryOrFail(att, failure);
    }
    const c = this.commit();
    if (c) await c;
    this.pump();
    this.maybeEnd();
  }

  private complete(att: Attempt, result: unknown): void {
    const p = this.phases[att.index]!;
    let output = result;
    if (isPlainObject(result) && Object.prototype.hasOwnProperty.call(result, '_cost')) {
      const { _cost, ...rest } = result;
      output = rest;
      if (typeof _cost === 'number' && Number.isFinite(_cost) && _cost >= 0) this.addCost(att, _cost);
      if (this.stopping) return;
    }
    const checked = checkTaskOutputs(p, output, { taskId: att.taskId });
    if (!checked.ok) {
      const payload = checked.error.toJSON();
      this.emit({ type: 'task.rejected', phase: p.name, task_id: att.taskId, attempt: att.attempt, error: payload });
      this.retryOrFail(att, { code: checked.error.error, error: checked.error.error, message: checked.error.message, retryable: true, details: payload });
      return;
    }
    const recorded = checked.output;
    const declared = p.outputs;
    const extra = declared ? Object.keys(recorded).filter((k) => !declared.some((d) => d.key === k)) : [];
    this.outputs.set(p.name, recorded);
    this.terminal(att.index, { type: 'task.completed', phase: p.name, task_id: att.taskId, attempt: att.attempt, output: recorded, extra_keys: extra, cost_usd: att.costUsd });
  }

  private retryOrFail(att: Attempt, failure: FailureRecord): void {
    const p = this.phases[att.index]!;
    const policy = p.retry;
    const onFallback = att.agent !== p.assign;
    if (!onFallback && att.attempt < policy.maxAttempts && isRetryable(policy, failure)) {
      const delay = backoffDelay(policy, att.attempt);
      this.emit({ type: 'task.retrying', phase: p.name, task_id: att.taskId, attempt: att.attempt, next_attempt: att.attempt + 1, delay_ms: delay, agent: att.agent, reason: failure.code });
      const q: Queued = { index: att.index, input: att.resolved, attempt: att.attempt + 1, agent: att.agent };
      if (delay === 0) this.queue.push(q);
      else {
        this.clock.sleep(delay, this.runCtl.signal).then(
          () => {
            if (this.stopping) return;
            this.queue.push(q);
            this.pump();
            this.maybeEnd();
          },
          () => undefined,
        );
      }
      return;
    }
    const fb = policy.fallbackAgent;
    if (!onFallback && fb !== undefined && fb !== p.assign) {
      this.emit({ type: 'task.retrying', phase: p.name, task_id: att.taskId, attempt: att.attempt, next_attempt: att.attempt + 1, delay_ms: 0, agent: fb, reason: failure.code });
      this.queue.push({ index: att.index, input: att.resolved, attempt: att.attempt + 1, agent: fb });
      return;
    }
    this.terminal(att.index, { type: 'task.failed', phase: p.name, task_id: att.taskId, attempts: att.attempt, failure });
  }

  /** Records a terminal event for phase i and settles dependents that became unblocked (§3.4). */
  private terminal(i: number, e: NewEvent & { type: 'task.completed' | 'task.failed' | 'task.skipped' | 'task.cancelled' }): void {
    this.emit(e);
    this.open--;
    if (e.type === 'task.failed') this.firstFailure ??= { phase: this.phases[i]!.name, failure: e.failure };
    if (this.stopping) return;
    const deps = this.dependents[i]!;
    for (let k = 0; k < deps.length; k++) {
      const d = deps[k]!;
      if (--this.remaining[d]! === 0) this.unblocked.push(d);
    }
    this.drain();
  }

  private maybeEnd(): void {
    if (this.ended || this.running > 0) return;
    if (this.stopping) {
      this.end();
      return;
    }
    if (this.open > 0) {
      // nothing running, nothing queued, yet phases are open: only sleeping retries can be pending
      if (this.queueHead < this.queue.length) return;
      return;
    }
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.stopping) {
      const why = this.stopping.kind === 'failed' ? this.stopping.failure.message : this.stopping.reason;
      for (const att of this.attempts) att.abort(new StopSignal(`the run stopped: ${why}`));
      for (let i = 0; i < this.phases.length; i++) {
        const s = this.state.phases.get(this.phases[i]!.name)!.status;
        if (s === 'pending' || s === 'ready' || s === 'running') {
          this.emit({ type: 'task.cancelled', phase: this.phases[i]!.name, task_id: this.taskId(i), reason: this.stopping.kind === 'failed' ? this.stopping.failure.code : this.stopping.reason });
        }
      }
      if (this.stopping.kind === 'failed') this.emit({ type: 'run.failed', failure: this.stopping.failure });
      else this.emit({ type: 'run.cancelled', reason: this.stopping.reason });
    } else if (this.firstFailure) {
      const f = this.firstFailure;
      this.emit({ type: 'run.failed', failure: { code: f.failure.code, message: `phase '${f.phase}' failed: ${f.failure.message}`, retryable: false, details: { phase: f.phase } } });
    } else {
      this.emit({ type: 'run.completed' });
    }
    this.runCtl.abort();
    Promise.resolve(this.commit()).then(
      () => this.finish(toResult(this.state, this.events)),
      (e: unknown) => this.fail(e),
    );
  }

  /** Stops the run (budget, timeout, cancellation): running attempts are aborted and recorded as cancelled. */
  stop(how: NonNullable<Executor['stopping']>): void {
    if (this.stopping || this.ended) return;
    this.stopping = how;
    this.running = 0;
    this.end();
  }

  private crash(e: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.runCtl.abort();
    this.fail(e);
  }

  // ---- context services ---------------------------------------------------------------------

  addCost(att: Attempt, usd: number): void {
    if (usd === 0 || this.ended) return;
    const p = this.phases[att.index]!;
    att.costUsd += usd;
    const ps = this.state.phases.get(p.name)!;
    const phaseTotal = ps.costUsd + usd;
    const runTotal = this.state.costUsd + usd;
    this.emit({ type: 'task.cost', phase: p.name, task_id: att.taskId, attempt: att.attempt, usd, phase_total_usd: phaseTotal, run_total_usd: runTotal });
    const ct = p.costTracking;
    if (ct && ct.enabled && ct.budgetUsd !== undefined) {
      const pct = ct.budgetUsd > 0 ? (phaseTotal / ct.budgetUsd) * 100 : Infinity;
      if (ct.alertAtPercent !== undefined && pct >= ct.alertAtPercent && !this.alerted.has(p.name)) {
        this.alerted.add(p.name);
        this.emit({ type: 'budget.alert', scope: 'phase', phase: p.name, budget_usd: ct.budgetUsd, spent_usd: phaseTotal, percent: Math.round(pct * 10) / 10 });
      }
      if (phaseTotal > ct.budgetUsd + 1e-12) {
        const err = new BudgetExceededError('phase', ct.budgetUsd, phaseTotal, p.name);
        this.stop({ kind: 'failed', failure: { code: err.error, error: err.error, message: err.message, retryable: false, details: err.toJSON() } });
        return;
      }
    }
    const max = this.model.governance.maxCostUsd;
    if (max !== undefined) {
      if (!this.alerted.has('') && runTotal >= max * 0.8) {
        this.alerted.add('');
        this.emit({ type: 'budget.alert', scope: 'run', budget_usd: max, spent_usd: runTotal, percent: Math.round((runTotal / max) * 1000) / 10 });
      }
      if (runTotal > max + 1e-12) {
        const err = new BudgetExceededError('run', max, runTotal);
        this.stop({ kind: 'failed', failure: { code: err.error, error: err.error, message: err.message, retryable: false, details: err.toJSON() } });
      }
    }
  }

  siblingOutput(att: Attempt, phase: string): JsonObject | undefined {
    const out = this.outputs.get(phase);
    if (!att.settled && !this.ended) this.emit({ type: 'task.sibling_output', phase: att.phase, task_id: att.taskId, attempt: att.attempt, sibling: phase, found: out !== undefined });
    return out === undefined ? undefined : cloneJson(out);
  }

  log(att: Attempt, message: string): void {
    if (!this.ended) this.emit({ type: 'task.log', phase: att.phase, task_id: att.taskId, attempt: att.attempt, message });
  }
}

function toFailure(e: unknown): FailureRecord {
  if (e instanceof AgentError) return { code: e.code, message: e.message, retryable: e.retryable, ...(Object.keys(e.details).length > 0 ? { details: e.details } : {}) };
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    const retryable = (e as { retryable?: unknown }).retryable;
    return { code: typeof code === 'string' && code !== '' ? code : e.name || 'Error', message: e.message, retryable: retryable !== false };
  }
  if (isPlainObject(e) && typeof e['code'] === 'string') return { code: e['code'], message: typeof e['message'] === 'string' ? e['message'] : String(e['code']), retryable: e['retryable'] !== false };
  return { code: 'Error', message: typeof e === 'string' ? e : `the agent threw ${JSON.stringify(e) ?? String(e)}`, retryable: true };
}

function reasonText(reason: unknown): string {
  if (reason instanceof Error) return reason.message || reason.name;
  if (typeof reason === 'string') return reason;
  return 'cancelled';
}

function formatMs(ms: number): string {
  if (ms >= 3_600_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 1000) return `${Math.round(ms / 100) / 10} s`;
  return `${ms} ms`;
}

let counter = 0;
/** Sortable, unique in a process and very likely across processes: time, then randomness. */
export function newRunId(now: number): string {
  counter = (counter + 1) % 1296;
  const rand = Math.floor(Math.random() * 36 ** 6).toString(36).padStart(6, '0');
  return `run_${now.toString(36)}${counter.toString(36).padStart(2, '0')}${rand}`;
}

/**
 * The worker loop: the I/O around the decisions (decide.ts). It claims ready tasks from the store,
 * runs their attempts, and commits outcomes, timers and gate decisions, each batch in one store
 * transaction. Every store (memory included) runs through this loop; any worker continues any run
 * from the stored state.
 *
 * Durability invariants kept here:
 * - A task is handed to an agent only after its claim is committed (`task.claimed` with a lease).
 * - An outcome counts only once committed; a crash before that re-runs the attempt (at least once)
 *   as a new attempt, after the lease expires or its owner is known dead.
 * - The in-memory state is the stored state plus this worker's uncommitted facts: after a failed
 *   transaction it is thrown away and rebuilt from the store.
 * - Completions are batched: facts that arrive while a transaction is in flight go in the next
 *   one, and every transaction also claims new tasks for the free slots (one commit per phase on a
 *   chain, far fewer on a fan).
 */
import { hostname } from 'node:os';
import { systemClock, type Clock } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import { cloneJson, type Json, type JsonObject } from '../core/json.js';
import type { AgentContract } from '../workflow/contract/model.js';
import type { WorkflowModel } from '../workflow/model.js';
import type { AgentHandler, InputRequest } from './agent.js';
import { AgentError } from './agent.js';
import { Attempt, StopSignal, TimeoutError, toOutcome, type AttemptHost } from './attempt.js';
import { decide, remainingBudget, type Claimed, type Fact, type FactResult } from './decide.js';
import type { RunEvent } from './events.js';
import { contractOfPhase, estimatedMsOf, planOf, withContracts, type Plan } from './plan.js';
import type { RunRecord, RunStore } from './ports.js';
import { buildCommit, wakeAt } from './projection.js';
import { applyEvent, attachGraph, replay, toResult, type RunResult, type RunState } from './state.js';

export const DEFAULT_CONCURRENCY = 32;
export const DEFAULT_LEASE_MS = 30_000;

/** Named points at the commit boundaries where tests crash the worker. */
export type FaultPoint = 'run.created' | 'flush.before-commit' | 'flush.after-commit' | 'attempt.before-invoke' | 'attempt.after-return';
export const FAULT_POINTS: readonly FaultPoint[] = ['run.created', 'flush.before-commit', 'flush.after-commit', 'attempt.before-invoke', 'attempt.after-return'];

/** Crash at the `hit`-th time (1-based, default 1) the worker reaches `at`. */
export interface FaultPlan {
  at: FaultPoint;
  hit?: number;
}

/** A workflow and the handlers of the agents this worker binds, for one run. */
export interface BoundRun {
  model: WorkflowModel;
  handlers: Readonly<Record<string, AgentHandler>>;
  /** Contracts the handlers carry (`defineAgent`), for agents the workflow gives none. */
  contracts?: ReadonlyMap<string, AgentContract>;
}

export interface WorkerOptions {
  store: RunStore;
  /** Loads a run's workflow and binds its agents (the composition root knows how). */
  bind: (run: RunRecord) => Promise<BoundRun>;
  clock?: Clock;
  /** Unique among live workers: `host:pid:random` by default. */
  workerId?: string;
  /** Attempts running at once in this worker (default 32). */
  concurrency?: number;
  /** Lease of a claimed attempt; renewed every third of it while the attempt runs (default 30 s). */
  leaseMs?: number;
  /** How often to look at the store for changes from other processes when idle (default 1 s; PostgreSQL is woken by NOTIFY). */
  pollMs?: number;
  /** Whether the worker that holds a lease is known to be dead (default: same host and its pid is gone). */
  isOwnerDead?: (owner: string) => boolean;
  faults?: FaultPlan;
  /** When serving: the agent ids this worker binds (it asks the store only for their tasks). Default: any. */
  agents?: readonly string[];
  onEvent?: (event: RunEvent, state: RunState) => void;
}

interface RunCtx {
  runId: string;
  record: RunRecord;
  plan: Plan;
  handlers: Readonly<Record<string, AgentHandler>>;
  agents: ReadonlySet<string>;
  state: RunState;
  /** Every event of the run, kept for the result when the worker drives it. */
  events: RunEvent[] | undefined;
  facts: Fact[];
  waiters: ((r: FactResult | Error) => void)[];
  attempts: Map<string, Attempt>;
  /** Something changed since the last claim that found nothing: try claiming again. */
  claimable: boolean;
  /** The state's seq when a claim last found nothing: a store hint of ready work at the same seq is not new. */
  emptyClaimSeq: number;
  /** A claim-only transaction found the run busy: wait for a wake before claiming again. */
  skipUntilWake: boolean;
  /** After a failed commit: no new commit before this time (backoff), and how many failed in a row. */
  retryAt: number;
  failedCommits: number;
  ended: boolean;
  flushing: boolean;
  done: Promise<RunResult>;
  resolve: (r: RunResult) => void;
  reject: (e: unknown) => void;
  /** Awaited by a caller (drive): kept until the run ends. */
  driven: boolean;
}

export class Worker implements AttemptHost {
  readonly id: string;
  private readonly store: RunStore;
  private readonly clock: Clock;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly isOwnerDead: (owner: string) => boolean;
  private readonly runs = new Map<string, RunCtx>();
  private active = 0;
  private crashed: unknown;
  private closed = false;
  private looping = false;
  private serving = false;
  private kickFn: (() => void) | undefined;
  private readonly idleCtl = new AbortController();
  private faultHits = 0;
  private heartbeat: Promise<void> | undefined;
  /** Store calls in flight, and whether the loop waits in idle(): a test clock moves only when both say quiet. */
  private io = 0;
  private idling = false;
  private readonly unregister: (() => void) | undefined;
  /** A timer fired: a lease may have expired, look at the store on the next turn. */
  private leaseScanDue = false;

  constructor(private readonly opts: WorkerOptions) {
    this.store = opts.store;
    this.clock = opts.clock ?? systemClock;
    this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? DEFAULT_CONCURRENCY));
    this.leaseMs = Math.max(100, opts.leaseMs ?? DEFAULT_LEASE_MS);
    this.pollMs = Math.max(10, opts.pollMs ?? 1000);
    this.id = opts.workerId ?? newWorkerId();
    this.isOwnerDead = opts.isOwnerDead ?? ownerIsDeadOnThisHost;
    this.unregister = this.clock.register?.(() => this.crashed !== undefined || this.closed || (this.io === 0 && (!this.looping || this.idling)));
  }

  /** Counts a store call as I/O in flight. */
  private async track<T>(p: Promise<T>): Promise<T> {
    this.io++;
    try {
      return await p;
    } finally {
      this.io--;
    }
  }

  // ---- public ---------------------------------------------------------------------------------

  /** Drives one run to its end (it may wait for gates, timers, other workers) and resolves to its result. */
  async drive(runId: string): Promise<RunResult> {
    const ctx = await this.load(runId, true);
    ctx.driven = true;
    this.ensureLoop();
    const r = await ctx.done;
    // a run this worker first took up while serving keeps no event list: read it from the store
    if (ctx.events === undefined) return toResult(ctx.state, (await this.store.events(runId)).slice(0, ctx.state.seq));
    return r;
  }

  /** Runs every run's ready tasks for the bound agents until `signal` aborts (`baton worker`). */
  async serve(signal: AbortSignal): Promise<void> {
    this.serving = true;
    const stop = (): void => this.close();
    signal.addEventListener('abort', stop, { once: true });
    this.ensureLoop();
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  /** Adds a fact from outside (cancel, a gate decision) to a run this worker drives, and commits it. */
  submit(runId: string, fact: Fact): Promise<FactResult> {
    const ctx = this.runs.get(runId);
    if (!ctx) return Promise.reject(new BatonError('unknown-run', `this worker does not hold run ${runId}`));
    return this.push(ctx, fact);
  }

  /** Resolves once no store call of this worker is in flight (after close or a crash, nothing new starts). */
  async settled(): Promise<void> {
    while (this.io > 0) await new Promise<void>((r) => setTimeout(r, 1));
  }

  /** Stops the loop; running attempts are aborted and their tasks left for another worker (leases expire). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unregister?.();
    this.idleCtl.abort();
    for (const ctx of this.runs.values()) for (const a of ctx.attempts.values()) a.abort(new StopSignal('the worker stopped'));
    this.kick();
  }

  // ---- loading ----------------------------------------------------------------------------------

  private load(runId: string, keepEvents: boolean): Promise<RunCtx> {
    const have = this.runs.get(runId);
    if (have) return Promise.resolve(have);
    return this.track(this.loadRun(runId, keepEvents));
  }

  private async loadRun(runId: string, keepEvents: boolean): Promise<RunCtx> {
    const have = this.runs.get(runId);
    if (have) return have;
    const record = await this.store.run(runId);
    if (!record) throw new BatonError('unknown-run', `no run ${runId} in ${this.store.location}`);
    const bound = await this.opts.bind(record);
    const events = await this.store.events(runId);
    const state = replay(runId, events);
    const plan = bound.contracts ? withContracts(planOf(bound.model), bound.contracts) : planOf(bound.model);
    attachGraph(state, plan.dependsOn, plan.dependents, plan.assign);
    let resolve!: (r: RunResult) => void;
    let reject!: (e: unknown) => void;
    const done = new Promise<RunResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    done.catch(() => undefined);
    const ctx: RunCtx = {
      runId,
      record,
      plan,
      handlers: bound.handlers,
      agents: new Set(Object.keys(bound.handlers).filter((k) => typeof bound.handlers[k] === 'function')),
      state,
      events: keepEvents ? [...events] : undefined,
      facts: [],
      waiters: [],
      attempts: new Map(),
      claimable: true,
      emptyClaimSeq: -1,
      skipUntilWake: false,
      retryAt: 0,
      failedCommits: 0,
      ended: state.status !== 'running',
      flushing: false,
      done,
      resolve,
      reject,
      driven: false,
    };
    this.runs.set(runId, ctx);
    if (ctx.ended) resolve(toResult(state, ctx.events ?? []));
    else this.takeOverDead(ctx);
    return ctx;
  }

  /** Running tasks whose owner is known dead (or whose lease expired) are handed back for a new attempt. */
  private takeOverDead(ctx: RunCtx): void {
    const now = this.clock.now();
    for (const name of ctx.state.running) {
      const p = ctx.state.phases.get(name)!;
      const owner = p.leaseOwner;
      if (owner === undefined || owner === this.id) continue;
      if (this.isOwnerDead(owner)) ctx.facts.push({ kind: 'lease_expired', phase: name, attempt: p.attempts, owner });
      else if (p.leaseExpiresAt !== undefined && p.leaseExpiresAt < now) ctx.claimable = true; // checked against the store's renewed lease in refresh()
    }
  }

  // ---- the loop -----------------------------------------------------------------------------------

  private ensureLoop(): void {
    if (this.looping) {
      this.kick();
      return;
    }
    this.looping = true;
    void this.loop().finally(() => {
      this.looping = false;
    });
  }

  private kick(): void {
    const k = this.kickFn;
    this.kickFn = undefined;
    k?.();
  }

  private async loop(): Promise<void> {
    let lastLeaseScan = 0;
    while (!this.closed && this.crashed === undefined) {
      let did = false;
      for (const ctx of [...this.runs.values()]) {
        if (ctx.ended) {
          if (ctx.attempts.size === 0 && !ctx.driven) this.runs.delete(ctx.runId);
          continue;
        }
        if (this.wantsFlush(ctx)) {
          await this.flush(ctx);
          did = true;
        }
      }
      if (this.crashed !== undefined || this.closed) break;
      const now = this.clock.now();
      // a serving worker looks for work in other runs when it has nothing to do here (and for expired leases now and then)
      if (now - lastLeaseScan >= this.leaseMs / 3 || (this.serving && !did) || this.leaseScanDue) {
        lastLeaseScan = now;
        this.leaseScanDue = false;
        if (await this.scanWork()) did = true;
      }
      const live = [...this.runs.values()].some((c) => !c.ended);
      if (!live && !this.serving) break;
      if (!did) await this.idle();
    }
    for (const ctx of this.runs.values()) {
      if (this.crashed !== undefined) ctx.reject(this.crashed);
      else if (!ctx.ended) ctx.reject(new BatonError('internal', `the worker stopped before run ${ctx.runId} ended`));
    }
  }

  private wantsFlush(ctx: RunCtx): boolean {
    if (ctx.flushing) return false;
    if (ctx.retryAt > this.clock.now()) return false;
    if (ctx.facts.length > 0) return true;
    if (this.tickDue(ctx)) return true;
    return ctx.claimable && this.active < this.concurrency && this.hasClaimable(ctx);
  }

  private hasClaimable(ctx: RunCtx): boolean {
    const now = this.clock.now();
    for (const name of ctx.state.ready) {
      const p = ctx.state.phases.get(name)!;
      if (p.notBefore === undefined || p.notBefore <= now) return true;
    }
    return false;
  }

  private tickDue(ctx: RunCtx): boolean {
    const w = nextTimer(ctx.state);
    return w !== undefined && w <= this.clock.now();
  }

  /** Waits for a kick (a fact, an attempt's end), the next timer, or a change in the store. */
  private async idle(): Promise<void> {
    // facts noted while the last flush was in flight (an attempt that ended at once) need no wait
    for (const ctx of this.runs.values()) if (!ctx.ended && this.wantsFlush(ctx)) return;
    const now = this.clock.now();
    let wake = Infinity;
    for (const ctx of this.runs.values()) {
      if (ctx.ended) continue;
      const t = nextTimer(ctx.state);
      if (t !== undefined) wake = Math.min(wake, t);
      if (ctx.retryAt > now) wake = Math.min(wake, ctx.retryAt);
      for (const name of ctx.state.ready) {
        const p = ctx.state.phases.get(name)!;
        const nb = p.notBefore;
        if (nb !== undefined && nb > now) wake = Math.min(wake, nb);
        // an answered attempt whose process is gone is claimable once its grace period ends: a timer, like a retry delay
        const rs = p.resumable;
        if (rs !== undefined && rs.owner !== this.id && rs.until > now) wake = Math.min(wake, rs.until);
      }
      // another worker's lease as first granted: look at the store when it would expire (renewals live there only)
      for (const name of ctx.state.running) {
        const p = ctx.state.phases.get(name)!;
        if (p.leaseOwner !== this.id && p.leaseExpiresAt !== undefined && p.leaseExpiresAt >= now) wake = Math.min(wake, p.leaseExpiresAt + 1);
      }
    }
    const ctl = new AbortController();
    const onIdleAbort = (): void => ctl.abort();
    this.idleCtl.signal.addEventListener('abort', onIdleAbort, { once: true });
    const waits: Promise<unknown>[] = [
      new Promise<void>((r) => {
        this.kickFn = r;
      }),
    ];
    // watched even while attempts run: a cancel or a gate decision from another process must reach them
    waits.push(this.store.waitForChange(this.pollMs, ctl.signal).then(() => 'store'));
    if (wake !== Infinity) waits.push(this.clock.sleep(Math.max(0, wake - now), ctl.signal).then(() => 'timer', () => undefined));
    this.idling = true;
    const why = await Promise.race(waits);
    this.idling = false;
    for (const ctx of this.runs.values()) ctx.skipUntilWake = false;
    ctl.abort();
    this.idleCtl.signal.removeEventListener('abort', onIdleAbort);
    this.kickFn = undefined;
    if (why === 'timer') {
      for (const ctx of this.runs.values()) ctx.claimable = true;
      this.leaseScanDue = true;
    }
    if (why === 'store') await this.refresh();
  }

  /** Another process may have committed: pull the runs whose seq moved. */
  private async refresh(): Promise<void> {
    for (const ctx of this.runs.values()) {
      if (ctx.ended || ctx.flushing) continue;
      const rec = await this.track(this.store.run(ctx.runId));
      if (rec && rec.seq !== ctx.state.seq) {
        ctx.claimable = true;
        if (ctx.facts.length === 0) ctx.facts.push({ kind: 'tick' });
      }
    }
  }

  /** Leases that expired (their worker stopped renewing) and, when serving, runs with work. */
  private async scanWork(): Promise<boolean> {
    const now = this.clock.now();
    const hints = await this.track(this.store.findWork({ agents: this.serving ? (this.opts.agents ?? null) : null, now, limit: 100 }));
    let found = false;
    for (const h of hints) {
      let ctx = this.runs.get(h.runId);
      if (!ctx) {
        if (!this.serving) continue;
        try {
          ctx = await this.load(h.runId, false);
        } catch {
          continue; // a run this worker cannot bind (its workflow or agents): leave it to others
        }
      }
      if (ctx.ended) continue;
      if (h.reason === 'lease') {
        if (h.owner === this.id || h.phase === undefined || h.attempt === undefined) continue;
        ctx.facts.push({ kind: 'lease_expired', phase: h.phase, attempt: h.attempt, owner: h.owner! });
        found = true;
      } else if (h.reason === 'ready' && ctx.emptyClaimSeq === ctx.state.seq) {
        // ready tasks this worker just failed to claim (held by a gate, another worker's grace period): waking
        // again for them would spin; a change (refresh) or a timer (idle) makes them worth another claim
        continue;
      } else if (h.reason === 'ready' && this.active < this.concurrency && [...ctx.state.ready].some((n) => ctx.agents.has(ctx.state.phases.get(n)!.nextAgent ?? ctx.plan.byName.get(n)!.assign))) {
        ctx.claimable = true;
        found = true;
      } else if (h.reason === 'timer') {
        ctx.facts.push({ kind: 'tick' });
        found = true;
      } else if (h.reason === 'ready' && ctx.state.ready.size === 0) {
        // our state is behind the store: pull
        ctx.facts.push({ kind: 'tick' });
        found = true;
      }
    }
    return found;
  }

  // ---- commits ----------------------------------------------------------------------------------

  /** Whether this worker drives (or works on) the run. */
  holds(runId: string): boolean {
    // a closed or crashed worker commits nothing more: commands must go to the store directly, or they would wait forever
    if (this.closed || this.crashed !== undefined) return false;
    const ctx = this.runs.get(runId);
    return ctx !== undefined && !ctx.ended;
  }

  /** A fault point reached outside the loop (run creation). */
  checkFault(at: FaultPoint): void {
    this.fault(at);
  }

  private fault(at: FaultPoint): void {
    const f = this.opts.faults;
    if (!f || f.at !== at) return;
    this.faultHits++;
    if (this.faultHits === (f.hit ?? 1)) {
      const e = new BatonError('fault-injected', `fault injected at ${at} (hit ${this.faultHits})`);
      this.crash(e);
      throw e;
    }
  }

  /** Simulates the process dying: no further I/O, attempts abandoned, callers see the fault. */
  private crash(e: unknown): void {
    if (this.crashed !== undefined) return;
    this.crashed = e;
    this.idleCtl.abort();
    for (const ctx of this.runs.values()) {
      for (const a of ctx.attempts.values()) a.abort(new StopSignal('the worker crashed'));
      ctx.reject(e);
      for (const w of ctx.waiters.splice(0)) w(e instanceof Error ? e : new Error(String(e)));
    }
    this.kick();
  }

  private push(ctx: RunCtx, fact: Fact): Promise<FactResult> {
    if (this.crashed !== undefined) return Promise.reject(this.crashed);
    return new Promise<FactResult>((resolve, reject) => {
      ctx.facts.push(fact);
      // waiters line up with facts by index
      while (ctx.waiters.length < ctx.facts.length - 1) ctx.waiters.push(() => undefined);
      ctx.waiters.push((r) => (r instanceof Error ? reject(r) : resolve(r)));
      this.ensureLoop();
    });
  }

  private note(ctx: RunCtx, fact: Fact): void {
    if (ctx.ended || this.crashed !== undefined) return;
    ctx.facts.push(fact);
    this.kick();
  }

  private async flush(ctx: RunCtx): Promise<void> {
    ctx.flushing = true;
    const facts = ctx.facts.splice(0);
    const waiters = ctx.waiters.splice(0);
    const free = this.concurrency - this.active;
    if (this.tickDue(ctx)) {
      // waiters line up with facts by index: the tick gets a waiter of its own
      facts.unshift({ kind: 'tick' });
      if (waiters.length > 0) waiters.unshift(() => undefined);
    }
    let claimIndex = -1;
    if (free > 0 && !this.closed) {
      claimIndex = facts.length;
      const dead = this.deadOwnersOf(ctx);
      const resuming = this.resumingOf(ctx);
      facts.push({ kind: 'claim', worker: this.id, agents: ctx.agents, max: free, leaseMs: this.leaseMs, ...(dead ? { deadOwners: dead } : {}), ...(resuming ? { resuming } : {}) });
    }
    const now = this.clock.now();
    let delta: RunEvent[] = [];
    let made: RunEvent[] = [];
    let results: FactResult[] = [];
    // a transaction that only claims does not queue behind another worker's commit on the same run:
    // that worker claims for itself as it commits, and its commit wakes this one (graphile-worker's SKIP LOCKED, per run)
    const onlyClaims = waiters.length === 0 && facts.every((f) => f.kind === 'claim' || f.kind === 'tick');
    try {
      this.fault('flush.before-commit');
      const r = await this.track(
        this.store.transact(ctx.runId, ctx.state.seq, (d) => {
          // a worker that crashed while this transaction waited for its lock writes nothing more (a dead process commits nothing)
          if (this.crashed !== undefined) throw this.crashed instanceof Error ? this.crashed : new BatonError('fault-injected', 'the worker crashed');
          try {
            delta = d;
            for (const e of d) applyEvent(ctx.state, e);
            const out = decide(ctx.plan, ctx.state, facts, { now, initialState: ctx.record.initialState ?? undefined });
            made = out.events;
            results = out.results;
            return { commit: out.events.length > 0 ? buildCommit(ctx.plan, ctx.state, out.events, out.touched, now) : null, value: null };
          } catch (err) {
            // a bug in the decisions or a log this engine cannot read, not a store failure: retrying would fail forever
            throw new DecisionError(err);
          }
        }, onlyClaims ? { skipIfBusy: true } : undefined),
      );
      if (!r.ok && r.reason === 'busy') {
        ctx.flushing = false;
        ctx.claimable = true;
        ctx.skipUntilWake = true; // not a spin against the holder: the next wake (its NOTIFY, a timer, a fact) tries again
        return;
      }
      if (!r.ok) throw new BatonError('store', `a lease changed hands during the commit (${r.failed.phase})`);
      this.fault('flush.after-commit');
    } catch (e) {
      ctx.flushing = false;
      if (this.crashed !== undefined) return;
      if (e instanceof DecisionError) {
        for (const w of waiters) w(e);
        this.crash(e);
        return;
      }
      if (!isFault(e)) {
        this.requeue(ctx, facts, waiters);
        // the store may be down for a while: back off (100 ms doubling to 5 s) instead of hammering it
        ctx.failedCommits++;
        ctx.retryAt = this.clock.now() + Math.min(5000, 100 * 2 ** (ctx.failedCommits - 1));
      }
      // the in-memory state may hold decisions that were not committed: rebuild it from the store
      await this.reload(ctx);
      for (const w of waiters) w(e instanceof Error ? e : new Error(String(e)));
      if (isFault(e)) this.crash(e);
      return;
    }
    ctx.flushing = false;
    ctx.failedCommits = 0;
    ctx.retryAt = 0;
    const all = delta.length > 0 ? delta.concat(made) : made;
    if (ctx.events) for (const e of all) ctx.events.push(e);
    if (this.opts.onEvent) for (const e of all) this.opts.onEvent(e, ctx.state);
    for (let i = 0; i < waiters.length; i++) waiters[i]!(results[i] ?? { kind: 'done' });
    const claimed = claimIndex >= 0 ? results[claimIndex] : undefined;
    const got = claimed && claimed.kind === 'claimed' ? claimed.tasks : [];
    // try claiming again only if this claim may have left work behind (it took all it could) or another process changed the run
    ctx.claimable = (claimIndex >= 0 && got.length === free && ctx.state.ready.size > 0) || (claimIndex < 0 && delta.length > 0);
    ctx.emptyClaimSeq = claimIndex >= 0 && got.length === 0 ? ctx.state.seq : -1;
    this.reconcile(ctx);
    for (const c of got) {
      // a crash while starting one attempt of the batch (a fault point) is the process dying: start no more
      if (this.crashed !== undefined) break;
      this.start(ctx, c);
    }
    if (ctx.state.status !== 'running') this.end(ctx);
  }

  /** Phases whose suspended attempt lives in this worker: answered, it is resumed here, not claimed anew. */
  private resumingOf(ctx: RunCtx): ReadonlySet<string> | undefined {
    let out: Set<string> | undefined;
    for (const [name, att] of ctx.attempts) if (att.suspendedOn !== undefined && !att.settled && att.abortReason === undefined) (out ??= new Set()).add(name);
    return out;
  }

  /**
   * A commit failed (the store was unreachable, a conflict): the facts this worker observed itself
   * (outcomes, costs, logs, lost leases) are still true and go in the next commit; dropping an
   * outcome would leave its task running under this worker's lease forever. Commands from callers
   * (gate decisions, answers, cancel, input requests, resumes) are not retried: their callers get
   * the error. Their waiters are taken out of `waiters` so that only those callers hear of it.
   */
  private requeue(ctx: RunCtx, facts: Fact[], waiters: ((r: FactResult | Error) => void)[]): void {
    const again: Fact[] = [];
    const keep: ((r: FactResult | Error) => void)[] = [];
    facts.forEach((f, i) => {
      const w = waiters[i];
      if (f.kind === 'outcome' || f.kind === 'cost' || f.kind === 'log' || f.kind === 'record' || f.kind === 'sibling' || f.kind === 'lease_expired' || f.kind === 'warn') again.push(f);
      else if (w) keep.push(w);
    });
    waiters.length = 0;
    waiters.push(...keep);
    if (again.length === 0) return;
    // ahead of anything that arrived meanwhile, each with a waiter that does nothing (alignment by index)
    ctx.facts.unshift(...again);
    if (ctx.waiters.length > 0) ctx.waiters.unshift(...again.map(() => () => undefined));
  }

  private deadOwnersOf(ctx: RunCtx): ReadonlySet<string> | undefined {
    let out: Set<string> | undefined;
    for (const name of ctx.state.ready) {
      const o = ctx.state.phases.get(name)!.resumable?.owner;
      if (o !== undefined && o !== this.id && this.isOwnerDead(o)) (out ??= new Set()).add(o);
    }
    return out;
  }

  private async reload(ctx: RunCtx): Promise<void> {
    try {
      const events = await this.track(this.store.events(ctx.runId));
      const state = replay(ctx.runId, events);
      attachGraph(state, ctx.plan.dependsOn, ctx.plan.dependents, ctx.plan.assign);
      ctx.state = state;
      if (ctx.events) ctx.events = [...events];
      ctx.claimable = true;
      this.reconcile(ctx);
      if (state.status !== 'running') this.end(ctx);
    } catch (e) {
      this.crash(e);
    }
  }

  /** Local attempts whose task moved on (cancelled, taken over, the run ended) stop; answered ones resume. */
  private reconcile(ctx: RunCtx): void {
    for (const [name, att] of ctx.attempts) {
      const p = ctx.state.phases.get(name);
      if (!p) continue;
      if (att.suspendedOn !== undefined) {
        if (p.status === 'ready' && p.resumable?.attempt === att.attempt && !att.resuming) {
          att.resuming = true;
          void this.push(ctx, { kind: 'resume', phase: name, attempt: att.attempt, worker: this.id, leaseMs: this.leaseMs }).then(
            (r) => this.resumed(ctx, att, r),
            () => {
              // not committed (the store failed): the next reconcile tries again
              att.resuming = false;
            },
          );
        } else if (p.status !== 'suspended_awaiting_input' && !(p.status === 'ready' && p.resumable?.attempt === att.attempt) && !(p.status === 'running' && p.attempts === att.attempt && p.leaseOwner === this.id)) {
          att.abort(new StopSignal(`the task is ${p.status}`));
        }
        continue;
      }
      const mine = (p.status === 'running' || p.status === 'suspended_awaiting_input') && p.attempts === att.attempt && (p.leaseOwner === undefined || p.leaseOwner === this.id);
      if (!mine) att.abort(new StopSignal(p.status === 'cancelled' ? 'the task was cancelled' : `the task is ${p.status}`));
    }
  }

  private resumed(ctx: RunCtx, att: Attempt, r: FactResult): void {
    att.resuming = false;
    if (r.kind !== 'resumed' || !r.ok) {
      att.abort(new StopSignal('another attempt took over after the answer'));
      return;
    }
    const gate = ctx.state.gates.get(att.suspendedOn!);
    att.suspendedOn = undefined;
    this.active++;
    this.ensureHeartbeat();
    if (att.timeoutLeft !== undefined && !att.settled) this.armTimeout(att);
    // a copy: the agent may mutate what it is given, the recorded answer must not change
    att.answer?.(cloneJson(gate?.value ?? null));
  }

  private end(ctx: RunCtx): void {
    if (ctx.ended) return;
    ctx.ended = true;
    for (const a of ctx.attempts.values()) a.abort(new StopSignal(`the run ${ctx.state.status}`));
    ctx.resolve(toResult(ctx.state, ctx.events ?? []));
  }

  // ---- attempts ---------------------------------------------------------------------------------

  private start(ctx: RunCtx, c: Claimed): void {
    const pm = ctx.plan.byName.get(c.phase)!;
    const handler = ctx.handlers[c.agent];
    const own = pm.inputs && pm.inputs.length > 0 ? cloneJson(c.input) : {};
    // copies: an agent that mutates its initial state or answer must not change the model, the run or the log
    const initial = cloneJson(ctx.record.initialState ? { ...ctx.record.initialState, ...pm.initialState } : pm.initialState);
    const att = new Attempt(
      this,
      ctx.runId,
      c.phase,
      c.taskId,
      c.attempt,
      c.agent,
      own,
      initial,
      c.inputResponse === undefined ? undefined : cloneJson(c.inputResponse),
      c.lastCheckpoint === undefined ? undefined : cloneJson(c.lastCheckpoint),
    );
    ctx.attempts.set(c.phase, att);
    this.active++;
    this.ensureHeartbeat();
    // the contract's `resources.estimatedTime` (its upper bound) is the attempt timeout when the phase sets none
    const estimate = estimatedMsOf(contractOfPhase(ctx.plan, c.phase));
    void this.execute(ctx, att, handler, pm.timeoutMs ?? estimate, estimate).catch((e: unknown) => this.crash(e));
  }

  private async execute(ctx: RunCtx, att: Attempt, handler: AgentHandler | undefined, timeoutMs: number | undefined, estimateMs: number | undefined): Promise<void> {
    this.fault('attempt.before-invoke');
    if (this.crashed !== undefined) return;
    if (timeoutMs !== undefined) {
      att.timeoutMs = timeoutMs;
      att.timeoutLeft = timeoutMs;
      this.armTimeout(att);
    }
    // an attempt still running at twice its contract's estimate is worth a warning (when its timeout allows it that long)
    const slow = estimateMs !== undefined && (timeoutMs === undefined || timeoutMs > 2 * estimateMs) ? new AbortController() : undefined;
    if (slow) {
      this.clock.sleep(2 * estimateMs!, slow.signal).then(
        () => {
          if (!att.settled) this.note(ctx, { kind: 'warn', phase: att.phase, attempt: att.attempt, code: 'EstimateExceeded', message: `the attempt has run for ${2 * estimateMs!} ms, twice its contract's estimated time`, details: { estimated_ms: estimateMs! } });
        },
        () => undefined,
      );
    }
    let ok = true;
    let value: unknown;
    try {
      if (!handler) throw new AgentError('UnboundAgent', `no handler is bound for agent ${att.agent}`, {}, false);
      value = await att.invoke(handler);
    } catch (e) {
      ok = false;
      value = e;
    }
    att.settled = true;
    att.timeoutCtl?.abort();
    slow?.abort();
    if (ctx.attempts.get(att.phase) === att) ctx.attempts.delete(att.phase);
    if (att.suspendedOn === undefined) this.active--;
    if (this.crashed !== undefined) return;
    if (att.abortReason instanceof StopSignal) {
      this.kick();
      return; // the task moved on: this attempt's outcome is not wanted
    }
    const outcome = toOutcome(ok, value);
    this.fault('attempt.after-return');
    this.note(ctx, { kind: 'outcome', phase: att.phase, attempt: att.attempt, worker: this.id, outcome });
  }

  /**
   * The phase timeout counts the agent's time, not a human's: it is paused while the attempt waits
   * for input (the input gate has its own timeout) and resumed with what was left.
   */
  private armTimeout(att: Attempt): void {
    const ctl = new AbortController();
    att.timeoutCtl = ctl;
    att.timeoutArmedAt = this.clock.now();
    this.clock.sleep(att.timeoutLeft!, ctl.signal).then(
      () => att.abort(new TimeoutError(att.timeoutMs!)),
      () => undefined,
    );
  }

  private pauseTimeout(att: Attempt): void {
    if (att.timeoutCtl === undefined || att.timeoutLeft === undefined) return;
    att.timeoutCtl.abort();
    att.timeoutCtl = undefined;
    att.timeoutLeft = Math.max(0, att.timeoutLeft - (this.clock.now() - (att.timeoutArmedAt ?? this.clock.now())));
  }

  private ensureHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = this.beat().finally(() => {
      this.heartbeat = undefined;
    });
  }

  /** Renews the leases of running attempts every third of the lease; a lost lease stops its attempt. */
  private async beat(): Promise<void> {
    while (this.crashed === undefined && !this.closed) {
      const held: { runId: string; phase: string; attempt: number }[] = [];
      const byKey = new Map<string, Attempt>();
      for (const ctx of this.runs.values()) {
        for (const a of ctx.attempts.values()) {
          if (a.suspendedOn !== undefined) continue;
          held.push({ runId: ctx.runId, phase: a.phase, attempt: a.attempt });
          byKey.set(`${ctx.runId}\u0000${a.phase}`, a);
        }
      }
      if (held.length === 0 && this.active === 0) return;
      try {
        await this.clock.sleep(this.leaseMs / 3, this.idleCtl.signal);
      } catch {
        return;
      }
      if (held.length === 0) continue;
      try {
        const lost = await this.track(this.store.renewLeases(this.id, this.clock.now() + this.leaseMs, held));
        for (const l of lost) {
          const a = byKey.get(`${l.runId}\u0000${l.phase}`);
          // a task claimed in this very transaction may not show as running in the store yet: only stop attempts that started before
          if (a && !a.settled && a.attempt === l.attempt) {
            const ctx = this.runs.get(l.runId);
            const p = ctx?.state.phases.get(l.phase);
            if (!p || p.status !== 'running' || p.leaseOwner !== this.id || p.attempts !== l.attempt) a.abort(new StopSignal('the lease was lost'));
            // this worker's state says it still holds the task: the state is behind the store (another worker
            // took the task over while renewals failed, or the claim is not visible yet); pull it, and
            // reconcile() stops the attempt if the task moved on
            else if (ctx) this.note(ctx, { kind: 'tick' });
          }
        }
      } catch {
        // the store is unreachable for now: keep running; if it stays so, leases expire and others take over
      }
    }
  }

  // ---- AttemptHost ------------------------------------------------------------------------------

  cost(att: Attempt, usd: number): void {
    const ctx = this.runs.get(att.runId);
    if (ctx) this.note(ctx, { kind: 'cost', phase: att.phase, attempt: att.attempt, usd });
  }

  log(att: Attempt, message: string): void {
    const ctx = this.runs.get(att.runId);
    if (ctx) this.note(ctx, { kind: 'log', phase: att.phase, attempt: att.attempt, message });
  }

  record(att: Attempt, kind: string, data: JsonObject): void {
    const ctx = this.runs.get(att.runId);
    if (!ctx) return;
    // a declared output file the attempt did not produce (agents/provenance.ts) is a warning users see
    if (kind === 'declared_file_missing') {
      const path = typeof data['path'] === 'string' ? data['path'] : '?';
      this.note(ctx, { kind: 'warn', phase: att.phase, attempt: att.attempt, code: 'DeclaredFileMissing', message: `declared output file \`${path}\` was not produced`, details: data });
      return;
    }
    this.note(ctx, { kind: 'record', phase: att.phase, attempt: att.attempt, event: kind, data });
  }

  sibling(att: Attempt, phase: string): JsonObject | undefined {
    const ctx = this.runs.get(att.runId);
    if (!ctx) return undefined;
    const out = ctx.state.phases.get(phase)?.output;
    if (!att.settled) this.note(ctx, { kind: 'sibling', phase: att.phase, attempt: att.attempt, sibling: phase, found: out !== undefined });
    return out === undefined ? undefined : cloneJson(out);
  }

  remainingBudget(att: Attempt): number | undefined {
    const ctx = this.runs.get(att.runId);
    return ctx ? remainingBudget(ctx.plan, ctx.state, att.phase) : undefined;
  }

  async checkpoint(att: Attempt, value: Json): Promise<void> {
    const ctx = this.runs.get(att.runId);
    if (!ctx) throw new StopSignal('the run is gone');
    const r = await this.push(ctx, { kind: 'checkpoint', phase: att.phase, attempt: att.attempt, value });
    if (r.kind !== 'checkpoint' || !r.ok) throw new StopSignal('the attempt no longer holds its task: the checkpoint was not saved');
  }

  async requestInput(att: Attempt, req: InputRequest): Promise<Json> {
    const ctx = this.runs.get(att.runId);
    if (!ctx) throw new StopSignal('the run is gone');
    const index = att.inputIndex++;
    const r = await this.push(ctx, {
      kind: 'request_input',
      phase: att.phase,
      attempt: att.attempt,
      worker: this.id,
      index,
      question: req.question,
      ...(req.choices !== undefined ? { choices: cloneJson(req.choices) } : {}),
      ...(req.schema !== undefined ? { schema: cloneJson(req.schema) } : {}),
      ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}),
    });
    if (r.kind === 'input-refused') throw new StopSignal(r.message);
    if (r.kind !== 'input') throw new AgentError('InvalidInputRequest', 'the input request was not recorded', {}, false);
    if (r.answered) return cloneJson(r.value ?? null);
    // suspended: no slot, no lease, no phase timeout, until the answer comes (reconcile() resumes it)
    att.suspendedOn = r.gateId;
    this.pauseTimeout(att);
    this.active--;
    this.kick();
    return new Promise<Json>((resolve, reject) => {
      att.answer = resolve;
      const prev = att.signal;
      prev.addEventListener('abort', () => reject(prev.reason), { once: true });
    });
  }
}

/** The run's next timer (deadline, gate expiry, escalation): the projection's wake time. */
function nextTimer(state: RunState): number | undefined {
  return wakeAt(state) ?? undefined;
}

/** The decisions threw (a bug): the worker stops loudly instead of retrying the same facts. */
class DecisionError extends BatonError {
  constructor(cause: unknown) {
    super('internal', `the engine's decisions failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

function isFault(e: unknown): boolean {
  return e instanceof BatonError && e.code === 'fault-injected';
}

let seqNo = 0;
export function newWorkerId(): string {
  seqNo++;
  return `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}${seqNo}`;
}

/** A worker id names its host and pid: on this host, a pid that no longer exists is a dead worker. */
export function ownerIsDeadOnThisHost(owner: string): boolean {
  const parts = owner.split(':');
  if (parts.length < 3) return false;
  const [host, pidText] = parts;
  if (host !== hostname()) return false;
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}


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
import { systemClock, type Clock } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import { endRecordedGroup } from '../core/process.js';
import { cloneJson, type Json, type JsonObject } from '../core/json.js';
import type { AgentContract } from '../workflow/contract/model.js';
import type { WorkflowModel } from '../workflow/model.js';
import type { AgentHandler, InputRequest } from './agent.js';
import { AgentError } from './agent.js';
import { Attempt, StopSignal, TimeoutError, toOutcome, type AttemptHost } from './attempt.js';
import { decide, remainingBudget, type Claimed, type Fact, type FactResult } from './decide.js';
import { nextClaim, nextLeaseLook, nextTimer, type Claimant } from './due.js';
import type { RunEvent } from './events.js';
import { contractOfPhase, estimatedMsOf, planOf, withContracts, type Plan } from './plan.js';
import type { LeaseExpectation, RunRecord, RunStore } from './ports.js';
import { buildCommit } from './projection.js';
import { backoff, DecisionError, isFault, newWorkerId, ownerIsDeadOnThisHost, thisHostPrefix, monotonicNow } from './worker-support.js';
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
  /**
   * How long the store may keep failing (unreachable, locked, conflicts) before the worker gives
   * up (default 5 minutes). Meanwhile outcomes wait in memory and commits are retried with backoff.
   */
  storeRetryMs?: number;
  /** Told once when the store starts failing, and once when it answers again (one visible line each). */
  onStoreTrouble?: (t: StoreTrouble) => void;
  /** How long an aborted agent that ignores its signal runs on before a warning event (default 5 s); its slot stays taken until it settles. */
  abortGraceMs?: number;
}

export type StoreTrouble = { state: 'down'; message: string } | { state: 'up'; downMs: number };

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
  /** Phases with an attempt of this worker that was aborted and has not settled yet: no second one meanwhile. */
  busy: Set<string>;
  /** After a failed or fruitless commit: no new commit before this time (backoff, in store time). */
  retryAt: number;
  /** Commits that failed in a row; claim-only transactions that found the run busy, or due work untaken, in a row. */
  failedCommits: number;
  contended: number;
  /** The in-memory state may hold uncommitted decisions (a commit failed): rebuild it from the store first. */
  stale: boolean;
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
  /** The store's clock minus this worker's (PostgreSQL: the database's time), measured at each commit. */
  private offset = 0;
  /** When the store started failing (monotonic ms), if it is failing now. */
  private troubleSince: number | undefined;
  private readonly storeRetryMs: number;
  private readonly abortGraceMs: number;
  /** Next look at the store for expired leases and (serving) new work, in store time. */
  private nextScanAt = 0;
  /** Last check of local owners' processes (monotonic ms). */
  private lastDeadCheck = 0;
  /** Stopping: claim nothing more, hand back what is not finished. */
  private draining = false;

  constructor(private readonly opts: WorkerOptions) {
    this.store = opts.store;
    this.clock = opts.clock ?? systemClock;
    this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? DEFAULT_CONCURRENCY));
    this.leaseMs = Math.max(100, opts.leaseMs ?? DEFAULT_LEASE_MS);
    this.pollMs = Math.max(10, opts.pollMs ?? 1000);
    this.id = opts.workerId ?? newWorkerId();
    this.isOwnerDead = opts.isOwnerDead ?? ownerIsDeadOnThisHost;
    this.storeRetryMs = Math.max(0, opts.storeRetryMs ?? 300_000);
    this.abortGraceMs = Math.max(0, opts.abortGraceMs ?? 5_000);
    this.unregister = this.clock.register?.(() => this.crashed !== undefined || this.closed || (this.io === 0 && (!this.looping || this.idling)));
  }

  /** Counts a store call as I/O in flight. */
  private async track<T>(p: Promise<T>): Promise<T> {
    this.io++;
    try {
      const v = await p;
      this.storeOk();
      return v;
    } finally {
      this.io--;
    }
  }

  /** Now in the store's clock: this worker's clock corrected by the offset measured at the last commit. */
  storeNow(): number {
    return this.clock.now() + this.offset;
  }

  /**
   * Store errors are weather: retried with backoff for `storeRetryMs`, said once (and once when it
   * passes); past that the worker stops with the error.
   */
  private storeTrouble(e: unknown): void {
    if (this.crashed !== undefined || isFault(e) || e instanceof DecisionError) return;
    const t = monotonicNow();
    if (this.troubleSince === undefined) {
      this.troubleSince = t;
      this.opts.onStoreTrouble?.({ state: 'down', message: e instanceof Error ? e.message : String(e) });
    } else if (t - this.troubleSince > this.storeRetryMs) {
      const msg = e instanceof Error ? e.message : String(e);
      this.crash(e instanceof BatonError ? new BatonError(e.code, `the store kept failing for ${Math.round((t - this.troubleSince) / 1000)} s: ${msg}`, { cause: e }) : e);
    }
  }

  private storeOk(): void {
    if (this.troubleSince === undefined) return;
    const downMs = Math.round(monotonicNow() - this.troubleSince);
    this.troubleSince = undefined;
    this.opts.onStoreTrouble?.({ state: 'up', downMs });
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

  /**
   * Stops cleanly (SIGTERM, Ctrl-C of a worker): claims nothing more, lets running attempts finish
   * for up to `graceMs`, then aborts the rest and hands their tasks back (the lease is released in
   * the store, so another worker takes them at once), commits what it holds, and closes.
   */
  async stop(graceMs: number): Promise<void> {
    if (this.closed) return;
    this.draining = true;
    this.kick();
    const end = monotonicNow() + Math.max(0, graceMs);
    while (this.crashed === undefined && !this.closed && this.liveAttempts() > 0 && monotonicNow() < end) await new Promise<void>((r) => setTimeout(r, 20));
    for (const ctx of this.runs.values()) {
      for (const a of [...ctx.attempts.values()]) {
        if (a.settled) continue;
        const p = ctx.state.phases.get(a.phase);
        if (p?.status === 'running' && p.attempts === a.attempt && p.leaseOwner === this.id) ctx.facts.push({ kind: 'lease_expired', phase: a.phase, attempt: a.attempt, owner: this.id, handBack: true });
        a.abort(new StopSignal('the worker stopped'));
      }
    }
    this.kick();
    // the hand-backs and every outcome already in memory are committed before the loop stops
    const flushEnd = monotonicNow() + 10_000;
    while (this.crashed === undefined && !this.closed && [...this.runs.values()].some((c) => !c.ended && (c.facts.length > 0 || c.flushing)) && monotonicNow() < flushEnd) {
      this.ensureLoop();
      await new Promise<void>((r) => setTimeout(r, 10));
    }
    this.close();
  }

  private liveAttempts(): number {
    let n = 0;
    for (const ctx of this.runs.values()) for (const a of ctx.attempts.values()) if (!a.settled && a.suspendedOn === undefined) n++;
    return n;
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
      busy: new Set(),
      retryAt: 0,
      failedCommits: 0,
      contended: 0,
      stale: false,
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

  /**
   * Running tasks whose owner is a process of this host that is gone are taken over at once, not
   * after their lease: the takeover is fenced by the stored lease (owner and attempt), so a task
   * that moved on meanwhile is left alone.
   */
  private takeOverDead(ctx: RunCtx): void {
    for (const name of ctx.state.running) {
      const p = ctx.state.phases.get(name)!;
      const owner = p.leaseOwner;
      if (owner === undefined || owner === this.id) continue;
      if (ctx.facts.some((f) => f.kind === 'lease_expired' && f.phase === name && f.attempt === p.attempts)) continue;
      if (this.isOwnerDead(owner)) ctx.facts.push({ kind: 'lease_expired', phase: name, attempt: p.attempts, owner, dead: true });
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

  /**
   * Level-triggered: every turn asks, for each run, when it is next due (due.ts) and commits the
   * ones due now; then sleeps until the earliest due time, a kick, or a change in the store. No flag
   * remembers a hint, so none can be lost: a due time that passed during a commit is due at the
   * next turn.
   */
  private async loop(): Promise<void> {
    while (!this.closed && this.crashed === undefined) {
      let did = false;
      for (const ctx of [...this.runs.values()]) {
        if (this.crashed !== undefined || this.closed) break;
        if (ctx.ended) continue;
        if (this.dueAt(ctx) <= this.storeNow()) {
          await this.flush(ctx);
          did = true;
        }
      }
      if (this.crashed !== undefined || this.closed) break;
      this.checkDeadOwners();
      const now = this.storeNow();
      if ((this.serving && !did && !this.draining) || now >= this.nextScanAt || now >= this.leaseLookAt()) {
        if (await this.scanWork()) did = true;
      }
      this.evict();
      const live = [...this.runs.values()].some((c) => !c.ended);
      if (!live && !this.serving) break;
      if (!did) await this.idle();
    }
    for (const ctx of this.runs.values()) {
      if (this.crashed !== undefined) ctx.reject(this.crashed);
      else if (!ctx.ended) ctx.reject(new BatonError('internal', `the worker stopped before run ${ctx.runId} ended`));
    }
  }

  private claimant(ctx: RunCtx): Claimant {
    return { worker: this.id, agents: ctx.agents, deadOwners: this.deadOwnersOf(ctx), resuming: this.resumingOf(ctx), busy: ctx.busy };
  }

  /** When the run next needs a commit from this worker (store time): now for pending facts, its timers, its next claim. */
  private dueAt(ctx: RunCtx): number {
    if (ctx.flushing || ctx.ended) return Infinity;
    let t = Infinity;
    if (ctx.facts.length > 0 || ctx.stale) t = -Infinity;
    else {
      const timer = nextTimer(ctx.state);
      if (timer !== null) t = timer;
      if (!this.draining && this.active < this.concurrency) {
        const c = nextClaim(ctx.plan, ctx.state, this.claimant(ctx));
        if (c !== undefined && c < t) t = c;
      }
    }
    return t === Infinity ? t : Math.max(t, ctx.retryAt);
  }

  /** When the first-granted lease of another worker's attempt passes (then the store is asked whether it was renewed). */
  private leaseLookAt(): number {
    let t = Infinity;
    for (const ctx of this.runs.values()) {
      if (ctx.ended) continue;
      const l = nextLeaseLook(ctx.state, this.id);
      if (l !== undefined && l + 1 < t) t = l + 1;
    }
    return Math.max(t, this.nextScanAt);
  }

  /** Waits for a kick (a fact, an attempt's end), the next due time, or a change in the store. */
  private async idle(): Promise<void> {
    let wake = Infinity;
    for (const ctx of this.runs.values()) if (!ctx.ended) wake = Math.min(wake, this.dueAt(ctx));
    wake = Math.min(wake, this.leaseLookAt());
    const now = this.storeNow();
    if (wake <= now) return;
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
    ctl.abort();
    this.idleCtl.signal.removeEventListener('abort', onIdleAbort);
    this.kickFn = undefined;
    if (why === 'store') await this.refresh();
  }

  /** Another process may have committed: runs whose stored seq moved get a look (the NOTIFY payloads say which, when the store knows). */
  private async refresh(): Promise<void> {
    const changed = this.store.takeChanged?.() ?? 'unknown';
    for (const ctx of this.runs.values()) {
      if (ctx.ended || ctx.flushing || ctx.facts.length > 0) continue;
      if (changed !== 'unknown') {
        const seq = changed.get(ctx.runId);
        if (seq !== undefined && seq > ctx.state.seq) ctx.facts.push({ kind: 'tick' });
        continue;
      }
      let rec: RunRecord | undefined;
      try {
        rec = await this.track(this.store.run(ctx.runId));
      } catch (e) {
        this.storeTrouble(e);
        return;
      }
      if (rec && rec.seq !== ctx.state.seq && ctx.facts.length === 0) ctx.facts.push({ kind: 'tick' });
    }
  }

  /** Processes of this host that held a task and are gone: their tasks are taken over now (checked every pollMs, no store call). */
  private checkDeadOwners(): void {
    const t = monotonicNow();
    if (t - this.lastDeadCheck < this.pollMs) return;
    this.lastDeadCheck = t;
    for (const ctx of this.runs.values()) if (!ctx.ended && ctx.state.running.size > 0) this.takeOverDead(ctx);
  }

  /** Runs this worker holds for nothing: a serving worker keeps only the runs it is executing (a gated run costs no memory). */
  private evict(): void {
    for (const ctx of [...this.runs.values()]) {
      if (ctx.driven || ctx.flushing || ctx.attempts.size > 0 || ctx.busy.size > 0 || ctx.facts.length > 0 || ctx.waiters.length > 0) continue;
      if (ctx.ended || (this.serving && !this.runsAnythingSoon(ctx))) this.runs.delete(ctx.runId);
    }
  }

  /** Whether the run has work for this worker in the next moment (kept loaded rather than re-read). */
  private runsAnythingSoon(ctx: RunCtx): boolean {
    const c = nextClaim(ctx.plan, ctx.state, this.claimant(ctx));
    return c !== undefined && c <= this.storeNow() + 1000;
  }

  /** Expired leases and, when serving, runs with due work (store time; tasks held by gates never come). */
  private async scanWork(): Promise<boolean> {
    const now = this.storeNow();
    this.nextScanAt = now + Math.min(this.leaseMs / 3, Math.max(this.pollMs, 1000));
    let hints;
    try {
      hints = await this.track(this.store.findWork({ agents: this.serving ? (this.opts.agents ?? null) : null, now, limit: 100, ownersLike: thisHostPrefix() }));
    } catch (e) {
      this.storeTrouble(e);
      return false;
    }
    let found = false;
    // workers that ask at once get the same oldest hints: each takes them in its own order
    for (let i = hints.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [hints[i], hints[j]] = [hints[j]!, hints[i]!];
    }
    for (const h of hints) {
      if (this.crashed !== undefined || this.closed) break;
      let ctx = this.runs.get(h.runId);
      if (!ctx) {
        if (!this.serving || this.draining) continue;
        if (h.reason === 'ready' && this.active >= this.concurrency) continue;
        if (h.reason === 'lease' && (h.owner === this.id || (h.live && (h.owner === undefined || !this.isOwnerDead(h.owner))))) continue;
        try {
          ctx = await this.load(h.runId, false);
        } catch (e) {
          if (!(e instanceof BatonError && (e.code === 'unknown-run' || e.code === 'invalid-workflow' || e.code === 'store-corrupt' || e.code === 'usage'))) this.storeTrouble(e);
          continue; // a run this worker cannot bind (its workflow or agents): leave it to others
        }
        found = true;
      }
      if (ctx.ended) continue;
      if (h.reason === 'lease') {
        if (h.owner === this.id || h.phase === undefined || h.attempt === undefined || h.owner === undefined) continue;
        if (h.live && !this.isOwnerDead(h.owner)) continue;
        if (ctx.facts.some((f) => f.kind === 'lease_expired' && f.phase === h.phase && f.attempt === h.attempt)) continue;
        ctx.facts.push({ kind: 'lease_expired', phase: h.phase, attempt: h.attempt, owner: h.owner, ...(h.live ? { dead: true } : {}) });
        found = true;
      } else if (ctx.facts.length === 0 && ctx.retryAt <= now) {
        // the store says something is due that this worker's state does not: the state is behind, so a
        // look (a commit reads what it has not seen); what the state already knows the loop does itself
        const knows = h.reason === 'timer' ? (nextTimer(ctx.state) ?? Infinity) <= now : (nextClaim(ctx.plan, ctx.state, this.claimant(ctx)) ?? Infinity) <= now;
        if (!knows) {
          ctx.facts.push({ kind: 'tick' });
          found = true;
        }
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
    if (ctx.stale) {
      // a failed commit left decisions in memory that the store never saw: rebuild from the store first
      const ok = await this.reload(ctx);
      if (!ok || ctx.ended) {
        ctx.flushing = false;
        return;
      }
    }
    const facts = ctx.facts.splice(0);
    const waiters = ctx.waiters.splice(0);
    const free = this.draining || this.closed ? 0 : this.concurrency - this.active;
    const before = this.storeNow();
    if ((nextTimer(ctx.state) ?? Infinity) <= before) {
      // waiters line up with facts by index: the tick gets a waiter of its own
      facts.unshift({ kind: 'tick' });
      if (waiters.length > 0) waiters.unshift(() => undefined);
    }
    let claimIndex = -1;
    if (free > 0) {
      claimIndex = facts.length;
      facts.push({ kind: 'claim', max: free, leaseMs: this.leaseMs, ...this.claimant(ctx) });
    }
    let delta: RunEvent[] = [];
    let made: RunEvent[] = [];
    let results: FactResult[] = [];
    // a transaction that only claims does not queue behind another worker's commit on the same run:
    // that worker claims for itself as it commits, and its commit wakes this one (graphile-worker's SKIP LOCKED, per run)
    const onlyClaims = waiters.length === 0 && facts.every((f) => f.kind === 'claim' || f.kind === 'tick');
    try {
      this.fault('flush.before-commit');
      const r = await this.track(
        this.store.transact(
          ctx.runId,
          ctx.state.seq,
          (d, storeNow) => {
            // a worker that crashed while this transaction waited for its lock writes nothing more (a dead process commits nothing)
            if (this.crashed !== undefined) throw this.crashed instanceof Error ? this.crashed : new BatonError('fault-injected', 'the worker crashed');
            // the time is read now, under the run's lock (the database's clock when the store has one), never before the commit
            const now = storeNow ?? this.clock.now();
            if (storeNow !== undefined) this.offset = storeNow - this.clock.now();
            try {
              delta = d;
              for (const e of d) applyEvent(ctx.state, e);
              const out = decide(ctx.plan, ctx.state, facts, { now, initialState: ctx.record.initialState ?? undefined });
              made = out.events;
              results = out.results;
              return { commit: out.events.length > 0 ? buildCommit(ctx.plan, ctx.state, out.events, out.touched, now, fences(facts, out.events, now)) : null, value: null };
            } catch (err) {
              // a bug in the decisions or a log this engine cannot read, not a store failure: retrying would fail forever
              throw new DecisionError(err);
            }
          },
          onlyClaims ? { skipIfBusy: true } : undefined,
        ),
      );
      if (!r.ok && r.reason === 'busy') {
        // another transaction holds the run: back off a little (its commit's NOTIFY may wake this worker sooner); never spin
        ctx.flushing = false;
        ctx.contended++;
        ctx.retryAt = this.storeNow() + backoff(ctx.contended, 5, 500);
        ctx.facts.unshift(...facts.filter((f) => f.kind !== 'claim' && f.kind !== 'tick'));
        return;
      }
      if (!r.ok) {
        // a takeover found the lease renewed (or moved on): the lease is alive, so that fact is dropped; the rest go again
        ctx.flushing = false;
        const failed = r.failed;
        this.requeue(ctx, facts, waiters, (f) => f.kind === 'lease_expired' && f.phase === failed.phase && f.attempt === failed.attempt);
        for (const w of waiters) w(new BatonError('store', `a lease changed hands during the commit (${failed.phase})`));
        ctx.stale = true;
        return;
      }
      this.fault('flush.after-commit');
    } catch (e) {
      ctx.flushing = false;
      if (this.crashed !== undefined) return;
      if (e instanceof DecisionError) {
        for (const w of waiters) w(e);
        this.crash(e);
        return;
      }
      if (isFault(e)) {
        for (const w of waiters) w(e instanceof Error ? e : new Error(String(e)));
        this.crash(e);
        return;
      }
      // the store failed (unreachable, locked, a conflict): what this worker observed itself waits in
      // memory and goes again after a backoff (100 ms doubling to 5 s, with jitter); the in-memory state
      // may hold decisions that were not committed, so it is rebuilt from the store first
      this.requeue(ctx, facts, waiters);
      ctx.failedCommits++;
      ctx.retryAt = this.storeNow() + backoff(ctx.failedCommits, 100, 5000);
      ctx.stale = true;
      for (const w of waiters) w(e instanceof Error ? e : new Error(String(e)));
      this.storeTrouble(e);
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
    // due work that this commit did not take (the store's clock behind this worker's estimate, say):
    // back off a little rather than ask again at once; anything that changes the run clears it
    if (all.length === 0 && got.length === 0 && ctx.facts.length === 0 && this.dueAt(ctx) <= this.storeNow()) {
      ctx.contended++;
      ctx.retryAt = this.storeNow() + backoff(ctx.contended, 1, 250);
    } else ctx.contended = 0;
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
  private requeue(ctx: RunCtx, facts: Fact[], waiters: ((r: FactResult | Error) => void)[], drop?: (f: Fact) => boolean): void {
    const again: Fact[] = [];
    const keep: ((r: FactResult | Error) => void)[] = [];
    facts.forEach((f, i) => {
      const w = waiters[i];
      if (drop?.(f)) return;
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

  /** Rebuilds the run's state from the store; false when the store failed (the run stays stale, retried later). */
  private async reload(ctx: RunCtx): Promise<boolean> {
    let events: RunEvent[];
    try {
      events = await this.track(this.store.events(ctx.runId));
    } catch (e) {
      ctx.failedCommits++;
      ctx.retryAt = this.storeNow() + backoff(ctx.failedCommits, 100, 5000);
      this.storeTrouble(e);
      return false;
    }
    const state = replay(ctx.runId, events);
    attachGraph(state, ctx.plan.dependsOn, ctx.plan.dependents, ctx.plan.assign);
    ctx.state = state;
    ctx.stale = false;
    if (ctx.events) ctx.events = [...events];
    this.reconcile(ctx);
    if (state.status !== 'running') this.end(ctx);
    return true;
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
    // an earlier attempt's agent process that outlived its worker (kill -9 of Baton) ends before this one starts
    const orphan = ctx.state.phases.get(c.phase)?.process;
    if (orphan && orphan.attempt < c.attempt) endRecordedGroup(orphan);
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
    if (att.suspendedOn === undefined) this.releaseSlot(ctx, att);
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
   * An attempt's slot frees when its agent's code has settled, not when the attempt was aborted: an
   * agent that ignores its signal still runs, so it still counts against concurrency, and no second
   * attempt of its task starts in this process while it runs (for `abortGraceMs`; past that a
   * `task.warning AbortIgnored` says so and the task may go on, the slot still taken).
   */
  private releaseSlot(ctx: RunCtx, att: Attempt): void {
    if (att.handlerDone) {
      this.active--;
      return;
    }
    ctx.busy.add(att.phase);
    const grace = new AbortController();
    const free = (): void => {
      if (ctx.busy.has(att.phase) && ![...ctx.attempts.values()].some((a) => a.phase === att.phase && a !== att)) ctx.busy.delete(att.phase);
    };
    this.clock.sleep(this.abortGraceMs, grace.signal).then(
      () => {
        if (att.handlerDone || this.crashed !== undefined) return;
        this.note(ctx, { kind: 'warn', phase: att.phase, attempt: att.attempt, code: 'AbortIgnored', message: `the agent ignored its abort signal for ${this.abortGraceMs} ms and is still running; its slot stays taken until it returns`, details: { grace_ms: this.abortGraceMs } });
        free();
      },
      () => undefined,
    );
    void att.finished.then(() => {
      grace.abort();
      this.active--;
      free();
      this.kick();
    });
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
        // in the store's clock (the database's on PostgreSQL), like every lease comparison
        const lost = await this.track(this.store.renewLeases(this.id, this.storeNow() + this.leaseMs, held));
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
      } catch (e) {
        // the store is unreachable for now: keep running; if it stays so, leases expire and others take over
        this.storeTrouble(e);
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

/**
 * The lease conditions a commit carries (fencing): a takeover of another worker's attempt holds only
 * if the stored lease is still that attempt's and has expired by the store's clock (or its owner is
 * known dead); a hand-back only if this worker still holds the lease.
 */
function fences(facts: readonly Fact[], made: readonly RunEvent[], now: number): LeaseExpectation[] | undefined {
  let out: LeaseExpectation[] | undefined;
  for (const e of made) {
    if (e.type !== 'task.lease_expired') continue;
    const f = facts.find((x): x is Extract<Fact, { kind: 'lease_expired' }> => x.kind === 'lease_expired' && x.phase === e.phase && x.attempt === e.attempt);
    if (!f) continue;
    (out ??= []).push({ phase: e.phase, attempt: e.attempt, owner: f.owner, ...(f.dead || f.handBack ? {} : { expiredBefore: now }) });
  }
  return out;
}
export { newWorkerId, ownerIsDeadOnThisHost } from './worker-support.js';

/**
 * The worker's foundation: its options and per-run context, its fields, the store-trouble
 * handling, faults and crashes, how facts reach a run, and loading a run from the store. The layers
 * above add output files and a run's end (worker-files.ts), the commits (worker-commits.ts), the
 * attempts (worker-attempts.ts) and the loop with the public API (worker.ts, which keeps the
 * durability invariants).
 */
import { systemClock, type Clock } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import { BoundedMap } from '../core/lru.js';
import type { AgentContract } from '../workflow/contract/model.js';
import type { WorkflowModel } from '../workflow/model.js';
import type { AgentHandler } from './agent.js';
import { StopSignal, type Attempt } from './attempt.js';
import type { Fact, FactResult } from './decide.js';
import type { HeldFiles } from './files.js';
import type { RunFiles } from './files-leftovers.js';
import type { RunEvent } from './events.js';
import { nextAgentOf } from './due.js';
import { planOf, withContracts, type Plan } from './plan.js';
import type { RunRecord, RunStore } from './ports.js';
import type { Telemetry } from './telemetry.js';
import { DecisionError, isFault, newWorkerId, ownerIsDeadOnThisHost, monotonicNow } from './worker-support.js';
import { applyEvent, attachGraph, replay, startCompacting, type RunState } from './state.js';
import { toResult, type RunResult } from './result.js';
import { loadState, snapshotDue, snapshotOf } from './snapshot.js';

export const DEFAULT_CONCURRENCY = 32;
export const DEFAULT_LEASE_MS = 30_000;
/** Runs a serving worker keeps parked (their state, to take up again without replaying their log). */
export const PARKED_RUNS = 64;
/** Runs created here and not yet taken up, kept as stored (WorkerBase.prime). */
const PRIMED_RUNS = 1024;

/**
 * Named points at the commit boundaries where tests crash the worker. `files.before-sync` (a
 * completion with output files committed, its files not synced yet) is reached only by phases that
 * declare output files, so it is not among the FAULT_POINTS every run reaches.
 */
export type FaultPoint = 'run.created' | 'flush.before-commit' | 'flush.after-commit' | 'attempt.before-invoke' | 'attempt.after-return' | 'files.before-sync';
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
  /** The run's scratch roots left by processes that died (a workflow with AIP-16 files): files-leftovers.ts. */
  files?: RunFiles;
  /** Frees what the handlers hold for this run (an LLM agent's MCP servers) once the run has ended here. */
  release?: (() => Promise<void>) | undefined;
}

/** What an engine and a bare worker are tuned with alike (EngineOptions takes these too). */
export interface WorkerTuning {
  /**
   * Time for retries, timeouts, leases and gate expiries (default the system's); tests inject a manual one
   * (`ManualClock`). A SQLite or PostgreSQL store decides in its own clock unless opened with
   * `databaseClock: false`: a test that moves time by hand opens it so.
   */
  clock?: Clock | undefined;
  /** This worker's id, unique among live workers (default `host:pid:random`); leases name it. */
  workerId?: string | undefined;
  /** Attempts running at once (default 32). */
  concurrency?: number | undefined;
  /** Lease of a claimed attempt; renewed every third of it while the attempt runs (default 30 s). */
  leaseMs?: number | undefined;
  /** How often an idle worker looks at the store for other processes' changes (default 1 s; PostgreSQL wakes it by NOTIFY). */
  pollMs?: number | undefined;
  /** Whether the worker holding a lease is known to be dead (default: on this host, its pid is gone), so its tasks are taken over at once. */
  isOwnerDead?: ((owner: string) => boolean) | undefined;
  /** Testing aid: crash the engine at named fault points (docs/durability.md). */
  faults?: FaultPlan | undefined;
  /** Every committed event of every run the worker drives, with the run's state after it (progress views, logs). */
  onEvent?: ((event: RunEvent, state: RunState) => void) | undefined;
  /**
   * A held run's state moved on (its commit, or others' events read back): the engine's run handles
   * that watch it read the store then, instead of at every commit of every run.
   */
  onAdvance?: ((runId: string) => void) | undefined;
  /**
   * Traces (docs/telemetry.md): run, attempt, model and tool spans, told every committed event; attempts
   * get `ctx.trace`. `@baton-run/baton/otel` makes one on OpenTelemetry.
   */
  telemetry?: Telemetry | undefined;
  /**
   * How long the store may keep failing (unreachable, locked, conflicts) before the worker gives
   * up (default 5 minutes). Meanwhile outcomes wait in memory and commits are retried with backoff.
   */
  storeRetryMs?: number | undefined;
  /** Told once when the store starts failing, and once when it answers again (one visible line each). */
  onStoreTrouble?: ((t: StoreTrouble) => void) | undefined;
  /** How long an aborted agent that ignores its signal runs on before a warning event (default 5 s); its slot stays taken until it settles. */
  abortGraceMs?: number | undefined;
  /**
   * A snapshot of a run's state is stored once this many events (and at least as many as the run has
   * tasks) were committed since the last one (default 1,000; 0: never). Runs load from their latest
   * snapshot plus the events after it, not by replaying their whole log.
   */
  snapshotEvery?: number | undefined;
}

export interface WorkerOptions extends WorkerTuning {
  store: RunStore;
  /** Loads a run's workflow and binds its agents (the composition root knows how). */
  bind: (run: RunRecord) => Promise<BoundRun>;
  /** When serving: the agent ids this worker binds (it asks the store only for their tasks). Default: any. */
  agents?: readonly string[] | undefined;
}

/** How long store failures are retried before a worker gives up (`storeRetryMs`): 5 minutes. */
export const DEFAULT_STORE_RETRY_MS = 300_000;

export type StoreTrouble = { state: 'down'; message: string } | { state: 'up'; downMs: number };

export interface RunCtx {
  runId: string;
  record: RunRecord;
  plan: Plan;
  handlers: Readonly<Record<string, AgentHandler>>;
  agents: ReadonlySet<string>;
  /** BoundRun.release, called once when the run ends here (worker-files.ts end()). */
  release: (() => Promise<void>) | undefined;
  state: RunState;
  /** Every event of the run, kept for the result when the worker drives it. */
  events: RunEvent[] | undefined;
  facts: Fact[];
  /** The facts of the commit under way until its decisions are in `state` (then they are, or back in `facts`): see pendingCosts. */
  deciding?: readonly Fact[] | undefined;
  waiters: ((r: FactResult | Error) => void)[];
  attempts: Map<string, Attempt>;
  /** Phases with an attempt of this worker that was aborted and has not settled yet: no second one meanwhile. */
  busy: Set<string>;
  /**
   * After a failed or fruitless commit: no new commit before this time. A backoff is a duration, so it is
   * kept on the clock's monotonic time (`mono()`), never the store's or the wall clock: a wall clock that
   * steps back must not stretch it.
   */
  retryAt: number;
  /** No fast-path commit (commitMany) before this time (store time): the run had a conflict, another process works on it. */
  fastOffUntil: number;
  /** The share of the free slots the worker's turn gave the run (dueRuns): the most its commit in that turn may claim. */
  slotCap: number;
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
  /** Seq of the latest snapshot stored (or loaded) for the run, as far as this worker knows. */
  snapshotSeq: number;
  /** Seq of the last event told to the observers (`onEvent`, telemetry): a rebuild tells what came since. */
  toldSeq: number;
  /**
   * A commit whose answer never came (the connection dropped while the store committed): the events
   * it made, the facts it carried, which wait in `facts` again, and what was decided for each. The
   * rebuild from the store finds out whether it landed; if it did, those facts are not decided a second
   * time, and the waiters among them get what was decided.
   */
  doubt?: { events: readonly RunEvent[]; facts: readonly Fact[]; decided: ReadonlyMap<Fact, FactResult> } | undefined;
  /** What the loop's looks need from the ready set, kept while the state stays at one seq (readyFacts). */
  scan?: ReadyScan | undefined;
  /** The run's leftover scratch roots, when its workflow declares files. */
  files: RunFiles | undefined;
  /** Outcome facts whose attempt's output files wait for the decision on it (worker-commits.ts, settleFiles). */
  held: Map<Fact, HeldFiles>;
  /**
   * Files being synced (accepted completions), discarded or tidied: the run's attempts start, and its
   * result is given, only once they are done, so a phase never reads a file an upstream completion
   * recorded before it is in the workspace.
   */
  filesWork: Set<Promise<void>>;
  /** The run ended and waits for its files before it is put down (end()). */
  ending: boolean;
}

/**
 * A summary of a run's ready tasks for the worker's looks at every turn (fast path, dead owners):
 * one pass over the ready set per state seq, however many looks, so a wide fan-out does not cost a
 * pass over thousands of ready tasks for each commit.
 */
export interface ReadyScan extends ReadyFacts {
  state: RunState;
  seq: number;
}

/** What a ReadyScan says. */
export interface ReadyFacts {
  /** The latest `notBefore` among the ready tasks (-Infinity: none). */
  maxNotBefore: number;
  /** A ready task holds an answered attempt (its owner may continue it). */
  anyResumable: boolean;
  /** A ready task's next agent is behind an access gate. */
  anyAccess: boolean;
  /** Owners of answered (or still settling) attempts of ready tasks, other than this worker. */
  resumableOwners: ReadonlySet<string> | undefined;
}

/** readyFacts' answer when no ready task waits for a time, an owner or an access gate. */
const QUIET: ReadyFacts = { maxNotBefore: -Infinity, anyResumable: false, anyAccess: false, resumableOwners: undefined };

export abstract class WorkerBase {
  readonly id: string;
  protected readonly store: RunStore;
  protected readonly clock: Clock;
  protected readonly concurrency: number;
  protected readonly leaseMs: number;
  protected readonly pollMs: number;
  protected readonly isOwnerDead: (owner: string) => boolean;
  protected readonly runs = new Map<string, RunCtx>();
  protected active = 0;
  protected crashed: unknown;
  protected closed = false;
  protected looping = false;
  protected readonly idleCtl = new AbortController();
  /** The grace timers of aborted attempts still running (releaseSlot), ended when the worker stops. */
  protected readonly graces = new Set<AbortController>();
  private gracesHeard = false;
  private faultHits = 0;
  /** Store calls in flight, and whether the loop waits in idle(): a test clock moves only when both say quiet. */
  protected io = 0;
  protected idling = false;
  protected readonly unregister: (() => void) | undefined;
  /** The store's clock minus this worker's (PostgreSQL: the database's time), measured at each commit. */
  protected offset = 0;
  /** The store's clock minus the monotonic clock, once measured (stores with a clock of their own). */
  protected monoOffset: number | undefined;
  /** The store's clock asked (storeTime), until it answers. */
  private clockAsk: Promise<void> | undefined;
  /** When the store started failing (monotonic ms), if it is failing now. */
  private troubleSince: number | undefined;
  /**
   * The trouble is lock contention (SQLite's `store-locked`: another process holds the write lock): reads
   * go on succeeding through it, so only a write that lands ends it. Else one line pair became many, a
   * "available again" after every successful look between two refused commits.
   */
  private troubleLocked = false;
  /**
   * Set when a look at the store (scanWork) failed for another reason than lock contention: the store is
   * away, not only refusing some writes. Cleared by the first store call that succeeds.
   */
  protected storeAway = false;
  private readonly storeRetryMs: number;
  protected readonly abortGraceMs: number;
  protected readonly snapshotEvery: number;
  /** Stopping: claim nothing more, hand back what is not finished. */
  protected draining = false;

  constructor(protected readonly opts: WorkerOptions) {
    this.store = opts.store;
    this.clock = opts.clock ?? systemClock;
    this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? DEFAULT_CONCURRENCY));
    this.leaseMs = Math.max(100, Math.round(opts.leaseMs ?? DEFAULT_LEASE_MS));
    this.pollMs = Math.max(10, opts.pollMs ?? 1000);
    this.id = opts.workerId ?? newWorkerId();
    this.isOwnerDead = opts.isOwnerDead ?? ownerIsDeadOnThisHost;
    this.storeRetryMs = Math.max(0, opts.storeRetryMs ?? DEFAULT_STORE_RETRY_MS);
    this.abortGraceMs = Math.max(0, opts.abortGraceMs ?? 5_000);
    this.snapshotEvery = Math.max(0, opts.snapshotEvery ?? 1_000);
    this.unregister = this.clock.register?.(() => this.crashed !== undefined || this.closed || (this.io === 0 && (!this.looping || this.idling)));
  }

  /** Counts a store call as I/O in flight; `write`: the call writes (a commit, a lease renewal). */
  protected async track<T>(p: Promise<T>, write = false): Promise<T> {
    this.io++;
    try {
      const v = await p;
      this.storeOk(write);
      return v;
    } finally {
      this.io--;
    }
  }

  /** Keeps an aborted attempt's grace timer until it settles; a worker that stopped (or stops) ends it at once. */
  protected graceOf(grace: AbortController): void {
    if (this.idleCtl.signal.aborted) return grace.abort();
    if (!this.gracesHeard) {
      this.gracesHeard = true;
      this.idleCtl.signal.addEventListener('abort', () => {
        for (const g of this.graces) g.abort();
        this.graces.clear();
      }, { once: true });
    }
    this.graces.add(grace);
  }

  /** The clock's monotonic time (durations: backoffs), in the time of its sleeps. */
  mono(): number {
    return this.clock.monotonic ? this.clock.monotonic() : this.clock.now();
  }

  /** Now in the store's clock: this worker's clock corrected by the offset measured at the last commit. */
  storeNow(): number {
    return this.clock.now() + this.offset;
  }

  /**
   * The store's clock read at a commit (PostgreSQL's clock_timestamp()): kept as offsets from this
   * worker's clock and from the monotonic clock.
   */
  protected storeClockAt(storeNow: number): void {
    this.offset = storeNow - this.clock.now();
    this.monoOffset = storeNow - monotonicNow();
  }

  /**
   * Now in the store's clock, asked of the store while no commit has told it (one question however many
   * callers wait; a store that does not answer leaves this worker's clock, and the caller's own store
   * call then rides out the trouble). A run is stamped in it when it is created here (its start, its
   * deadline, a gate's expiry), and an idle worker looks for due timers in it: with its own clock a
   * minute behind, it found a stored deadline or gate expiry only a minute late, and one a minute ahead
   * stamped its runs' deadlines a minute late (or, behind, already passed: `--timeout 30` failed at once).
   */
  async storeTime(): Promise<number> {
    if (this.store.hasClock === true && this.monoOffset === undefined && this.store.clockNow) {
      this.clockAsk ??= this.store
        .clockNow()
        .then(
          (n) => {
            if (this.monoOffset === undefined) this.storeClockAt(n);
          },
          () => undefined,
        )
        .finally(() => (this.clockAsk = undefined));
      await this.clockAsk;
    }
    return this.fastNow();
  }

  /**
   * Now in the store's clock for a decision made without reading the store (the fast path,
   * commitMany): from the monotonic clock when the store has a clock of its own, so that a step of
   * this machine's clock does not move it; else this worker's clock, which is the store's.
   */
  protected fastNow(): number {
    return this.monoOffset !== undefined ? Math.round(monotonicNow() + this.monoOffset) : this.storeNow();
  }

  /**
   * Store errors are weather: retried with backoff for `storeRetryMs`, said once (and once when it
   * passes); past that the worker stops with the error.
   */
  protected storeTrouble(e: unknown): void {
    if (this.crashed !== undefined || isFault(e) || e instanceof DecisionError) return;
    const t = monotonicNow();
    if (e instanceof BatonError && e.code === 'store-locked') this.troubleLocked = true;
    if (this.troubleSince === undefined) {
      this.troubleSince = t;
      this.opts.onStoreTrouble?.({ state: 'down', message: e instanceof Error ? e.message : String(e) });
    } else if (t - this.troubleSince > this.storeRetryMs) {
      const msg = e instanceof Error ? e.message : String(e);
      this.crash(e instanceof BatonError ? new BatonError(e.code, `the store kept failing for ${Math.round((t - this.troubleSince) / 1000)} s: ${msg}`, { cause: e }) : e);
    }
  }

  /** A store call succeeded (`write`: it wrote): trouble that was said is over (track). */
  protected storeOk(write: boolean): void {
    if (this.troubleSince !== undefined && (write || !this.troubleLocked)) {
      const downMs = Math.round(monotonicNow() - this.troubleSince);
      this.troubleSince = undefined;
      this.troubleLocked = false;
      this.opts.onStoreTrouble?.({ state: 'up', downMs });
    }
    // the store answers again after it was away (its looks failed too): commits waiting out a backoff for
    // its failure go now (within a few ms of jitter, so that many workers do not all come back at once), not
    // after up to 5 s more. Their count of failures stays: if the store fails again, the backoff goes on
    // growing from where it was. A store that refused commits while it answered looks (lock contention,
    // a write that fails) keeps the backoff: it is what paces those commits.
    if (!this.storeAway) return;
    this.storeAway = false;
    const now = this.mono();
    for (const ctx of this.runs.values()) {
      if (ctx.failedCommits > 0 && ctx.retryAt > now) ctx.retryAt = now + Math.random() * 20;
    }
    this.kick();
  }

  // ---- faults and facts ---------------------------------------------------------------------------

  protected fault(at: FaultPoint): void {
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
  /** Told when the worker crashes (serve() rejects with the error: a serving process must not live on doing nothing). */
  protected readonly onCrash: ((e: unknown) => void)[] = [];

  protected crash(e: unknown): void {
    if (this.crashed !== undefined) return;
    this.crashed = e;
    for (const f of this.onCrash.splice(0)) f(e);
    this.idleCtl.abort();
    for (const ctx of this.runs.values()) {
      for (const a of ctx.attempts.values()) a.abort(new StopSignal('the worker crashed', true));
      ctx.reject(e);
      for (const w of ctx.waiters.splice(0)) w(e instanceof Error ? e : new Error(String(e)));
    }
    this.kick();
  }

  protected push(ctx: RunCtx, fact: Fact): Promise<FactResult> {
    if (this.crashed !== undefined) return Promise.reject(this.crashed);
    return new Promise<FactResult>((resolve, reject) => {
      ctx.facts.push(fact);
      // waiters line up with facts by index
      while (ctx.waiters.length < ctx.facts.length - 1) ctx.waiters.push(() => undefined);
      ctx.waiters.push((r) => (r instanceof Error ? reject(r) : resolve(r)));
      this.ensureLoop();
    });
  }

  protected note(ctx: RunCtx, fact: Fact): void {
    if (ctx.ended || this.crashed !== undefined) return;
    ctx.facts.push(fact);
    this.kick();
  }

  /** The ready-set summary of the run's state as it is now (computed once per seq). */
  protected readyFacts(ctx: RunCtx): ReadyFacts {
    const state = ctx.state;
    // no ready task waits for anything (a chain's every commit): nothing to say, and no summary made
    if (state.readyWaits.size === 0 && ctx.plan.accessAgents.size === 0) return QUIET;
    const have = ctx.scan;
    if (have !== undefined && have.state === state && have.seq === state.seq) return have;
    let maxNotBefore = -Infinity;
    let anyResumable = false;
    let anyAccess = false;
    let owners: Set<string> | undefined;
    const access = ctx.plan.accessAgents;
    // only ready tasks with a not-before time or an answered attempt can say anything here, unless an agent is behind an access gate
    for (const name of access.size > 0 ? state.ready : state.readyWaits) {
      const p = state.phases.get(name)!;
      if (p.notBefore !== undefined && p.notBefore > maxNotBefore) maxNotBefore = p.notBefore;
      const r = p.resumable;
      if (r !== undefined) {
        anyResumable = true;
        if (r.owner !== undefined && r.owner !== this.id) (owners ??= new Set()).add(r.owner);
      }
      // a task held for the worker whose aborted attempt still runs: a due time like a retry's, and an owner to check
      const s = p.settling;
      if (s !== undefined && s.owner !== this.id) {
        if (s.until > maxNotBefore) maxNotBefore = s.until;
        (owners ??= new Set()).add(s.owner);
      }
      if (access.size > 0 && !anyAccess && access.has(nextAgentOf(ctx.plan, state, name))) anyAccess = true;
    }
    const scan: ReadyScan = { state, seq: state.seq, maxNotBefore, anyResumable, anyAccess, resumableOwners: owners };
    ctx.scan = scan;
    return scan;
  }

  // ---- loading ----------------------------------------------------------------------------------

  /** Loads in flight, by run: a second caller (drive() beside the serving loop) shares the first one's, never a second ctx. */
  private readonly loads = new Map<string, Promise<RunCtx>>();
  /**
   * Runs being loaded, and the highest seq another process was seen committing meanwhile (refresh):
   * a change announced while the reads were in flight is looked at once the run is held, not lost.
   */
  protected readonly loadingSeen = new Map<string, number>();

  protected load(runId: string, keepEvents: boolean): Promise<RunCtx> {
    const have = this.runs.get(runId);
    if (have) return Promise.resolve(have);
    const inFlight = this.loads.get(runId);
    if (inFlight) return inFlight;
    this.loadingSeen.set(runId, 0);
    const p = this.track(this.loadRun(runId, keepEvents))
      .then((ctx) => {
        const seen = this.loadingSeen.get(runId) ?? 0;
        if (seen > ctx.state.seq && !ctx.ended && !ctx.facts.some((f) => f.kind === 'tick')) ctx.facts.push({ kind: 'tick' });
        return ctx;
      })
      .finally(() => {
        this.loads.delete(runId);
        this.loadingSeen.delete(runId);
      });
    this.loads.set(runId, p);
    return p;
  }

  /**
   * Runs a serving worker put down (nothing to do for it now), newest last, at most PARKED_RUNS: taken
   * up again from the state it had plus the events after it, never by replaying the whole log.
   */
  protected readonly parked = new Map<string, RunCtx>();

  /**
   * Runs this process just created and is about to drive (engine.run): their record, state and log as
   * stored, so that taking them up reads nothing back. Taken by the first load; at most PRIMED_RUNS
   * (a run created and never driven here is forgotten, and loaded from the store if it ever is).
   */
  private readonly primed = new BoundedMap<string, { record: RunRecord; state: RunState; events: RunEvent[] }>(PRIMED_RUNS);

  /** A run just created here, as stored (start.ts): its first load takes it from memory. */
  prime(runId: string, created: { record: RunRecord; state: RunState; events: RunEvent[] }): void {
    if (!this.runs.has(runId)) this.primed.set(runId, created);
  }

  protected park(ctx: RunCtx): void {
    this.runs.delete(ctx.runId);
    if (ctx.ended) return;
    this.parked.delete(ctx.runId);
    this.parked.set(ctx.runId, ctx);
    if (this.parked.size > PARKED_RUNS) this.parked.delete(this.parked.keys().next().value!);
  }

  private async loadRun(runId: string, keepEvents: boolean): Promise<RunCtx> {
    const have = this.runs.get(runId);
    if (have) return have;
    const parked = keepEvents ? undefined : this.parked.get(runId);
    if (parked) {
      this.parked.delete(runId);
      const after = await this.store.events(runId, parked.state.seq);
      const again = this.runs.get(runId);
      if (again) return again;
      for (const e of after) applyEvent(parked.state, e);
      parked.toldSeq = parked.state.seq;
      if (after.length > 0) this.opts.onAdvance?.(runId);
      parked.ended = parked.state.status !== 'running';
      parked.retryAt = 0;
      parked.contended = 0;
      this.runs.set(runId, parked);
      if (parked.ended) parked.resolve(toResult(parked.state, []));
      else {
        this.takeOverDead(parked);
        this.handBackUnstarted(parked);
      }
      return parked;
    }
    // both reads at once (one round trip on a pipelined store); the record's fields a run keeps never change.
    // A caller that wants every event (the result of a driven run) reads the whole log; else the latest
    // snapshot and the events after it. A run this process just created is as it stored it: nothing to read.
    const primed = this.primed.get(runId);
    if (primed) this.primed.delete(runId);
    const [record, read] = primed
      ? [primed.record, { state: primed.state, events: primed.events, snapshotSeq: 0 }]
      : await Promise.all([this.store.run(runId), this.readState(runId, keepEvents)]);
    if (!record) throw new BatonError('unknown-run', `no run ${runId} in ${this.store.location}`);
    const bound = await this.opts.bind(record);
    const again = this.runs.get(runId);
    if (again) return again;
    const { state, events, snapshotSeq } = read;
    const plan = bound.contracts ? withContracts(planOf(bound.model), bound.contracts) : planOf(bound.model);
    // a run just created here has the graph it was started with (start.ts), its counters kept by every
    // event since: counted again, they come out the same (a walk over every phase of the run)
    const g = state.graph;
    if (!primed || g === undefined || g.dependents !== plan.dependents || g.assign !== plan.assign) attachGraph(state, plan.dependsOn, plan.dependents, plan.assign);
    // a run whose log is not kept keeps no settled fan-out item whole either (memory flat in the item count)
    if (!keepEvents) startCompacting(state);
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
      release: bound.release,
      state,
      events: keepEvents ? [...events] : undefined,
      facts: [],
      waiters: [],
      attempts: new Map(),
      busy: new Set(),
      retryAt: 0,
      fastOffUntil: 0,
      slotCap: 0,
      failedCommits: 0,
      contended: 0,
      stale: false,
      ended: state.status !== 'running',
      flushing: false,
      done,
      resolve,
      reject,
      driven: false,
      snapshotSeq,
      toldSeq: state.seq,
      files: bound.files,
      held: new Map(),
      filesWork: new Set(),
      ending: false,
    };
    this.runs.set(runId, ctx);
    if (ctx.ended) {
      // a run that ended elsewhere: its roots still on this host go (end() tidies them) before it is given
      if (ctx.files && !primed) {
        ctx.ended = false;
        this.end(ctx);
      } else resolve(toResult(state, ctx.events ?? []));
    } else {
      // roots a process that died left (a run just created here has none)
      if (!primed) this.tidyFiles(ctx);
      this.takeOverDead(ctx);
      this.handBackUnstarted(ctx);
    }
    return ctx;
  }

  /**
   * A run's state as stored: its latest snapshot plus the events after it (`events` then holds only
   * those), or the whole log replayed (`all`, a store without snapshots, or a snapshot that cannot be
   * read).
   */
  protected async readState(runId: string, all: boolean): Promise<{ state: RunState; events: RunEvent[]; snapshotSeq: number }> {
    if (!all && this.snapshotEvery > 0) return loadState(this.store, runId);
    const events = await this.store.events(runId);
    return { state: replay(runId, events), events, snapshotSeq: 0 };
  }

  /**
   * Stores a snapshot of the run's state when enough events passed since the last one: serialised
   * now (the state moves on), written in the background; a failure costs nothing but a longer replay.
   */
  protected maybeSnapshot(ctx: RunCtx): void {
    // a run driven to its result keeps its whole log in memory anyway, and a resume of it reads the whole log:
    // snapshots serve the workers that take runs up (serving, or after a crash), and those write them
    if (this.snapshotEvery <= 0 || !this.store.saveSnapshot || ctx.events !== undefined || ctx.stale || ctx.state.status !== 'running') return;
    if (!snapshotDue(ctx.state, ctx.snapshotSeq, this.snapshotEvery)) return;
    const snap = snapshotOf(ctx.state);
    ctx.snapshotSeq = snap.seq;
    void this.track(this.store.saveSnapshot(ctx.runId, snap), true).catch(() => undefined);
  }

  /**
   * Running tasks whose owner is a process of this host that is gone are taken over at once, not
   * after their lease: the takeover is fenced by the stored lease (owner and attempt), so a task
   * that moved on meanwhile is left alone.
   */
  protected takeOverDead(ctx: RunCtx): void {
    for (const name of ctx.state.running) {
      const p = ctx.state.phases.get(name)!;
      const owner = p.leaseOwner;
      if (owner === undefined || owner === this.id) continue;
      if (ctx.facts.some((f) => f.kind === 'lease_expired' && f.phase === name && f.attempt === p.attempts)) continue;
      if (this.isOwnerDead(owner)) ctx.facts.push({ kind: 'lease_expired', phase: name, attempt: p.attempts, owner, dead: true });
    }
  }

  /**
   * Running tasks held under this worker's own lease that no attempt of this process runs: claims of a
   * commit whose answer was lost (the connection dropped as the store committed), so they were never
   * started. Nothing else would ever take them: the lease is a live worker's, and a worker never takes
   * over its own lease, even an expired one. They are handed back, fenced by this
   * worker's lease, and the next claim runs them: none of them ran, so nothing runs twice. Called
   * when the state comes from the store (a load, a rebuild), never between a commit and the start of
   * the attempts it claimed.
   */
  protected handBackUnstarted(ctx: RunCtx): void {
    for (const name of ctx.state.running) {
      const p = ctx.state.phases.get(name)!;
      if (p.status !== 'running' || p.leaseOwner !== this.id || ctx.attempts.has(name) || ctx.busy.has(name)) continue;
      // an attempt that ended here and whose outcome waits for the next commit is not unstarted
      if (ctx.facts.some((f) => (f.kind === 'outcome' || f.kind === 'lease_expired') && f.phase === name && f.attempt === p.attempts)) continue;
      ctx.facts.push({ kind: 'lease_expired', phase: name, attempt: p.attempts, owner: this.id, handBack: true });
    }
  }

  // ---- kept by the loop (worker.ts) ---------------------------------------------------------------

  /** Wakes the loop if it is idle (a new fact, an attempt ended). */
  protected abstract kick(): void;

  /** Starts the loop, or wakes it if it runs. */
  protected abstract ensureLoop(): void;

  /** The run ended: its attempts stop, its files are finished, its result is given (worker-commits.ts). */
  protected abstract end(ctx: RunCtx): void;

  /** Finishes or removes the run's scratch roots a process that died left on this host (worker-files.ts). */
  protected abstract tidyFiles(ctx: RunCtx): void;
}

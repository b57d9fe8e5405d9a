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
 * - An attempt's output files (AIP-16) reach the workspace only after the completion that records
 *   them is committed and accepted; the run's next attempts here start after the copy (worker-files.ts).
 */
import { BatonError } from '../core/errors.js';
import { DueTimes } from '../core/due-times.js';
import { StopSignal } from './attempt.js';
import { shareSlots, type SlotClaim } from './slot-share.js';
import type { Fact, FactResult } from './decide.js';
import { nextAgentOf, nextClaim, nextLeaseLook, nextTimer, type Claimant } from './due.js';
import type { RunRecord } from './ports.js';
import { monotonicNow, thisHostPrefix } from './worker-support.js';
import { replay } from './state.js';
import { toResult, type RunResult } from './result.js';
import type { FaultPoint, RunCtx } from './worker-base.js';
import { WorkerAttempts } from './worker-attempts.js';

// the layers of the worker, bottom up: worker-base.ts (options, fields, loading), worker-files.ts, worker-commits.ts (its rules in worker-commit-rules.ts), worker-attempts.ts, this file (the loop)
export { DEFAULT_CONCURRENCY, DEFAULT_LEASE_MS, FAULT_POINTS, type FaultPoint, type FaultPlan, type BoundRun, type WorkerOptions, type WorkerTuning, type StoreTrouble } from './worker-base.js';

/** How long the ready tasks a serving worker is offered stay reserved for it (findWork): it takes their runs up well within it. */
const RESERVE_MS = 2_000;
/** Runs in one fast commit at most (each takes an advisory lock on PostgreSQL for the statement). */
const BATCH_RUNS = 64;
/** Runs committed one by one (transact) at once, each on a connection of its own (within PostgreSQL's default pool of 10). */
const SLOW_PARALLEL = 8;
/**
 * Runs committed one by one in a turn at most; the others stay due for the next turns. A turn waits for
 * its slow commits before the next one starts, and the runs on the fast path (every phase of a plain
 * run) go at the start of a turn: 300 gate expiries due at once, all in one turn, held each phase of a
 * run beside them for 0.5-0.9 s.
 */
const SLOW_PER_TURN = 2 * SLOW_PARALLEL;
/** How far from a due time (retry delay, timer) the fast path stays away: the store-clock estimate's error is far smaller. */
const FAST_MARGIN_MS = 1_000;
/** How often held runs are read whatever the NOTIFY payloads said (refresh). */
const FULL_LOOK_MS = 1_000;
/**
 * A serving worker with free slots asks the store for new work whenever a turn commits nothing; while
 * attempts run, after a look that found nothing, the next such look waits this long (ms), so that a
 * worker woken by every commit (its own, on SQLite; remote agents completing one task at a time) does
 * not query once per commit. An idle worker looks at once.
 */
const IDLE_SCAN_GAP_MS = 25;
/**
 * A serving worker whose turns keep committing (a flood of timers coming due, retries) still looks for new
 * work when the store said something changed (a run created, a gate decided elsewhere), at most this often
 * (ms): it used to look only at its periodic scan, and a run started beside 300 gate expiries due at once
 * waited about a second before its first claim.
 */
const BUSY_LOOK_MS = 200;
/** How soon the worker looks at the store again after a look failed (the store is down: is it back?). */
const TROUBLE_SCAN_MS = 250;
/** How many due times of parked runs a serving worker keeps (beyond them, its poll finds the rest). */
const PARKED_DUE_TIMES = 10_000;
/**
 * Runs whose ready tasks need agents this worker does not bind that it remembers, so that findWork
 * stops offering those tasks (`skip`): beyond it the oldest are forgotten (and offered, loaded and
 * remembered again when their turn comes).
 */
const FOREIGN_RUNS = 5_000;
/** Facts an attempt of this worker observes itself: the only ones the fast path commits. */
const FAST_FACTS = new Set<Fact['kind']>(['outcome', 'cost', 'log', 'record', 'warn', 'sibling', 'checkpoint', 'file']);

/** No runs (dueRuns' answer for a side with none): never written to. */
const NO_RUNS: readonly RunCtx[] = [];
/** commitDue's answer when nothing was due (one promise for every such turn). */
const NOTHING_DUE: Promise<boolean> = Promise.resolve(false);
const committedSome = (): boolean => true;

/** The slots a run holds in this worker: its attempts running (not those waiting for a human), and those whose agent ignored an abort. */
function slotsHeld(ctx: RunCtx): number {
  let n = ctx.busy.size;
  for (const a of ctx.attempts.values()) if (a.suspendedOn === undefined) n++;
  return n;
}

/** Ends the waits of an idle turn (worker.idle). */
const IDLE_OVER = new Error('the idle turn is over');

export class Worker extends WorkerAttempts {
  private serving = false;
  private kickFn: (() => void) | undefined;
  /** Next look at the store for expired leases and (serving) new work, in store time. */
  private nextScanAt = 0;
  /**
   * When the runs this serving worker parked come due (store time): it sleeps until the earliest and
   * then asks the store, instead of finding them at its next poll (up to pollMs late). Numbers only.
   */
  private readonly parkedDue = new DueTimes(PARKED_DUE_TIMES);
  /** The store time at which the loop last decided whether to look for work (idle() drops what was due by then). */
  private turnAt = -Infinity;
  /**
   * The wait for a change in the store, armed before a look for work and kept until a change (or the
   * poll's time) ends it: a change made between the look and the idle wait (a run created or a gate
   * decided by another engine of this process: memory and SQLite wake only the waits already there)
   * ends the idle wait at once. Armed only at the idle wait, it was missed until the next poll.
   */
  private changeWait: Promise<'store'> | undefined;
  /** Whether changeWait has ended (the store changed, or its poll passed) with nobody idle to hear it. */
  private changeSeen = false;
  /** When (monotonic ms) a busy turn last looked for work because the store changed. */
  private lastBusyLook = -Infinity;
  /** Next look that also reads the live leases of this host's workers (scanWork), in store time. */
  private nextOwnersLook = 0;
  /** Last check of local owners' processes (monotonic ms). */
  private lastDeadCheck = 0;
  /** When (monotonic ms) the last look for new work on an idle turn found nothing; -Infinity after one that found some. */
  private lastEmptyScan = -Infinity;
  /** An idle turn's look was put off (IDLE_SCAN_GAP_MS): idle() wakes for it. */
  private scanOwed = false;
  /**
   * Runs this serving worker took up for their ready work and found needing agents it does not bind:
   * the agents (null: it cannot bind the run at all). findWork leaves those tasks out, so older runs
   * it cannot serve do not fill every answer and hide the newer ones it can (an agent's tasks are
   * static per run: a worker's bindings and a run's workflow do not change).
   */
  private readonly foreign = new Map<string, Set<string> | null>();

  // ---- public ---------------------------------------------------------------------------------

  /**
   * Drives one run to its end (it may wait for gates, timers, other workers) and resolves to its result:
   * with its events, or (keepEvents false) with none, so that a run of many items keeps no log in memory.
   */
  async drive(runId: string, keepEvents = true): Promise<RunResult> {
    const ctx = await this.load(runId, keepEvents);
    ctx.driven = true;
    this.ensureLoop();
    const r = await ctx.done;
    if (!keepEvents) return r.events.length === 0 ? r : { ...r, events: [] };
    // a run this worker first took up while serving keeps no event list: read it from the store
    if (ctx.events === undefined) {
      const events = (await this.store.events(runId)).slice(0, ctx.state.seq);
      // its settled fan-out items were folded out of the state: the result lists them all, from the log
      return toResult(ctx.state.compacted > 0 ? replay(runId, events) : ctx.state, events);
    }
    return r;
  }

  /** Runs every run's ready tasks for the bound agents until `signal` aborts (`baton worker`). */
  async serve(signal: AbortSignal): Promise<void> {
    this.serving = true;
    const stop = (): void => this.close();
    signal.addEventListener('abort', stop, { once: true });
    this.ensureLoop();
    // until the signal, or until the worker crashes (the store kept failing past storeRetryMs, a decision
    // it cannot make): then serve rejects with the error, so that `baton worker` exits rather than idling dead
    await new Promise<void>((resolve, reject) => {
      if (this.crashed !== undefined) reject(this.crashed);
      else if (signal.aborted) resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
      this.onCrash.push(reject);
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
        const p = ctx.state.phases.get(a.key);
        if (p?.status === 'running' && p.attempts === a.attempt && p.leaseOwner === this.id) ctx.facts.push({ kind: 'lease_expired', phase: a.key, attempt: a.attempt, owner: this.id, handBack: true });
        // one that waits for an answer: whoever takes the answer up continues it, without waiting out this process's grace
        else if (p !== undefined && p.attempts === a.attempt && (p.status === 'suspended_awaiting_input' ? p.leaseOwner === this.id : p.status === 'ready' && p.resumable?.owner === this.id))
          ctx.facts.push({ kind: 'lease_expired', phase: a.key, attempt: a.attempt, owner: this.id, handBack: true, waiting: true });
        a.abort(new StopSignal('the worker stopped', true));
      }
    }
    this.kick();
    // the hand-backs and every outcome already in memory are committed before the loop stops
    const flushEnd = monotonicNow() + 10_000;
    while (this.crashed === undefined && !this.closed && [...this.runs.values()].some((c) => !c.ended && (c.facts.length > 0 || c.flushing || c.filesWork.size > 0)) && monotonicNow() < flushEnd) {
      this.ensureLoop();
      await new Promise<void>((r) => setTimeout(r, 10));
    }
    this.close();
  }

  /** Whether a run this worker holds has not ended. */
  private anyLive(): boolean {
    for (const c of this.runs.values()) if (!c.ended) return true;
    return false;
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
    this.store.forgetChanged?.(this);
    this.idleCtl.abort();
    for (const ctx of this.runs.values()) for (const a of ctx.attempts.values()) a.abort(new StopSignal('the worker stopped', true));
    this.kick();
  }

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

  // ---- the loop -----------------------------------------------------------------------------------

  protected override ensureLoop(): void {
    if (this.looping) {
      this.kick();
      return;
    }
    this.looping = true;
    void this.loop().finally(() => {
      this.looping = false;
    });
  }

  protected override kick(): void {
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
    let busyTurns = 0;
    while (!this.closed && this.crashed === undefined) {
      // a store that answers in microtasks (memory) must not starve timers and I/O: yield now and then
      if (++busyTurns % 16 === 0) await new Promise<void>((r) => setImmediate(r));
      let did = await this.commitDue();
      if (this.crashed !== undefined || this.closed) break;
      this.checkDeadOwners();
      const now = this.storeNow();
      this.turnAt = now;
      // new work is looked for on a turn that committed nothing, while a slot is free (not again at once after a look that found none);
      // while the store is away, only at the trouble scan's pace (nextScanAt): every turn of a worker whose held runs' commits
      // back off would otherwise ask a store that is refusing connections
      const wanted = this.serving && !did && !this.draining && !this.storeAway && this.active < this.concurrency && !this.heldRunsFillSlots(now);
      let look = wanted;
      // only a worker with attempts running puts a look off: an idle one looks at once (a run just started here is taken up without delay)
      if (wanted && this.active > 0 && monotonicNow() - this.lastEmptyScan < IDLE_SCAN_GAP_MS) {
        look = false;
        this.scanOwed = true;
      } else if (!wanted) {
        // no slot free, draining, or work done this turn: no look is owed (idle() must not wake for one, or it would spin)
        this.scanOwed = false;
      }
      const leaseLook = now >= this.leaseLookAt();
      // a turn that committed still looks when the store changed since the last look, now and then (BUSY_LOOK_MS)
      const busyLook =
        did && this.changeSeen && this.serving && !this.draining && !this.storeAway && this.active < this.concurrency && monotonicNow() - this.lastBusyLook >= BUSY_LOOK_MS && !this.heldRunsFillSlots(now);
      if (busyLook) {
        this.lastBusyLook = monotonicNow();
        // the change is taken here (the held runs it moved get their look, as an idle turn gives them), and a new wait armed below
        this.changeWait = undefined;
        await this.refresh();
      }
      if (look || busyLook || now >= this.nextScanAt || leaseLook) {
        this.scanOwed = false;
        void this.armChangeWait();
        if (await this.scanWork()) {
          did = true;
          this.lastEmptyScan = -Infinity;
        } else this.lastEmptyScan = monotonicNow();
        // another worker's lease looks expired to a run held here: the store has the truth (the attempt may
        // have ended, and the change that said so have come while this worker was busy): the held runs are
        // read again, level-triggered, as at a full look
        if (leaseLook && this.crashed === undefined && !this.closed) {
          this.lastFullLook = -Infinity;
          await this.refresh();
        }
      }
      this.evict();
      if (!this.serving && !this.anyLive()) break;
      if (!did) {
        busyTurns = 0;
        await this.idle();
      }
    }
    for (const ctx of this.runs.values()) {
      if (this.crashed !== undefined) ctx.reject(this.crashed);
      else if (!ctx.ended) ctx.reject(new BatonError('internal', `the worker stopped before run ${ctx.runId} ended`));
    }
  }

  /**
   * Commits the runs due now: those this worker holds current go together in one fast commit, the
   * others each in a transaction of its own, up to SLOW_PARALLEL at once. Whether any was. (A method
   * of its own: the loop's frame, which waits in idle() for as long as nothing happens, keeps no run
   * it went through, ended runs included.)
   */
  private commitDue(): Promise<boolean> {
    if (this.crashed !== undefined || this.closed) return NOTHING_DUE;
    const due = this.dueRuns();
    if (due === undefined) return NOTHING_DUE;
    const { fast, slow } = due;
    // the store's clock is not known yet (no commit answered since this worker started): every run is off
    // the fast path until one is. One transaction learns it; the others wait for the next turn (at once)
    // rather than all going through transactions of their own (runs created together, before any turn)
    if (slow.length > 1 && this.clockUnknown()) return this.flushFirst(slow);
    // the usual turn (every phase of a chain): one fast commit, without an async frame of its own around it
    if (slow.length === 0 && fast.length <= BATCH_RUNS) return fast.length > 0 ? this.flushMany(fast).then(committedSome) : NOTHING_DUE;
    return this.commitAll(fast, slow);
  }

  /** commitDue's turn in general: every run the fast path may take goes by it, BATCH_RUNS to a commit (not down the slow path past the first batch), then the others. */
  private async commitAll(fast: readonly RunCtx[], slow: readonly RunCtx[]): Promise<boolean> {
    let did = false;
    if (fast.length > BATCH_RUNS) did = await this.flushBatches(fast);
    else if (fast.length > 0) {
      await this.flushMany(fast);
      did = true;
    }
    if (this.crashed !== undefined || this.closed) return did;
    if (slow.length === 0) return did;
    if (slow.length === 1) return (await this.flushIfDue(slow[0]!, slow[0]!.slotCap)) || did;
    return (await this.flushSlow(slow)) || did;
  }

  /**
   * The runs due now, those that may take the fast path and the others, each with the slots it may
   * claim (`slotCap`); undefined when none is due. (Not async, and no closures: the loop goes through it
   * every turn; one run due, a chain's every turn, makes no arrays but the one it returns.)
   */
  private dueRuns(): { fast: readonly RunCtx[]; slow: readonly RunCtx[] } | undefined {
    const due = this.storeNow();
    let first: RunCtx | undefined;
    let dueRuns: RunCtx[] | undefined;
    for (const ctx of this.runs.values()) {
      if (ctx.ended || this.dueAt(ctx) > due) continue;
      if (first === undefined) first = ctx;
      else (dueRuns ??= [first]).push(ctx);
    }
    if (first === undefined) return undefined;
    if (dueRuns === undefined) {
      // one run: it gets what it wants of the free slots (shareSlots' answer for one run, without its arrays)
      const want = this.dueForMoreThanClaims(first) ? Infinity : Math.max(1, first.state.ready.size);
      first.slotCap = Math.max(0, Math.min(this.freeSlots(), want));
      // due only for a claim, and given no slot: it waits for the next turn
      if (first.slotCap === 0 && want !== Infinity) return undefined;
      return this.fastPath(first) ? { fast: [first], slow: NO_RUNS } : { fast: NO_RUNS, slow: [first] };
    }
    // a commit with facts may make tasks ready (a completion's successors, claimed in the same commit)
    const claims = dueRuns.map((ctx): SlotClaim => ({ held: slotsHeld(ctx), want: this.dueForMoreThanClaims(ctx) ? Infinity : Math.max(1, ctx.state.ready.size) }));
    // the free slots shared out between the runs due, fewest held first (slot-share.ts): a small run is
    // not kept waiting behind a wide one that came first; runs due only for a claim and given no slot wait
    // for the next turn (with thousands of runs waiting for a slot, a turn decides the few that can have one)
    const fast: RunCtx[] = [];
    const slow: RunCtx[] = [];
    const shares = shareSlots(this.freeSlots(), claims);
    for (let i = 0; i < dueRuns.length; i++) {
      const ctx = dueRuns[i]!;
      const cap = shares[i]!;
      if (cap === 0 && claims[i]!.want !== Infinity) continue;
      ctx.slotCap = cap;
      if (this.fastPath(ctx)) fast.push(ctx);
      else slow.push(ctx);
    }
    return { fast, slow };
  }

  /** Commits one of the runs by a transaction of its own: one with something to commit besides claims if there is one (a claim-only run may have no slot). */
  private flushFirst(slow: readonly RunCtx[]): Promise<boolean> {
    const first = slow.find((c) => this.dueForMoreThanClaims(c)) ?? slow[0]!;
    return this.flushIfDue(first, first.slotCap);
  }

  /** The fast runs BATCH_RUNS to a commit, one commit after another. Whether any was committed. */
  private async flushBatches(fast: readonly RunCtx[]): Promise<boolean> {
    let did = false;
    for (let i = 0; i < fast.length; i += BATCH_RUNS) {
      if (this.crashed !== undefined || this.closed) return did;
      let batch = fast.slice(i, i + BATCH_RUNS);
      if (i > 0) {
        // a store that answers in microtasks (memory) must not hold timers and I/O off for a whole long turn;
        // what happened meanwhile (a run ended, another process committed to one) is looked at again
        await new Promise<void>((r) => setImmediate(r));
        batch = batch.filter((c) => !c.ended && this.runs.get(c.runId) === c && this.fastPath(c));
        if (batch.length === 0) continue;
      }
      await this.flushMany(batch);
      did = true;
    }
    return did;
  }

  /**
   * Runs that need a transaction of their own (a retry, a timer or a grace period due, a takeover, a
   * command, a run other workers share) go up to SLOW_PARALLEL at once, each on its own connection:
   * one after another, a thousand runs retrying together on PostgreSQL waited a thousand round trips
   * each turn. The free slots are shared out before any goes, so that together they claim no more
   * than the worker may run: each run its share of them (dueRuns). At most SLOW_PER_TURN go in a turn,
   * so that the runs on the fast path wait for a few of them, not for all. Whether any was committed.
   */
  private async flushSlow(slow: readonly RunCtx[]): Promise<boolean> {
    let did = false;
    // the first SLOW_PER_TURN that have something to commit; the rest stay due for the next turns
    const queue = slow
      .filter((ctx) => ctx.slotCap > 0 || this.dueForMoreThanClaims(ctx))
      .slice(0, SLOW_PER_TURN)
      .map((ctx) => ({ ctx, cap: ctx.slotCap }));
    const lane = async (): Promise<void> => {
      for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
        if (this.crashed !== undefined || this.closed) return;
        // a run due only for a claim, with no slot left for it, waits for the next turn (a commit would carry nothing)
        if (next.cap === 0 && !this.dueForMoreThanClaims(next.ctx)) continue;
        if (await this.flushIfDue(next.ctx, next.cap)) did = true;
      }
    };
    await Promise.all(Array.from({ length: Math.min(SLOW_PARALLEL, queue.length) }, lane));
    return did;
  }

  /**
   * Whether the runs this worker holds have ready tasks enough for its free slots, taken by a commit in
   * flight or due now: then a look for other runs would find nothing it could take up (the periodic
   * scan, about once a second, still offers them, and takes one up when a slot is free then). Once held,
   * a run gets its share of the slots that free (commitDue, slot-share.ts).
   */
  private heldRunsFillSlots(now: number): boolean {
    let free = this.freeSlots();
    for (const ctx of this.runs.values()) {
      if (ctx.ended || ctx.state.ready.size === 0) continue;
      if (!ctx.flushing && (nextClaim(ctx.plan, ctx.state, this.claimant(ctx)) ?? Infinity) > now) continue;
      free -= ctx.state.ready.size;
      if (free <= 0) return true;
    }
    return false;
  }

  /** Whether the fast path waits for the store's clock (it has one, and no commit has told it yet). */
  private clockUnknown(): boolean {
    return this.store.commitMany !== undefined && this.store.hasClock === true && this.monoOffset === undefined;
  }

  /** Whether the run has something to commit besides claims: facts, a state to rebuild, a timer due. */
  private dueForMoreThanClaims(ctx: RunCtx): boolean {
    return ctx.facts.length > 0 || ctx.stale || (nextTimer(ctx.state) ?? Infinity) <= this.storeNow();
  }

  /** Commits the run if it is still due (a commit before it may have changed that); whether it was. */
  private async flushIfDue(ctx: RunCtx, claimCap?: number): Promise<boolean> {
    if (this.crashed !== undefined || this.closed) return false;
    if (ctx.ended || this.runs.get(ctx.runId) !== ctx) return false;
    if (this.dueAt(ctx) > this.storeNow()) return false;
    await this.flush(ctx, claimCap);
    return true;
  }

  protected override claimant(ctx: RunCtx): Claimant {
    return { worker: this.id, agents: ctx.agents, deadOwners: this.deadOwnersOf(ctx), resuming: this.resumingOf(ctx), busy: ctx.busy };
  }

  protected override claimFact(ctx: RunCtx, max: number): Extract<Fact, { kind: 'claim' }> {
    return { kind: 'claim', max, leaseMs: this.leaseMs, worker: this.id, agents: ctx.agents, deadOwners: this.deadOwnersOf(ctx), resuming: this.resumingOf(ctx), busy: ctx.busy };
  }

  /**
   * Whether the run's next commit may take the fast path (commitMany: decided on this worker's state
   * without reading the run, in the store's time as estimated here): only when no decision in it
   * depends on the time to within the estimate's error, and no other process is likely to commit to
   * the run meanwhile. Everything else (timers, retry delays and grace periods coming due, takeovers,
   * commands, runs that other workers share, a state known to be behind) goes through transact,
   * which reads the run under its lock and decides in the store's own clock.
   */
  private fastPath(ctx: RunCtx): boolean {
    if (!this.store.commitMany || ctx.stale || ctx.flushing || this.clockUnknown()) return false;
    const state = ctx.state;
    if (state.status !== 'running') return false;
    const now = this.fastNow();
    if (ctx.fastOffUntil > now) return false;
    for (const f of ctx.facts) if (!FAST_FACTS.has(f.kind)) return false;
    const timer = nextTimer(state);
    if (timer !== null && timer <= now + FAST_MARGIN_MS) return false;
    for (const name of state.running) {
      const owner = state.phases.get(name)!.leaseOwner;
      if (owner !== undefined && owner !== this.id) return false;
    }
    const ready = this.readyFacts(ctx);
    return !ready.anyResumable && !ready.anyAccess && ready.maxNotBefore <= now - FAST_MARGIN_MS;
  }

  /** When the run next needs a commit from this worker (store time): now for pending facts, its timers, its next claim. */
  protected override dueAt(ctx: RunCtx): number {
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
    if (t === Infinity) return t;
    // a backoff still running (the clock's monotonic time): due when it ends, in store time as read now
    const wait = ctx.retryAt - this.mono();
    return wait > 0 ? Math.max(t, this.storeNow() + wait) : t;
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
    if (this.storeAway) wake = Math.min(wake, this.nextScanAt);
    if (this.serving) {
      // a parked run due by the turn that just ran had its look then (or is looked for once a slot frees)
      this.parkedDue.dropUntil(this.turnAt);
      if (!this.draining && !this.storeAway && this.active < this.concurrency) wake = Math.min(wake, this.parkedDue.peek());
    }
    const now = this.storeNow();
    // a look for new work put off on a busy turn is made once its gap has passed (real time: a throttle, not a due time)
    const owed = this.scanOwed ? Math.max(0, this.lastEmptyScan + IDLE_SCAN_GAP_MS - monotonicNow()) : Infinity;
    if (wake <= now || owed === 0) return;
    const ctl = new AbortController();
    const onIdleAbort = (): void => ctl.abort();
    this.idleCtl.signal.addEventListener('abort', onIdleAbort, { once: true });
    const waits: Promise<unknown>[] = [
      new Promise<void>((r) => {
        this.kickFn = r;
      }),
    ];
    // watched even while attempts run: a cancel or a gate decision from another process must reach them
    waits.push(this.armChangeWait());
    if (wake !== Infinity) waits.push(this.clock.sleep(Math.max(0, wake - now), ctl.signal).then(() => 'timer', () => undefined));
    let owedTimer: NodeJS.Timeout | undefined;
    if (owed !== Infinity) waits.push(new Promise<void>((r) => (owedTimer = setTimeout(r, owed))));
    this.idling = true;
    const why = await Promise.race(waits);
    this.idling = false;
    clearTimeout(owedTimer);
    // with a reason: an abort without one builds a DOMException (its stack included) on every idle turn
    ctl.abort(IDLE_OVER);
    this.idleCtl.signal.removeEventListener('abort', onIdleAbort);
    this.kickFn = undefined;
    if (why === 'store') {
      this.changeWait = undefined;
      // a store whose wait returns at once (closed, or changing all the time) must not starve timers
      // and I/O: idle turns reset the busy count, so yield to the event loop here
      await new Promise<void>((r) => setImmediate(r));
      await this.refresh();
    }
  }

  private armChangeWait(): Promise<'store'> {
    if (this.changeWait) return this.changeWait;
    this.changeSeen = false;
    const p = this.store.waitForChange(this.pollMs, this.idleCtl.signal).then(() => {
      if (this.changeWait === p) this.changeSeen = true;
      return 'store' as const;
    });
    // armed before a look and raced only by the idle wait: a store whose wait fails (the built-in ones never
    // do) fails that race as before, never as an unhandled rejection meanwhile
    p.catch(() => {
      if (this.changeWait === p) this.changeWait = undefined;
    });
    return (this.changeWait = p);
  }

  private lastFullLook = monotonicNow();

  /** Another process may have committed: runs whose stored seq moved get a look (the NOTIFY payloads say which, when the store knows). */
  private async refresh(): Promise<void> {
    let changed = this.store.takeChanged?.(this) ?? 'unknown';
    // NOTIFY payloads are edge-triggered: once a second, held runs are also read level-triggered (a
    // notification lost anywhere, or a commit that raced a load, costs at most that second, never a hang)
    const t = monotonicNow();
    if (t - this.lastFullLook >= FULL_LOOK_MS) {
      this.lastFullLook = t;
      changed = 'unknown';
    }
    // runs whose load is in flight: what moved meanwhile is looked at once they are held (load())
    for (const [runId, seen] of this.loadingSeen) {
      const seq = changed === 'unknown' ? Infinity : changed.get(runId);
      if (seq !== undefined && seq > seen) this.loadingSeen.set(runId, seq);
    }
    for (const ctx of this.runs.values()) {
      if (ctx.ended) continue;
      if (changed !== 'unknown') {
        // the payloads are taken once: a run that is committing, or has facts waiting, still gets its look
        // (a commit that read the run before another process's commit landed would not have seen it)
        const seq = changed.get(ctx.runId);
        if (seq !== undefined && seq > ctx.state.seq && !ctx.facts.some((f) => f.kind === 'tick')) ctx.facts.push({ kind: 'tick' });
        continue;
      }
      if (ctx.flushing || ctx.facts.length > 0) continue;
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

  /**
   * Runs this worker holds for nothing: a serving worker keeps only the runs it is executing (a gated run
   * costs no memory), and no worker keeps a run that ended, driven or not (its drive holds the ctx it
   * resolved): an engine that runs one request after another for days holds only the runs under way.
   */
  private evict(): void {
    // park() deletes the entry being visited, which a Map's iteration allows
    for (const ctx of this.runs.values()) {
      if ((ctx.driven && !ctx.ended) || ctx.flushing || ctx.stale || ctx.attempts.size > 0 || ctx.busy.size > 0 || ctx.facts.length > 0 || ctx.waiters.length > 0 || ctx.filesWork.size > 0 || ctx.ending) continue;
      if (ctx.ended) this.park(ctx);
      else if (this.serving) {
        const due = this.nextDueOf(ctx);
        if (due > this.storeNow() + 1000) {
          this.park(ctx);
          this.parkedDue.add(due);
        }
      }
    }
  }

  /**
   * When the run next has work for this worker (store time; Infinity: not until something else
   * changes): a claim, or a timer (a gate's expiry, an escalation, the run's deadline). One due within
   * a second keeps the run loaded rather than re-read (evict): a run taken up because its timer came
   * due must stay held until the commit that fires it (parked again at once, it was taken up and
   * parked at every look and the timer never fired). A later one is parked and its time kept.
   */
  private nextDueOf(ctx: RunCtx): number {
    const c = nextClaim(ctx.plan, ctx.state, this.claimant(ctx)) ?? Infinity;
    const t = nextTimer(ctx.state) ?? Infinity;
    return Math.min(c, t);
  }

  /** Remembers the agents of a run's ready tasks this worker does not bind (see `foreign`). */
  private noteForeignAgents(ctx: RunCtx): void {
    if (ctx.ended) {
      this.foreign.delete(ctx.runId);
      return;
    }
    for (const name of ctx.state.ready) {
      const agent = nextAgentOf(ctx.plan, ctx.state, name);
      // an access-reviewed agent's first claim opens its gate, which any worker may do
      if (!ctx.agents.has(agent) && !ctx.plan.accessAgents.has(agent)) this.noteForeign(ctx.runId, agent);
    }
  }

  private noteForeign(runId: string, agent: string | null): void {
    const known = this.foreign.get(runId);
    if (known === null) return;
    if (known !== undefined && agent !== null) {
      known.add(agent);
      return;
    }
    this.foreign.set(runId, agent === null ? null : new Set([agent]));
    if (this.foreign.size > FOREIGN_RUNS) this.foreign.delete(this.foreign.keys().next().value!);
  }

  private foreignTasks(): { runId: string; agent: string | null }[] {
    const out: { runId: string; agent: string | null }[] = [];
    for (const [runId, agents] of this.foreign) {
      if (agents === null) out.push({ runId, agent: null });
      else for (const agent of agents) out.push({ runId, agent });
    }
    return out;
  }

  /** Expired leases and, when serving, runs with due work (store time; tasks held by gates never come). */
  private async scanWork(): Promise<boolean> {
    // a worker that has not committed yet learns the store's clock first: due times are in it
    if (this.monoOffset === undefined) await this.storeTime();
    const now = this.storeNow();
    const every = Math.min(this.leaseMs / 3, Math.max(this.pollMs, 1000));
    this.nextScanAt = now + every;
    // the live leases of this host's workers (is their process gone?) at most once per period: a worker that
    // looks for new work every few ms while its attempts run would read every running task of the host each time
    const owners = now >= this.nextOwnersLook;
    if (owners) this.nextOwnersLook = now + every;
    let hints;
    try {
      // a serving worker that names the agents it binds reserves the ready tasks it is offered (as many as
      // it has free slots): workers asking at once take up different runs rather than all loading the same
      // ones. One that binds whatever a run records may not be able to run a task it would reserve (and
      // would hold it from those that can until the reservation passes): it reserves nothing.
      const free = this.serving && !this.draining ? Math.max(0, this.concurrency - this.active) : 0;
      hints = await this.track(
        this.store.findWork({
          agents: this.serving ? (this.opts.agents ?? null) : null,
          now,
          limit: 100,
          ...(owners ? { ownersLike: thisHostPrefix() } : {}),
          ...(this.serving && this.opts.agents ? { reserve: { owner: this.id, until: now + RESERVE_MS, max: free } } : {}),
          ...(this.serving && this.foreign.size > 0 ? { skip: this.foreignTasks() } : {}),
        }),
      );
    } catch (e) {
      this.storeTrouble(e);
      // the store is away: look again soon, and the first call that succeeds sends the commits waiting out a backoff
      if (!(e instanceof BatonError && e.code === 'store-locked') && this.crashed === undefined) {
        this.storeAway = true;
        this.nextScanAt = Math.min(this.nextScanAt, now + TROUBLE_SCAN_MS);
      }
      return false;
    }
    let found = false;
    let takenUp = 0;
    let loadedForTimers = 0;
    // runs held with work (running here, or ready): with every slot taken, a run is still taken up while
    // there are fewer of them than slots, and gets its share of the next slots that free (commitDue);
    // so a small run is not left in the store until a wide one beside it has drained
    let withWork = -1;
    const heldWithWork = (): number => {
      if (withWork < 0) {
        withWork = 0;
        for (const c of this.runs.values()) if (!c.ended && (c.attempts.size > 0 || c.state.ready.size > 0)) withWork++;
      }
      return withWork;
    };
    // the live leases of this host's workers come back at every look: ask about each owner once
    const known = new Map<string, boolean>();
    const dead = (owner: string): boolean => {
      let d = known.get(owner);
      if (d === undefined) known.set(owner, (d = this.isOwnerDead(owner)));
      return d;
    };
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
        // each run taken up for its ready work needs a free slot, or (none free) a share of the next ones:
        // no more runs with work held than there are slots (a worker keeps in memory what it can run)
        const slotFree = this.active + takenUp < this.concurrency;
        if (h.reason === 'ready' && !slotFree && heldWithWork() + takenUp >= this.concurrency) continue;
        if (h.reason === 'lease' && (h.owner === this.id || (h.live && (h.owner === undefined || !dead(h.owner))))) continue;
        // runs taken up for a timer or a lease load one by one while the loop waits: a turn's worth of them
        // (the slow path commits SLOW_PER_TURN a turn), the rest at the next looks, so that a flood of due
        // timers does not hold up the runs this worker is running for a hundred loads at each look
        if (h.reason !== 'ready' && loadedForTimers >= SLOW_PER_TURN) continue;
        try {
          ctx = await this.load(h.runId, false);
        } catch (e) {
          if (!(e instanceof BatonError && (e.code === 'unknown-run' || e.code === 'invalid-workflow' || e.code === 'store-corrupt' || e.code === 'usage'))) this.storeTrouble(e);
          if (e instanceof BatonError && (e.code === 'invalid-workflow' || e.code === 'usage')) this.noteForeign(h.runId, null);
          continue; // a run this worker cannot bind (its workflow or agents): leave it to others
        }
        if (h.reason === 'ready') {
          takenUp++;
          this.noteForeignAgents(ctx);
        } else loadedForTimers++;
        // progress only if the loaded run has something this worker can do now (else it is parked again, no spin)
        if (h.reason !== 'ready' || (slotFree && (nextClaim(ctx.plan, ctx.state, this.claimant(ctx)) ?? Infinity) <= now)) found = true;
      }
      if (ctx.ended) continue;
      if (h.reason === 'lease') {
        if (h.owner === this.id || h.phase === undefined || h.attempt === undefined || h.owner === undefined) continue;
        if (h.live && !dead(h.owner)) continue;
        if (ctx.facts.some((f) => f.kind === 'lease_expired' && f.phase === h.phase && f.attempt === h.attempt)) continue;
        ctx.facts.push({ kind: 'lease_expired', phase: h.phase, attempt: h.attempt, owner: h.owner, ...(h.live ? { dead: true } : {}) });
        found = true;
      } else if (ctx.facts.length === 0 && ctx.retryAt <= this.mono() && !ctx.flushing) {
        // the store knows of a commit this worker has not seen: a look (a commit reads the events since);
        // what a current state says is due, the loop does by itself (and what it says is not due, is not)
        const behind = h.seq === undefined ? (h.reason === 'timer' ? (nextTimer(ctx.state) ?? Infinity) > now : (nextClaim(ctx.plan, ctx.state, this.claimant(ctx)) ?? Infinity) > now) : h.seq > ctx.state.seq;
        if (behind) {
          ctx.facts.push({ kind: 'tick' });
          found = true;
        }
      }
    }
    return found;
  }
}

export { newWorkerId, ownerIsDeadOnThisHost } from './worker-support.js';

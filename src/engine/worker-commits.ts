/**
 * The commits: one batch of facts decided and written in one store transaction (flush), what a
 * failed commit keeps (requeue) and how the state is rebuilt (reload), and local attempts brought
 * in line with the committed state (reconcile, resumed, end).
 */
import { BatonError } from '../core/errors.js';
import { cloneJson } from '../core/json.js';
import { StopSignal, type Attempt } from './attempt.js';
import { decide, type Claimed, type Fact, type FactResult } from './decide.js';
import { nextTimer, type Claimant } from './due.js';
import type { RunEvent } from './events.js';
import type { BatchCommit, BatchResult, RunStore } from './ports.js';
import { doubtOf, fences, landed, nobody, OBSERVED, wakesOthers } from './worker-commit-rules.js';
import { buildCommit } from './projection.js';
import { backoff, DecisionError, isFault } from './worker-support.js';
import { applyEvent, attachGraph, compactItems, startCompacting } from './state.js';
import type { RunCtx } from './worker-base.js';
import { WorkerFiles } from './worker-files.js';

/** What a store's commitMany answers. */
type CommitManyAnswer = Awaited<ReturnType<NonNullable<RunStore['commitMany']>>>;

/** flushMany's answer when it committed nothing (one promise for all). */
const DONE: Promise<void> = Promise.resolve();

/** One run's part of a fast commit (flushMany): what was decided for it, and the commit that records it. */
interface FastCommit {
  ctx: RunCtx;
  facts: Fact[];
  waiters: ((r: FactResult | Error) => void)[];
  made: RunEvent[];
  results: FactResult[];
  claimIndex: number;
  item: BatchCommit;
}

export abstract class WorkerCommits extends WorkerFiles {
  // ---- kept by the layers above ----------------------------------------------------------------

  /** What this worker asks for when it claims (worker.ts). */
  protected abstract claimant(ctx: RunCtx): Claimant;

  /** The claim of up to `max` tasks a commit carries: this worker's claimant (worker.ts), built in one object. */
  protected abstract claimFact(ctx: RunCtx, max: number): Extract<Fact, { kind: 'claim' }>;

  /** When the run next needs a commit from this worker, in store time (worker.ts). */
  protected abstract dueAt(ctx: RunCtx): number;

  /** Starts an attempt of a task this worker claimed (worker-attempts.ts). */
  protected abstract start(ctx: RunCtx, c: Claimed): void;

  /** (Re)arms an attempt's phase timeout with what is left of it (worker-attempts.ts). */
  protected abstract armTimeout(att: Attempt): void;

  /** Starts the lease renewals if they are not running (worker-attempts.ts). */
  protected abstract ensureHeartbeat(): void;

  // ---- commits ----------------------------------------------------------------------------------

  /** Slots a commit may claim for: none while stopping. */
  protected freeSlots(): number {
    return this.draining || this.closed ? 0 : Math.max(0, this.concurrency - this.active);
  }

  /** `claimCap`: the most tasks this commit may claim (commits in parallel share the free slots out). */
  protected async flush(ctx: RunCtx, claimCap = Infinity): Promise<void> {
    ctx.flushing = true;
    if (ctx.stale) {
      // a failed commit left decisions in memory that the store never saw: rebuild from the store first
      const ok = await this.reload(ctx);
      // a run that ended meanwhile still records what this worker observed (a late outcome: task.stale_outcome)
      if (!ok || (ctx.ended && ctx.facts.length === 0)) {
        ctx.flushing = false;
        return;
      }
    }
    const facts = ctx.facts.splice(0);
    const waiters = ctx.waiters.splice(0);
    // until decide() has put them in the state, the costs among them still count (remainingBudget)
    ctx.deciding = facts;
    const free = Math.min(claimCap, this.freeSlots());
    const before = this.storeNow();
    if ((nextTimer(ctx.state) ?? Infinity) <= before) {
      // waiters line up with facts by index: the tick gets a waiter of its own
      facts.unshift({ kind: 'tick' });
      if (waiters.length > 0) waiters.unshift(() => undefined);
    }
    let claimIndex = -1;
    if (free > 0) {
      claimIndex = facts.length;
      facts.push(this.claimFact(ctx, free));
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
            if (storeNow !== undefined) this.storeClockAt(storeNow);
            try {
              delta = d;
              for (const e of d) applyEvent(ctx.state, e);
              const out = decide(ctx.plan, ctx.state, facts, { now, initialState: ctx.record.initialState ?? undefined });
              ctx.deciding = undefined;
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
        true,
      ).finally(() => {
        // decided, or not at all (the facts go back to ctx.facts below)
        ctx.deciding = undefined;
      });
      if (!r.ok && r.reason === 'busy') {
        // another transaction holds the run: back off a little (its commit's NOTIFY may wake this worker sooner); never spin
        ctx.flushing = false;
        ctx.contended++;
        ctx.retryAt = this.mono() + backoff(ctx.contended, 5, 500);
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
      // may hold decisions that were not committed, so it is rebuilt from the store first. The commit
      // may have landed all the same (the answer lost on the way back): the rebuild says (doubtOf)
      ctx.doubt = doubtOf(made, this.requeue(ctx, facts, waiters), facts, results);
      ctx.failedCommits++;
      ctx.retryAt = this.mono() + backoff(ctx.failedCommits, 100, 5000);
      ctx.stale = true;
      for (const w of waiters) w(e instanceof Error ? e : new Error(String(e)));
      this.storeTrouble(e);
      return;
    }
    ctx.flushing = false;
    this.committed(ctx, delta.length > 0 ? delta.concat(made) : made, facts, results, waiters, claimIndex);
  }

  /**
   * The fast path: runs whose state this worker holds current (worker.ts says which), decided here
   * and committed together in one round trip without reading them first (`commitMany`), in the
   * store's time as this worker estimates it. A run that moved on meanwhile (another process
   * committed to it, or holds it now) is a conflict: what this worker observed goes again, through
   * `transact`, on a state rebuilt from the store.
   */
  protected flushMany(ctxs: readonly RunCtx[]): Promise<void> {
    const batch = this.decideMany(ctxs);
    if (batch === undefined || batch.length === 0) return DONE;
    let commit: Promise<CommitManyAnswer>;
    try {
      this.fault('flush.before-commit');
      const items = new Array<BatchCommit>(batch.length);
      for (let i = 0; i < batch.length; i++) items[i] = batch[i]!.item;
      commit = this.store.commitMany!(items);
    } catch (e) {
      this.fastFailed(batch, e);
      return DONE;
    }
    // track()'s counting, inline; no async frame around the commit (every phase of a chain takes this path):
    // its answer is taken one microtask after it comes, as an await took it
    this.io++;
    return commit.then(
      (r) => this.fastCommitted(batch, r),
      (e: unknown) => {
        this.io--;
        this.fastFailed(batch, e);
      },
    );
  }

  /** The fast commit's answer: each run's decisions committed, or found in conflict. */
  private fastCommitted(batch: readonly FastCommit[], r: CommitManyAnswer): void {
    let results: BatchResult[];
    try {
      try {
        this.storeOk(true);
      } finally {
        this.io--;
      }
      if (r.now !== undefined) this.storeClockAt(r.now);
      results = r.results;
      this.fault('flush.after-commit');
    } catch (e) {
      this.fastFailed(batch, e);
      return;
    }
    for (let i = 0; i < batch.length; i++) {
      const b = batch[i]!;
      b.ctx.flushing = false;
      if (results[i] === 'ok') this.committed(b.ctx, b.made, b.facts, b.results, b.waiters, b.claimIndex);
      else this.conflicted(b.ctx, b.facts, b.waiters);
    }
  }

  /**
   * The fast path's decisions (flushMany; not async, so that the commit's frame stays small): each run's
   * facts decided on its state, in the store's time as estimated here. Runs whose decisions made events
   * come back with their commit, flushing; the others are done here. Undefined when none made events,
   * or a decision failed (the worker crashed).
   */
  private decideMany(ctxs: readonly RunCtx[]): FastCommit[] | undefined {
    const now = this.fastNow();
    let free = this.freeSlots();
    // made with its first run (a chain commits one run at a time: an empty list's first push made room for 17)
    let batch: FastCommit[] | undefined;
    for (const ctx of ctxs) {
      // the lists themselves, the run given new ones (a splice made a copy, and left the run's list to grow again from nothing)
      const facts = ctx.facts;
      ctx.facts = [];
      const waiters = ctx.waiters;
      ctx.waiters = [];
      let claimIndex = -1;
      // each run its share of the free slots (worker.ts shares them out), never more than are left
      const max = Math.min(free, ctx.slotCap);
      if (max > 0) {
        claimIndex = facts.length;
        facts.push(this.claimFact(ctx, max));
      }
      const knownSeq = ctx.state.seq;
      let item: BatchCommit | undefined;
      let out: ReturnType<typeof decide>;
      try {
        out = decide(ctx.plan, ctx.state, facts, { now, initialState: ctx.record.initialState ?? undefined });
        if (out.events.length > 0) item = { runId: ctx.runId, knownSeq, commit: buildCommit(ctx.plan, ctx.state, out.events, out.touched, now), notify: wakesOthers(ctx, out.events, this.id) };
      } catch (err) {
        const e = new DecisionError(err);
        for (const w of waiters) w(e);
        this.crash(e);
        return undefined;
      }
      const claimed = claimIndex >= 0 ? out.results[claimIndex] : undefined;
      if (claimed?.kind === 'claimed') free -= claimed.tasks.length;
      if (!item) {
        this.committed(ctx, [], facts, out.results, waiters, claimIndex);
        continue;
      }
      ctx.flushing = true;
      const fc: FastCommit = { ctx, facts, waiters, made: out.events, results: out.results, claimIndex, item };
      if (batch === undefined) batch = [fc];
      else batch.push(fc);
    }
    return batch;
  }

  /** The fast commit failed: a fault crashes the worker; a store failure leaves what was observed waiting in memory. */
  private fastFailed(batch: readonly FastCommit[], e: unknown): void {
    for (const b of batch) b.ctx.flushing = false;
    if (this.crashed !== undefined) return;
    if (isFault(e)) {
      for (const b of batch) for (const w of b.waiters) w(e instanceof Error ? e : new Error(String(e)));
      this.crash(e);
      return;
    }
    // the store failed: as in flush, what was observed waits in memory and goes again after a backoff, on a rebuilt state
    for (const b of batch) {
      b.ctx.doubt = doubtOf(b.made, this.requeue(b.ctx, b.facts, b.waiters), b.facts, b.results);
      for (const w of b.waiters) w(e instanceof Error ? e : new Error(String(e)));
      b.ctx.failedCommits++;
      b.ctx.retryAt = this.mono() + backoff(b.ctx.failedCommits, 100, 5000);
      b.ctx.stale = true;
    }
    this.storeTrouble(e);
  }

  /** A fast commit found that another process committed to the run (or holds it): the decisions made here were on an old state. */
  private conflicted(ctx: RunCtx, facts: readonly Fact[], waiters: readonly ((r: FactResult | Error) => void)[]): void {
    ctx.fastOffUntil = this.storeNow() + 2_000;
    const again: Fact[] = [];
    const ws: ((r: FactResult | Error) => void)[] = [];
    facts.forEach((f, j) => {
      if (f.kind === 'claim' || f.kind === 'tick') return;
      again.push(f);
      ws.push(waiters[j] ?? (() => undefined));
    });
    if (again.length === 0 && !ctx.driven && ctx.attempts.size === 0 && ctx.busy.size === 0 && ctx.facts.length === 0) {
      // a run taken up only to claim from it, and claimed by another worker first: put down, not rebuilt
      this.runs.delete(ctx.runId);
      return;
    }
    ctx.facts.unshift(...again);
    ctx.waiters.unshift(...ws);
    ctx.stale = true;
  }

  /**
   * After a commit: the events are told, the callers answered, the files of the outcomes it decided
   * synced or dropped, local attempts reconciled, the claimed tasks started (after those files).
   */
  private committed(ctx: RunCtx, all: RunEvent[], facts: readonly Fact[], results: FactResult[], waiters: ((r: FactResult | Error) => void)[], claimIndex: number): void {
    ctx.failedCommits = 0;
    ctx.retryAt = 0;
    if (ctx.held.size > 0) this.settleFiles(ctx, facts, (_, i) => results[i]);
    if (ctx.events) for (const e of all) ctx.events.push(e);
    if (this.opts.onEvent) for (const e of all) this.opts.onEvent(e, ctx.state);
    if (this.opts.telemetry) for (const e of all) this.opts.telemetry.event(e, ctx.state, ctx.record);
    ctx.toldSeq = ctx.state.seq;
    if (all.length > 0) this.opts.onAdvance?.(ctx.runId);
    for (let i = 0; i < waiters.length; i++) waiters[i]!(results[i] ?? { kind: 'done' });
    const claimed = claimIndex >= 0 ? results[claimIndex] : undefined;
    const got = claimed && claimed.kind === 'claimed' ? claimed.tasks : [];
    // due work that this commit did not take (the store's clock behind this worker's estimate, say):
    // back off a little rather than ask again at once; anything that changes the run clears it
    if (all.length === 0 && got.length === 0 && ctx.facts.length === 0 && this.dueAt(ctx) <= this.storeNow()) {
      ctx.contended++;
      ctx.retryAt = this.mono() + backoff(ctx.contended, 1, 250);
    } else ctx.contended = 0;
    this.reconcile(ctx);
    for (const c of got) {
      // a crash while starting one attempt of the batch (a fault point) is the process dying: start no more
      if (this.crashed !== undefined) break;
      this.start(ctx, c);
    }
    // settled items are folded out of the state between decisions (a worker that keeps no event log)
    if (ctx.state.settledItems.length > 0) compactItems(ctx.state);
    if (ctx.state.status !== 'running') this.end(ctx);
    else {
      // a commit may bring another process's claims (its commit landed after this worker read the run, even
      // after that process died): a task held by a dead owner of this host is taken over now, not after its lease
      if (all.length > 0 && ctx.state.running.size > 0) this.takeOverDead(ctx);
      this.maybeSnapshot(ctx);
    }
  }

  /** Phases whose suspended attempt lives in this worker: answered, it is resumed here, not claimed anew. */
  protected resumingOf(ctx: RunCtx): ReadonlySet<string> | undefined {
    let out: Set<string> | undefined;
    // no iterator made when no attempt runs here (a chain's every claim)
    if (ctx.attempts.size === 0) return out;
    for (const [name, att] of ctx.attempts) if (att.suspendedOn !== undefined && !att.settled && att.abortReason === undefined) (out ??= new Set()).add(name);
    return out;
  }

  /**
   * A commit failed (the store was unreachable, a conflict): the facts this worker observed itself
   * (outcomes, costs, logs, lost leases) are still true and go in the next commit; dropping an
   * outcome would leave its task running under this worker's lease forever. What a running attempt
   * asks for (an input request, a checkpoint) goes again too, its agent still waiting for the answer:
   * a store that is away for a moment is weather, not the agent's failure. Commands from callers
   * (gate decisions, answers, cancel, resumes) are not retried: their callers get the error. Their
   * waiters are taken out of `waiters` so that only those callers hear of it. Returns the facts that
   * go again.
   */
  private requeue(ctx: RunCtx, facts: Fact[], waiters: ((r: FactResult | Error) => void)[], drop?: (f: Fact) => boolean): Fact[] {
    const again: Fact[] = [];
    const theirs: ((r: FactResult | Error) => void)[] = [];
    const keep: ((r: FactResult | Error) => void)[] = [];
    let asks = false;
    facts.forEach((f, i) => {
      const w = waiters[i];
      if (drop?.(f)) return;
      if (OBSERVED.has(f.kind)) {
        again.push(f);
        theirs.push(nobody);
      } else if (f.kind === 'request_input' || f.kind === 'checkpoint') {
        again.push(f);
        theirs.push(w ?? nobody);
        asks ||= w !== undefined;
      } else if (w) keep.push(w);
    });
    waiters.length = 0;
    waiters.push(...keep);
    if (again.length === 0) return again;
    // ahead of anything that arrived meanwhile (waiters line up with facts by index)
    ctx.facts.unshift(...again);
    if (ctx.waiters.length > 0 || asks) ctx.waiters.unshift(...theirs);
    return again;
  }

  protected deadOwnersOf(ctx: RunCtx): ReadonlySet<string> | undefined {
    const owners = this.readyFacts(ctx).resumableOwners;
    if (owners === undefined) return undefined;
    let out: Set<string> | undefined;
    for (const o of owners) if (this.isOwnerDead(o)) (out ??= new Set()).add(o);
    return out;
  }

  /** Rebuilds the run's state from the store; false when the store failed (the run stays stale, retried later). */
  private async reload(ctx: RunCtx): Promise<boolean> {
    let read: Awaited<ReturnType<WorkerCommits['readState']>>;
    let since: RunEvent[];
    try {
      read = await this.track(this.readState(ctx.runId, ctx.events !== undefined));
      // what was committed since this worker last heard: told to the observers below, and where a
      // commit whose answer was lost shows whether it landed. The events read with the state hold it,
      // unless the state came from a snapshot newer than that (another worker's): then it is read
      const gap = read.snapshotSeq > ctx.toldSeq && read.state.seq > ctx.toldSeq;
      const needed = ctx.doubt !== undefined || this.opts.onEvent !== undefined || this.opts.telemetry !== undefined;
      since = gap && needed ? await this.track(this.store.events(ctx.runId, ctx.toldSeq)) : read.events.filter((e) => e.seq > ctx.toldSeq);
    } catch (e) {
      ctx.failedCommits++;
      ctx.retryAt = this.mono() + backoff(ctx.failedCommits, 100, 5000);
      this.storeTrouble(e);
      return false;
    }
    const state = read.state;
    attachGraph(state, ctx.plan.dependsOn, ctx.plan.dependents, ctx.plan.assign);
    if (ctx.events === undefined) startCompacting(state);
    ctx.state = state;
    ctx.stale = false;
    ctx.snapshotSeq = Math.max(ctx.snapshotSeq, read.snapshotSeq);
    if (ctx.events) ctx.events = [...read.events];
    // a read after the state's may hold later commits: those come with the next transaction's events
    const missed = since.filter((e) => e.seq <= state.seq);
    const doubt = ctx.doubt;
    ctx.doubt = undefined;
    if (doubt && landed(doubt, missed)) {
      // the commit landed and only its answer was lost: what it carried is recorded (its outcomes,
      // costs, logs); deciding them again would record them twice (a cost counted twice against a budget)
      // the waiters of what an attempt asked for (an input request, a checkpoint) get what was decided
      const done = new Set(doubt.facts);
      this.settleFiles(ctx, doubt.facts, (f) => doubt.decided.get(f));
      const answer: (() => void)[] = [];
      for (let i = ctx.facts.length - 1; i >= 0; i--) {
        const f = ctx.facts[i]!;
        if (!done.has(f)) continue;
        ctx.facts.splice(i, 1);
        const w = i < ctx.waiters.length ? ctx.waiters.splice(i, 1)[0] : undefined;
        if (w && w !== nobody) answer.unshift(() => w(doubt.decided.get(f) ?? { kind: 'done' }));
      }
      for (const a of answer) a();
    }
    if (this.opts.onEvent) for (const e of missed) this.opts.onEvent(e, state);
    if (this.opts.telemetry) for (const e of missed) this.opts.telemetry.event(e, state, ctx.record);
    ctx.toldSeq = state.seq;
    this.opts.onAdvance?.(ctx.runId);
    this.reconcile(ctx);
    if (state.status !== 'running') this.end(ctx);
    else this.handBackUnstarted(ctx);
    return true;
  }

  /** Local attempts whose task moved on (cancelled, taken over, the run ended) stop; answered ones resume. */
  private reconcile(ctx: RunCtx): void {
    // no iterator made when no attempt runs here (a chain's every commit)
    if (ctx.attempts.size === 0) return;
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
        } else if (p.status === 'running' && p.attempts === att.attempt && p.leaseOwner === this.id) {
          // resumed by a commit whose answer was lost (it landed): the attempt goes on, as the answer would have had it
          if (!att.resuming) this.resumed(ctx, att, { kind: 'resumed', ok: true });
        } else if (p.status !== 'suspended_awaiting_input' && !(p.status === 'ready' && p.resumable?.attempt === att.attempt)) {
          // another worker holds (or will take) the task: a hand-over; an ended task is not one
          att.abort(new StopSignal(`the task is ${p.status}`, p.status === 'running' || p.status === 'ready'));
        }
        continue;
      }
      const mine = (p.status === 'running' || p.status === 'suspended_awaiting_input') && p.attempts === att.attempt && (p.leaseOwner === undefined || p.leaseOwner === this.id);
      if (!mine) att.abort(new StopSignal(p.status === 'cancelled' ? 'the task was cancelled' : `the task is ${p.status}`, p.status === 'running' || p.status === 'ready' || p.status === 'suspended_awaiting_input'));
    }
  }

  private resumed(ctx: RunCtx, att: Attempt, r: FactResult): void {
    att.resuming = false;
    if (r.kind !== 'resumed' || !r.ok) {
      att.abort(new StopSignal('another attempt took over after the answer', true));
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
}

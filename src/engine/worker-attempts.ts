/**
 * The attempts: starting one on a claimed task, running its agent, freeing its slot, its phase
 * timeout, the heartbeat that renews the leases, and the AttemptHost side an attempt calls back
 * (costs, logs, records, siblings, budget, checkpoints, input requests).
 */
import { endRecordedGroup } from '../core/process.js';
import { cloneJson, type Json, type JsonObject } from '../core/json.js';
import type { AgentHandler, InputRequest } from './agent.js';
import { AgentError } from './agent.js';
import { Attempt, StopSignal, TimeoutError, toOutcome, type AttemptHost } from './attempt.js';
import { remainingBudget, type Claimed, type Fact } from './decide.js';
import type { FileProvenance, HeldFiles } from './files.js';
import type { AttemptTrace } from './telemetry.js';
import { estimatedMsOf, phaseModelOf } from './plan.js';
import type { RunCtx } from './worker-base.js';
import { WorkerCommits } from './worker-commits.js';

export abstract class WorkerAttempts extends WorkerCommits implements AttemptHost {
  private heartbeat: Promise<void> | undefined;

  // ---- attempts ---------------------------------------------------------------------------------

  protected override start(ctx: RunCtx, c: Claimed): void {
    const pm = phaseModelOf(ctx.plan, c.phase)!;
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
      c.item === undefined ? undefined : { index: c.item.index, value: cloneJson(c.item.value) },
    );
    ctx.attempts.set(c.phase, att);
    this.active++;
    this.ensureHeartbeat();
    // the contract's `resources.estimatedTime` (its upper bound) is the attempt timeout when the phase sets none
    const estimate = estimatedMsOf(ctx.plan.contracts.get(pm.assign)); // contractOfPhase, with the phase's model at hand
    void this.execute(ctx, att, handler, pm.timeoutMs ?? estimate, estimate);
  }

  /**
   * Runs the attempt to its outcome; whatever it throws crashes the worker. Every phase of a chain comes
   * through here, so the usual way has no async frame: the attempt's promise is taken by one then, one
   * microtask after it settles, as an await took it.
   */
  private execute(ctx: RunCtx, att: Attempt, handler: AgentHandler | undefined, timeoutMs: number | undefined, estimateMs: number | undefined): void {
    try {
      this.fault('attempt.before-invoke');
      if (this.crashed !== undefined) return;
      // files of the run's committed completions still being synced (or leftover roots tidied): this agent may read them
      if (ctx.filesWork.size > 0) void this.executeAfterFiles(ctx, att, handler, timeoutMs, estimateMs);
      else this.invokeAttempt(ctx, att, handler, timeoutMs, estimateMs);
    } catch (e) {
      this.crash(e);
    }
  }

  private async executeAfterFiles(ctx: RunCtx, att: Attempt, handler: AgentHandler | undefined, timeoutMs: number | undefined, estimateMs: number | undefined): Promise<void> {
    try {
      while (ctx.filesWork.size > 0) await Promise.all([...ctx.filesWork]);
      if (this.crashed !== undefined) return;
      this.invokeAttempt(ctx, att, handler, timeoutMs, estimateMs);
    } catch (e) {
      this.crash(e);
    }
  }

  private invokeAttempt(ctx: RunCtx, att: Attempt, handler: AgentHandler | undefined, timeoutMs: number | undefined, estimateMs: number | undefined): void {
    if (timeoutMs !== undefined) {
      att.timeoutMs = timeoutMs;
      att.timeoutLeft = timeoutMs;
      this.armTimeout(att);
    }
    // an attempt still running at twice its contract's estimate is worth a warning (when its timeout allows it that long)
    const slow = estimateMs !== undefined && (timeoutMs === undefined || timeoutMs > 2 * estimateMs) ? this.watchEstimate(ctx, att, estimateMs) : undefined;
    let running: Promise<unknown>;
    try {
      if (!handler) throw new AgentError('UnboundAgent', `no handler is bound for agent ${att.agent}`, {}, false);
      running = att.invoke(handler);
    } catch (e) {
      // no handler: the attempt fails at once, in this same turn
      this.attemptSettled(ctx, att, slow, false, e);
      return;
    }
    void running.then(
      (v) => this.attemptSettled(ctx, att, slow, true, v),
      (e: unknown) => this.attemptSettled(ctx, att, slow, false, e),
    );
  }

  /** The attempt settled (its handler answered, or it was aborted): its slot, its files, and its outcome reported. */
  private attemptSettled(ctx: RunCtx, att: Attempt, slow: AbortController | undefined, ok: boolean, value: unknown): void {
    try {
      att.settled = true;
      att.timeoutCtl?.abort();
      slow?.abort();
      if (ctx.attempts.get(att.key) === att) ctx.attempts.delete(att.key);
      if (att.suspendedOn === undefined) this.releaseSlot(ctx, att);
      // output files held for the outcome (files.ts): synced once it is committed and accepted, else dropped
      const held = att.heldFiles;
      att.heldFiles = undefined;
      // a crashed worker is a process that died: its roots stay, as a dead process leaves them
      if (this.crashed !== undefined) return;
      if (att.abortReason instanceof StopSignal) {
        if (held) this.filesJob(ctx, held.discard());
        this.kick();
        return; // the task moved on: this attempt's outcome is not wanted
      }
      if (att.handlerDone) this.report(ctx, att, ok, value, held);
      else void this.reportOnceSettled(ctx, att, ok, value, held);
    } catch (e) {
      this.crash(e);
    }
  }

  /**
   * An aborted attempt (its timeout) settles before its agent's code: code that honours its signal
   * settles within a turn or two of the event loop; code still running then holds its task's retry
   * for this worker (`settlingMs`), so that no other worker starts it while this code runs on.
   */
  private async reportOnceSettled(ctx: RunCtx, att: Attempt, ok: boolean, value: unknown, held: HeldFiles | undefined): Promise<void> {
    try {
      await Promise.race([att.finished, new Promise<void>((r) => setImmediate(() => setImmediate(r)))]);
      if (this.crashed !== undefined) return;
      this.report(ctx, att, ok, value, held);
    } catch (e) {
      this.crash(e);
    }
  }

  /** Warns (`EstimateExceeded`) when the attempt still runs at twice its contract's estimate; the controller stops the watch. */
  private watchEstimate(ctx: RunCtx, att: Attempt, estimateMs: number): AbortController {
    const slow = new AbortController();
    this.clock.sleep(2 * estimateMs, slow.signal).then(
      () => {
        if (!att.settled) this.note(ctx, { kind: 'warn', phase: att.key, attempt: att.attempt, code: 'EstimateExceeded', message: `the attempt has run for ${2 * estimateMs} ms, twice its contract's estimated time`, details: { estimated_ms: estimateMs } });
      },
      () => undefined,
    );
    return slow;
  }

  /** The attempt's outcome, from what its handler returned or threw, as a fact for the next commit (with the output files it holds). */
  private report(ctx: RunCtx, att: Attempt, ok: boolean, value: unknown, held: HeldFiles | undefined): void {
    const outcome = toOutcome(ok, value);
    this.fault('attempt.after-return');
    const fact: Extract<Fact, { kind: 'outcome' }> = { kind: 'outcome', phase: att.key, attempt: att.attempt, worker: this.id, outcome };
    if (held && outcome.ok) fact.files = held.files;
    if (!att.handlerDone && !outcome.ok && this.abortGraceMs > 0) fact.settlingMs = this.abortGraceMs;
    if (held) {
      if (outcome.ok && !ctx.ended) ctx.held.set(fact, held);
      else this.filesJob(ctx, held.discard());
    }
    this.note(ctx, fact);
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
    ctx.busy.add(att.key);
    const grace = new AbortController();
    // a stopped worker waits for nobody: the grace timer must not keep the process alive. The graces are
    // kept in a set that one listener ends (graceOf), not a listener each: a run timeout or a cancel of
    // dozens of attempts that do not stop at once printed Node's MaxListenersExceededWarning
    this.graceOf(grace);
    void att.finished.then(() => this.graces.delete(grace));
    const free = (): void => {
      if (ctx.busy.has(att.key) && ![...ctx.attempts.values()].some((a) => a.key === att.key && a !== att)) ctx.busy.delete(att.key);
    };
    this.clock.sleep(this.abortGraceMs, grace.signal).then(
      () => {
        if (att.handlerDone || this.crashed !== undefined) return;
        this.note(ctx, { kind: 'warn', phase: att.key, attempt: att.attempt, code: 'AbortIgnored', message: `the agent ignored its abort signal for ${this.abortGraceMs} ms and is still running; its slot stays taken until it returns`, details: { grace_ms: this.abortGraceMs } });
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
  protected override armTimeout(att: Attempt): void {
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

  protected override ensureHeartbeat(): void {
    if (this.heartbeat) return;
    this.heartbeat = this.beat().finally(() => {
      this.heartbeat = undefined;
    });
  }

  /**
   * Renews the leases of running attempts every third of the lease; a lost lease stops its attempt.
   *
   * A lease this worker could not renew (the store away, a partition) is given up before it runs out:
   * once it has, any other worker may take the task over and run its next attempt, so an attempt still
   * running here would run beside it (two executions of one task at once; the outcome recorded as stale).
   * So the heartbeat also wakes for the earliest lease it holds unrenewed, and a renewal that hangs is not
   * waited on past it: the attempt is aborted and handed back (fenced by this worker's lease, so a
   * takeover that came first wins) a margin before its lease runs out, as a remote agent's is.
   */
  private async beat(): Promise<void> {
    let renewAt = this.mono() + this.leaseMs / 3;
    while (this.crashed === undefined && !this.closed) {
      if (!this.holdsAttempts() && this.active === 0) return;
      try {
        await this.clock.sleep(Math.max(0, Math.min(renewAt - this.mono(), this.lapseAt() - this.fastNow())), this.idleCtl.signal);
      } catch {
        return;
      }
      if (this.mono() >= renewAt) {
        renewAt = this.mono() + this.leaseMs / 3;
        // the attempts running now, in a call of its own: what the loop waits with keeps no attempt that ended
        await this.renewUntilLapse();
      }
      this.dropLapsed();
    }
  }

  /** Until when (store time) each attempt's lease is known to be held by a renewal that got through (its claim's lease before one). */
  private readonly renewedUntil = new WeakMap<Attempt, number>();
  private renewing: Promise<void> | undefined;

  /** How long before its lease runs out an attempt whose lease could not be renewed is given up. */
  private lapseMargin(): number {
    return Math.min(this.leaseMs / 10, 1_000);
  }

  /** The lease of attempt `a` as this worker knows it was granted (store time), or undefined when it holds none here. */
  private leaseOf(ctx: RunCtx, a: Attempt): number | undefined {
    if (a.settled || a.suspendedOn !== undefined || a.abortReason !== undefined) return undefined;
    const p = ctx.state.phases.get(a.key);
    const claimed = p && p.attempts === a.attempt && p.leaseOwner === this.id ? p.leaseExpiresAt : undefined;
    const renewed = this.renewedUntil.get(a);
    if (claimed === undefined) return renewed;
    return renewed === undefined ? claimed : Math.max(claimed, renewed);
  }

  /** When (store time) the first lease held here must be given up unless renewed before; Infinity: none. */
  private lapseAt(): number {
    let t = Infinity;
    for (const ctx of this.runs.values()) {
      for (const a of ctx.attempts.values()) {
        const l = this.leaseOf(ctx, a);
        if (l !== undefined && l < t) t = l;
      }
    }
    return t - this.lapseMargin();
  }

  /** A renewal, waited on no longer than the first lease it should save (one that hangs goes on alone). */
  private async renewUntilLapse(): Promise<void> {
    this.renewing ??= this.renew().finally(() => (this.renewing = undefined));
    const wait = this.lapseAt() - this.fastNow();
    if (wait === Infinity) return this.renewing;
    const ctl = new AbortController();
    const onStop = (): void => ctl.abort();
    this.idleCtl.signal.addEventListener('abort', onStop, { once: true });
    try {
      await Promise.race([this.renewing, this.clock.sleep(Math.max(0, wait), ctl.signal).catch(() => undefined)]);
    } finally {
      ctl.abort();
      this.idleCtl.signal.removeEventListener('abort', onStop);
    }
  }

  /** Attempts whose lease is about to run out unrenewed: aborted, and their tasks handed back (see beat). */
  private dropLapsed(): void {
    if (this.crashed !== undefined || this.closed) return;
    const now = this.fastNow() + this.lapseMargin();
    let dropped = false;
    for (const ctx of this.runs.values()) {
      if (ctx.ended) continue;
      for (const a of [...ctx.attempts.values()]) {
        const l = this.leaseOf(ctx, a);
        if (l === undefined || l > now) continue;
        if (!ctx.facts.some((f) => f.kind === 'lease_expired' && f.phase === a.key && f.attempt === a.attempt)) ctx.facts.push({ kind: 'lease_expired', phase: a.key, attempt: a.attempt, owner: this.id, handBack: true });
        a.abort(new StopSignal('its lease could not be renewed (the store did not answer) and ran out: another worker may run the task now', true));
        dropped = true;
      }
    }
    if (dropped) this.kick();
  }

  private holdsAttempts(): boolean {
    for (const ctx of this.runs.values()) for (const a of ctx.attempts.values()) if (a.suspendedOn === undefined) return true;
    return false;
  }

  private async renew(): Promise<void> {
    const held: { runId: string; phase: string; attempt: number }[] = [];
    const byKey = new Map<string, Attempt>();
    for (const ctx of this.runs.values()) {
      for (const a of ctx.attempts.values()) {
        if (a.suspendedOn !== undefined) continue;
        held.push({ runId: ctx.runId, phase: a.key, attempt: a.attempt });
        byKey.set(`${ctx.runId}\u0000${a.key}`, a);
      }
    }
    if (held.length === 0) return;
    try {
      // in the store's clock (the database's on PostgreSQL), like every lease comparison
      const until = this.storeNow() + this.leaseMs;
      const lost = await this.track(this.store.renewLeases(this.id, until, held), true);
      const gone = new Set(lost.map((l) => `${l.runId}\u0000${l.phase}`));
      for (const [k, a] of byKey) if (!gone.has(k)) this.renewedUntil.set(a, until);
      for (const l of lost) {
        const a = byKey.get(`${l.runId}\u0000${l.phase}`);
        // a task claimed in this very transaction may not show as running in the store yet: only stop attempts that started before
        if (a && !a.settled && a.attempt === l.attempt) {
          const ctx = this.runs.get(l.runId);
          const p = ctx?.state.phases.get(l.phase);
          if (!p || p.status !== 'running' || p.leaseOwner !== this.id || p.attempts !== l.attempt) a.abort(new StopSignal('the lease was lost', true));
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


  // ---- AttemptHost ------------------------------------------------------------------------------

  cost(att: Attempt, usd: number): void {
    const ctx = this.runs.get(att.runId);
    if (ctx) this.note(ctx, { kind: 'cost', phase: att.key, attempt: att.attempt, usd });
  }

  log(att: Attempt, message: string): void {
    const ctx = this.runs.get(att.runId);
    if (ctx) this.note(ctx, { kind: 'log', phase: att.key, attempt: att.attempt, message });
  }

  record(att: Attempt, kind: string, data: JsonObject): void {
    const ctx = this.runs.get(att.runId);
    if (!ctx) return;
    // a declared output file the attempt did not produce (agents/provenance.ts) is a warning users see
    if (kind === 'declared_file_missing') {
      const path = typeof data['path'] === 'string' ? data['path'] : '?';
      this.note(ctx, { kind: 'warn', phase: att.key, attempt: att.attempt, code: 'DeclaredFileMissing', message: `declared output file \`${path}\` was not produced`, details: data });
      return;
    }
    this.note(ctx, { kind: 'record', phase: att.key, attempt: att.attempt, event: kind, data });
  }

  file(att: Attempt, p: FileProvenance): void {
    const ctx = this.runs.get(att.runId);
    if (ctx) this.note(ctx, { kind: 'file', phase: att.key, attempt: att.attempt, file: p });
  }

  sibling(att: Attempt, phase: string): JsonObject | undefined {
    const ctx = this.runs.get(att.runId);
    if (!ctx) return undefined;
    const out = ctx.state.phases.get(phase)?.output;
    if (!att.settled) this.note(ctx, { kind: 'sibling', phase: att.key, attempt: att.attempt, sibling: phase, found: out !== undefined });
    return out === undefined ? undefined : cloneJson(out);
  }

  trace(att: Attempt): AttemptTrace | undefined {
    const ctx = this.runs.get(att.runId);
    const t = this.opts.telemetry;
    return ctx && t ? t.attempt(ctx.record, { runId: att.runId, key: att.key, phase: att.phase, taskId: att.taskId, attempt: att.attempt, agent: att.agent, item: att.item }) : undefined;
  }

  remainingBudget(att: Attempt): number | undefined {
    const ctx = this.runs.get(att.runId);
    return ctx ? remainingBudget(ctx.plan, ctx.state, att.key, pendingCosts(ctx)) : undefined;
  }

  async checkpoint(att: Attempt, value: Json): Promise<void> {
    const ctx = this.runs.get(att.runId);
    if (!ctx) throw new StopSignal('the run is gone');
    const r = await this.push(ctx, { kind: 'checkpoint', phase: att.key, attempt: att.attempt, value });
    if (r.kind !== 'checkpoint' || !r.ok) throw new StopSignal('the attempt no longer holds its task: the checkpoint was not saved');
  }

  /**
   * One question at a time: a second `requestInput` while the first waits is refused with
   * `InvalidInputRequest` (the engine records one open question per attempt; the second was refused
   * as if the attempt had lost its task, a StopSignal, and a remote agent was told its task had ended).
   */
  async requestInput(att: Attempt, req: InputRequest): Promise<Json> {
    if (att.asking) throw new AgentError('InvalidInputRequest', 'this attempt has a question not answered yet: ask one question at a time (await the answer first)', {}, false);
    att.asking = true;
    try {
      return await this.askInput(att, req);
    } finally {
      att.asking = false;
    }
  }

  private async askInput(att: Attempt, req: InputRequest): Promise<Json> {
    const ctx = this.runs.get(att.runId);
    if (!ctx) throw new StopSignal('the run is gone');
    const index = att.inputIndex++;
    // the question is a wait for a human from the moment it is asked: the phase timeout stops while it is
    // recorded, so a store that is away meanwhile cannot time the attempt out behind a gate that then opens
    // (its outcome would come after the gate and be stale, the attempt gone and the task waiting for good)
    this.pauseTimeout(att);
    const r = await this.push(ctx, {
      kind: 'request_input',
      phase: att.key,
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
    if (r.answered) {
      // answered already (an attempt that replaces one that asked): the agent's time runs on
      if (att.timeoutLeft !== undefined && !att.settled) this.armTimeout(att);
      return cloneJson(r.value ?? null);
    }
    // suspended: no slot, no lease, no phase timeout (paused as it asked), until the answer comes (reconcile() resumes it)
    att.suspendedOn = r.gateId;
    this.active--;
    this.kick();
    return new Promise<Json>((resolve, reject) => {
      att.answer = resolve;
      const prev = att.signal;
      prev.addEventListener('abort', () => reject(prev.reason), { once: true });
    });
  }
}

/** Costs reported in this run whose commit has not put them in its state yet: queued, or in a commit not decided yet. */
function* pendingCosts(ctx: RunCtx): Generator<{ phase: string; usd: number }> {
  for (const list of [ctx.facts, ctx.deciding ?? []]) for (const f of list) if (f.kind === 'cost') yield f;
}

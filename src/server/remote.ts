/**
 * Remote agents, server side: an agent served remotely (`x-remote: true`, `baton serve --remote ID`)
 * is bound in the server's engine to a handler that computes nothing. The server's worker claims its
 * tasks as it claims any task (a committed `task.claimed` with a lease, renewed by the worker's
 * heartbeats, fenced like every claim); the handler then parks the attempt here, in its agent's queue,
 * and returns a promise that the HTTP routes (agents.ts) settle when a remote agent claims the task,
 * completes or fails it.
 *
 * Invariants:
 * - A parked attempt is the engine's attempt: its outcome is what its handler's promise settles to, so
 *   an outcome counts only if the engine commits it under the attempt's own lease. A remote agent
 *   never writes to the store.
 * - A token names one attempt. It stops working (409) the moment the attempt ends, whatever ended it:
 *   a completion, a failure, a hand-back, the attempt's AbortSignal (cancel, timeout, lost lease,
 *   worker stop). Settling is synchronous after the token is looked up, so two completions of one
 *   token cannot both pass: one settles, the other finds it ended.
 * - A remote agent that stops heartbeating for `leaseMs` loses the task: it is handed back to the
 *   engine (`task.lease_expired`, as for a worker that died), and a new attempt is claimed and parked.
 */
import { createHmac, randomFillSync, timingSafeEqual } from 'node:crypto';
import type { Json, JsonObject } from '../core/json.js';
import { AgentError, type AgentContext, type AgentHandler } from '../engine/agent.js';
import { Attempt, neverHoldsThread } from '../engine/attempt.js';
import { BoundedMap } from '../core/lru.js';
import type { RunEvent } from '../engine/events.js';
import type { RunRecord } from '../engine/ports.js';
import { type RunState } from '../engine/state.js';
import { roundUsd } from '../engine/result.js';
import { DEFAULT_LEASE_MS } from '../engine/worker-base.js';
import { stagedFilesOf, type StagedFiles } from '../engine/files.js';
import type { PhaseModel, WorkflowModel } from '../workflow/model.js';
import { ClaimRejections, type ClaimRejection } from './remote-rejections.js';
import { filesView, servedFiles, type RemoteFilesView } from './remote-files.js';

export interface RemoteAgentsOptions {
  /** Agents served remotely whatever the workflow declares (`baton serve --remote ID`). */
  agents?: readonly string[] | undefined;
  /** How long a claimed task may go without a heartbeat from its remote agent before it is handed back (default 30 s). */
  leaseMs?: number | undefined;
  /** How many ended tokens are remembered, to answer them with why they ended (default 10,000). */
  remember?: number | undefined;
  /**
   * Group commit: how long (ms) an outcome may wait for the outcomes of the other tasks remote agents
   * hold, so that the worker commits them in one transaction (default 2; 0: only those that arrive in
   * the same turn of the event loop). An outcome never waits when no other task is held remotely.
   */
  settleMs?: number | undefined;
}

/** What a remote agent is told about a task it took (the claim's answer). */
export interface RemoteTaskView {
  token: string;
  task_id: string;
  run_id: string;
  phase: string;
  attempt: number;
  agent: string;
  input: JsonObject;
  initial_state: JsonObject;
  idempotency_key: string;
  input_response?: Json;
  last_checkpoint?: Json;
  /** A fan-out (`for_each`) item: its 0-based index and element (the agent's `ctx.item`). */
  item?: { index: number; value: Json };
  /** What the attempt may still spend (USD) before a phase or run budget is exceeded, as of the claim; absent without a budget. */
  remaining_budget_usd?: number;
  lease_ms: number;
  lease_expires_at: number;
  /** W3C traceparent of the attempt's span (when the server traces): the remote agent's spans are its children. */
  traceparent?: string;
  /** The attempt's AIP-16 files (remote-files.ts): the inputs to fetch, the outputs it may send back. */
  files?: RemoteFilesView;
}

interface InputSlot {
  answered: boolean;
  value?: Json;
  error?: unknown;
  waiters: (() => void)[];
}

export type EndStatus = 'completed' | 'failed' | 'released' | 'lost' | 'aborted';

/** A parked attempt. */
export interface RemoteTask {
  /** Its fencing token; a new one when a claim whose answer was never read puts it back (unclaim). */
  token: string;
  readonly agent: string;
  readonly ctx: AgentContext;
  /** The task's key in the run: its phase, or `phase[index]` for a fan-out item (what the engine's events and commands name). */
  readonly key: string;
  readonly phase: PhaseModel;
  /** Agents the phase's `permissions.delegate.to` names: their `agent:<id>` keys may take it too. */
  readonly delegatedTo: readonly string[];
  state: 'queued' | 'claimed' | 'ended';
  /** The last sign of life from its agent, on the monotonic clock (performance.now()). */
  lastBeat: number;
  /** Whether its token came back since it was last claimed (then the claim's answer was read). */
  touched?: boolean;
  /** The claim id it was handed to, while its token has not come back (RemoteAgents.cancelClaim). */
  claimId?: string | undefined;
  inputs: InputSlot[];
  /** Open `/input` polls: the agent is waiting on a human, so a missing heartbeat is not a death. */
  polls: number;
  /** The attempt's AIP-16 files, staged by the engine in the server's root, when it has any (remote-files.ts). */
  readonly files: StagedFiles | undefined;
  /** Uploads of its output files in flight, with when each last received bytes: its completion waits for those that move. */
  uploads?: Map<Promise<unknown>, { lastByteAt: number }>;
  settle: (ok: boolean, value: unknown) => void;
}

/** Why a token no longer works. */
export interface EndedTask {
  runId: string;
  phase: string;
  attempt: number;
  agent: string;
  delegatedTo: readonly string[];
  status: EndStatus;
  reason: string;
}

/** What a claim gets: a task, or a task of its agent the engine refused at claim time (remote-rejections.ts). */
export type ClaimAnswer = RemoteTask | ClaimRejection;

/** Who a claim may take: checked against a task's or a rejection's delegates. */
export type ClaimMay = (t: { readonly delegatedTo: readonly string[] }) => boolean;

interface Waiter {
  may: ClaimMay;
  take: (t: ClaimAnswer | undefined) => void;
}

/** What the hub needs from the engine it serves (set by the server app: `attach`). */
export interface RemoteEngineSide {
  /** Hands an attempt back to the store (task.lease_expired): false when the worker no longer holds the run. */
  handBack(runId: string, phase: string, attempt: number): Promise<boolean>;
}

const COMMIT_WAIT_MS = 10_000;

/** A completion waiting for its commit (RemoteAgents.committed): `resolve` is cleared once it was answered. */
interface CommitWait {
  key: string;
  at: number;
  resolve: ((status: string) => void) | undefined;
}

/**
 * A task's fencing token (unguessable: it is the task's only credential besides the agent key):
 * `rt_RANDOM.ATTEMPT.MAC`, where ATTEMPT names the run, the task, the attempt and the agent, and MAC
 * is an HMAC of both under the hub's secret (startServer derives it from the server's keys). A token
 * from before a restart is then no longer live, but it still says which attempt it was, and only this
 * server (with the same keys) could have made it: its late outcome is recorded on that run
 * (`task.stale_outcome`), as a late outcome of a live server's ended token is (issue 17).
 */
function newToken(secret: Buffer, runId: string, key: string, attempt: number, agent: string): string {
  // from a pool the CSPRNG fills 4 KiB at a time: one call into it per 227 tokens, not one per task
  if (poolAt + TOKEN_BYTES > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const random = pool.toString('base64url', poolAt, poolAt + TOKEN_BYTES);
  poolAt += TOKEN_BYTES;
  const named = Buffer.from(JSON.stringify([runId, key, attempt, agent])).toString('base64url');
  return `rt_${random}.${named}.${tokenMac(secret, random, named)}`;
}
const TOKEN_BYTES = 18;
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function tokenMac(secret: Buffer, random: string, named: string): string {
  return createHmac('sha256', secret).update(random).update('.').update(named).digest().subarray(0, 16).toString('base64url');
}

/** The attempt a token of this hub's secret names (one from before a restart too); undefined for any other string. */
export function attemptOfToken(secret: Buffer, token: string): { runId: string; key: string; attempt: number; agent: string } | undefined {
  const m = /^rt_([A-Za-z0-9_-]{16,64})\.([A-Za-z0-9_-]{1,4096})\.([A-Za-z0-9_-]{22})$/.exec(token);
  if (!m) return undefined;
  const want = Buffer.from(tokenMac(secret, m[1]!, m[2]!));
  const got = Buffer.from(m[3]!);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return undefined;
  try {
    const v = JSON.parse(Buffer.from(m[2]!, 'base64url').toString('utf8')) as unknown;
    if (!Array.isArray(v) || v.length !== 4) return undefined;
    const [runId, key, attempt, agent] = v as unknown[];
    if (typeof runId !== 'string' || typeof key !== 'string' || !Number.isSafeInteger(attempt) || typeof agent !== 'string') return undefined;
    return { runId, key, attempt: attempt as number, agent };
  } catch {
    return undefined;
  }
}

/** The secret of a hub's tokens from a server's keys: the same keys, the same secret, across restarts. */
export function tokenSecretOf(keyHashes: readonly Buffer[]): Buffer {
  const h = createHmac('sha256', 'baton remote task tokens');
  for (const k of [...keyHashes].sort((a, b) => Buffer.compare(a, b))) h.update(k);
  return h.digest();
}

export class RemoteAgents {
  readonly leaseMs: number;
  private readonly fixed: ReadonlySet<string>;
  private readonly queues = new Map<string, RemoteTask[]>();
  private readonly waiters = new Map<string, Waiter[]>();
  private readonly live = new Map<string, RemoteTask>();
  /** Why recent tokens ended (the last `remember`), to answer a late call with it. */
  private readonly ended: BoundedMap<string, EndedTask>;
  private readonly settleMs: number;
  /** Tasks handed to remote agents and not ended: the outcomes that may come soon. */
  private held = 0;
  private readonly commits = new Map<string, ((status: string) => void)[]>();
  /** Agents that phases delegate to, per agent (from the workflows bound so far). */
  private readonly delegates = new Map<string, Set<string>>();
  /** Long polls by claim id (the agent's own), to cancel; the tasks handed to recent claim ids; ids cancelled. */
  private readonly polls = new Map<string, () => void>();
  private readonly handed: BoundedMap<string, RemoteTask>;
  private readonly cancelled: BoundedMap<string, true>;
  private engine: RemoteEngineSide | undefined;
  /** Claim-time rejections of remote agents' tasks, waiting for a claim of their agent. */
  private readonly rejections: ClaimRejections;
  private observed = false;
  private closed = false;
  /** What a token's MAC is keyed with (startServer sets it from the server's keys; tokenSecretOf). */
  private secret: Buffer = tokenSecretOf([]);

  constructor(opts: RemoteAgentsOptions = {}) {
    this.fixed = new Set(opts.agents ?? []);
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    const remember = opts.remember ?? 10_000;
    this.ended = new BoundedMap(remember);
    this.handed = new BoundedMap(remember);
    this.cancelled = new BoundedMap(remember);
    this.settleMs = Math.max(0, opts.settleMs ?? 2);
    this.rejections = new ClaimRejections(this.leaseMs);
  }

  /** The agents served remotely for a workflow: `--remote` ones it uses, and those it declares `x-remote: true`. */
  remoteAgentsOf(model: WorkflowModel): string[] {
    const ids = new Set<string>();
    for (const [id, d] of Object.entries(model.agents ?? {})) if (d.extensions['x-remote'] === true) ids.add(id);
    for (const p of model.phases) {
      for (const a of [p.assign, p.retry.fallbackAgent]) if (a !== undefined && this.fixed.has(a)) ids.add(a);
    }
    return [...ids];
  }

  /** Pass as createEngine's `bindRun`: binds each remote agent of a run's workflow to a parking handler. */
  readonly bindRun = (record: RunRecord, model: WorkflowModel): Promise<Record<string, AgentHandler>> => {
    const out: Record<string, AgentHandler> = {};
    const remote = this.remoteAgentsOf(model);
    this.rejections.learn(record.workflowHash, model, remote);
    for (const id of remote) {
      out[id] = this.handler(id, model);
      for (const p of model.phases) {
        if (p.assign !== id) continue;
        const set = this.delegates.get(id) ?? new Set<string>();
        for (const d of p.permissions?.delegate?.to ?? []) set.add(d);
        this.delegates.set(id, set);
      }
    }
    return Promise.resolve(out);
  };

  /** Pass to createEngine's `onEvent` (with any other observer): a completion then answers once the engine committed it. */
  readonly onEvent = (e: RunEvent, state: RunState): void => {
    this.observed = true;
    const rejected = this.rejections.heard(e, state);
    if (rejected) this.offerRejection(rejected);
    if (e.type !== 'task.completed' && e.type !== 'task.rejected' && e.type !== 'task.attempt_failed' && e.type !== 'task.stale_outcome' && e.type !== 'task.lease_expired') return;
    this.told(`${state.runId}\u0000${e.phase}\u0000${e.attempt}`, e.type === 'task.completed' ? 'completed' : e.type === 'task.rejected' ? 'rejected' : e.type === 'task.attempt_failed' ? 'failed' : e.type === 'task.lease_expired' ? 'released' : 'stale');
  };

  private told(key: string, status: string): void {
    const list = this.commits.get(key);
    if (!list) return;
    this.commits.delete(key);
    for (const f of list) f(status);
  }

  /** The server app gives the hub its engine side (hand-backs). */
  attach(engine: RemoteEngineSide): void {
    this.engine = engine;
  }

  /** The secret of the tokens made from now on (startServer: from its keys, so that a restart with them reads its old tokens). */
  useTokenSecret(secret: Buffer): void {
    this.secret = secret;
  }

  /** The attempt an unknown token names when this hub's secret made it (a token from before a restart). */
  attemptOfToken(token: string): { runId: string; key: string; attempt: number; agent: string } | undefined {
    return attemptOfToken(this.secret, token);
  }

  /** Agents a phase of `agent` delegates to (for the claim route's role check). */
  delegatesOf(agent: string): string[] {
    return [...(this.delegates.get(agent) ?? [])];
  }

  private handler(agent: string, model: WorkflowModel): AgentHandler {
    // the outcome comes from an HTTP request, never from code that held this thread: no wait for a poll (attempt.ts)
    return neverHoldsThread((ctx) =>
      new Promise<unknown>((resolve, reject) => {
        const pm = model.byName.get(ctx.phase);
        if (!pm) {
          reject(new AgentError('RemoteAgentUnknownPhase', `phase ${ctx.phase} is not in the workflow`, {}, false));
          return;
        }
        const key = taskKeyOf(ctx);
        const task: RemoteTask = {
          token: newToken(this.secret, ctx.runId, key, ctx.attempt, agent),
          agent,
          ctx,
          key,
          phase: pm,
          delegatedTo: pm.permissions?.delegate?.to ?? [],
          state: 'queued',
          lastBeat: performance.now(),
          inputs: [],
          polls: 0,
          files: servedFiles(stagedFilesOf(ctx)),
          settle: (ok, value) => (ok ? resolve(value) : reject(value)),
        };
        // whatever ends the attempt (cancel, timeout, lost lease, worker stop, a hand-back), the handler settles
        const watching = onAbort(ctx, (reason) => {
          this.retire(task, 'aborted', reasonText(reason));
          task.settle(false, reason);
          // an outcome given just before (not settled yet) is not wanted any more: its caller hears it now
          this.told(`${ctx.runId}\u0000${task.key}\u0000${ctx.attempt}`, 'aborted');
        });
        if (!watching) {
          reject(ctx instanceof Attempt ? ctx.abortReason : ctx.signal.reason);
          return;
        }
        this.live.set(task.token, task);
        this.offer(task);
      }),
    );
  }

  /** A parked task goes to the first waiting claim that may take it, else to its agent's queue. */
  private offer(task: RemoteTask): void {
    if (this.closed) {
      void this.giveBack(task, 'released', 'the server is stopping: the task was handed back before an agent claimed it');
      return;
    }
    const ws = this.waiters.get(task.agent) ?? [];
    const i = ws.findIndex((w) => w.may(task));
    if (i >= 0) {
      const [w] = ws.splice(i, 1);
      this.claimed(task);
      w!.take(task);
      return;
    }
    const q = this.queues.get(task.agent) ?? [];
    q.push(task);
    this.queues.set(task.agent, q);
  }

  /** A claim-time rejection goes to the first waiting claim that may hear of it, else waits for the next (for a lease). */
  private offerRejection(r: ClaimRejection): void {
    const ws = this.waiters.get(r.agent) ?? [];
    const i = ws.findIndex((w) => w.may(r));
    if (i >= 0) {
      const [w] = ws.splice(i, 1);
      w!.take(r);
      return;
    }
    this.rejections.keep(r);
  }

  /**
   * A claim: a task of `agent` the engine refused at claim time (remote-rejections.ts), else a queued
   * task of `agent` that `may` allows, at once or within `waitMs` (undefined: none came). `signal` ends
   * the wait (the client went away).
   */
  claim(agent: string, may: ClaimMay, waitMs: number, signal?: AbortSignal, claimId?: string): Promise<ClaimAnswer | undefined> {
    if (claimId !== undefined && this.cancelled.has(claimId)) return Promise.resolve(undefined);
    const rejected = this.rejections.take(agent, may);
    if (rejected) return Promise.resolve(rejected);
    const q = this.queues.get(agent) ?? [];
    const i = q.findIndex((t) => t.state === 'queued' && may(t));
    if (i >= 0) {
      const [t] = q.splice(i, 1);
      this.claimed(t!);
      this.handedTo(claimId, t!);
      return Promise.resolve(t);
    }
    if (waitMs <= 0 || this.closed || signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const ws = this.waiters.get(agent) ?? [];
      this.waiters.set(agent, ws);
      const done = (t: ClaimAnswer | undefined): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', gone);
        if (claimId !== undefined) this.polls.delete(claimId);
        if (t && !isRejection(t)) this.handedTo(claimId, t);
        resolve(t);
      };
      const waiter: Waiter = { may, take: done };
      const drop = (): void => {
        const j = ws.indexOf(waiter);
        if (j >= 0) ws.splice(j, 1);
      };
      const gone = (): void => {
        drop();
        done(undefined);
      };
      const timer = setTimeout(gone, waitMs);
      signal?.addEventListener('abort', gone, { once: true });
      if (claimId !== undefined) this.polls.set(claimId, gone);
      ws.push(waiter);
    });
  }

  /** Kept only until the task's token comes back or the task ends (forgetHanded): the map holds no done work. */
  private handedTo(claimId: string | undefined, t: RemoteTask): void {
    if (claimId === undefined) return;
    t.claimId = claimId;
    this.handed.set(claimId, t);
  }

  private forgetHanded(t: RemoteTask): void {
    if (t.claimId === undefined) return;
    if (this.handed.get(t.claimId) === t) this.handed.delete(t.claimId);
    t.claimId = undefined;
  }

  /**
   * A remote agent that stops cancels its long poll by the claim id it sent, after it gave up on the
   * answer: a poll still waiting ends (204), a later claim with that id gets nothing, and a task handed
   * to it whose token never came back goes back to the queue at once, the same attempt under a new token,
   * rather than wait out a lease held by nobody. Whether a task was put back.
   */
  cancelClaim(claimId: string): { requeued: boolean } {
    this.cancelled.set(claimId, true);
    this.polls.get(claimId)?.();
    const t = this.handed.get(claimId);
    this.handed.delete(claimId);
    if (t) t.claimId = undefined;
    if (!t || t.state !== 'claimed' || t.touched) return { requeued: false };
    this.watched.delete(t);
    // the old token is told apart from the new one: a late use of it gets 409
    this.live.delete(t.token);
    this.ended.set(t.token, { runId: t.ctx.runId, phase: t.key, attempt: t.ctx.attempt, agent: t.agent, delegatedTo: t.delegatedTo, status: 'released', reason: 'its claim was cancelled before the answer was read' });
    t.token = newToken(this.secret, t.ctx.runId, t.key, t.ctx.attempt, t.agent);
    this.live.set(t.token, t);
    t.state = 'queued';
    this.held--;
    this.offer(t);
    return { requeued: true };
  }

  private claimed(t: RemoteTask): void {
    t.state = 'claimed';
    t.touched = false;
    this.held++;
    t.lastBeat = performance.now();
    this.watch(t);
  }

  /**
   * The remote agent's liveness: no heartbeat (nor open input poll) for leaseMs hands the task back. One
   * timer for every claimed task, armed for the earliest lease end (a timer made and cleared per task
   * cost more than the rest of the hub's work for a completion); a task's beats only move its lease later.
   */
  private watch(t: RemoteTask): void {
    this.watched.add(t);
    this.armWatch(t.lastBeat + this.leaseMs);
  }

  private readonly watched = new Set<RemoteTask>();
  private watchTimer: NodeJS.Timeout | undefined;
  private watchAt = Infinity;

  private armWatch(at: number): void {
    if (at >= this.watchAt) return;
    clearTimeout(this.watchTimer);
    this.watchAt = at;
    this.watchTimer = setTimeout(() => this.leasesDue(), Math.max(1, at - performance.now()));
    this.watchTimer.unref?.();
  }

  private leasesDue(): void {
    this.watchTimer = undefined;
    this.watchAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const t of this.watched) {
      if (t.state !== 'claimed') {
        this.watched.delete(t);
        continue;
      }
      if (now - t.lastBeat >= this.leaseMs) {
        if (t.polls > 0 || t.inputs.some((s) => !s.answered)) t.lastBeat = now;
        else {
          this.watched.delete(t);
          void this.lose(t);
          continue;
        }
      }
      next = Math.min(next, t.lastBeat + this.leaseMs);
    }
    if (next !== Infinity) this.armWatch(next);
  }

  private lose(t: RemoteTask): Promise<void> {
    return this.giveBack(t, 'lost', `the remote agent sent no heartbeat for ${this.leaseMs} ms: the task was handed back`);
  }

  /**
   * Hands the attempt back to the engine (task.lease_expired: the task is ready again, no retry
   * spent), as a worker that dies or stops does. The hand-back aborts the attempt, whose signal
   * settles the handler; if the engine could not take it back, the attempt fails, retryable.
   */
  async giveBack(t: RemoteTask, status: 'lost' | 'released', reason: string): Promise<void> {
    const { runId, attempt } = t.ctx;
    const phase = t.key;
    // ended first: a late completion of this token is refused from now on
    this.retire(t, status, reason);
    let handed = false;
    try {
      handed = (await this.engine?.handBack(runId, phase, attempt)) ?? false;
    } catch {
      handed = false;
    }
    const fail = (): void => t.settle(false, new AgentError(status === 'lost' ? 'RemoteAgentLost' : 'RemoteAgentReleased', reason, { lease_ms: this.leaseMs }, true));
    if (!handed) fail();
    else setTimeout(fail, 1000).unref?.(); // a no-op once the hand-back aborted the attempt
  }

  /** Looks up a live token (its use: the claim's answer was read). */
  task(token: string): RemoteTask | undefined {
    const t = this.peek(token);
    if (t) this.used(t);
    return t;
  }

  /** Looks up a live token without counting it as used (the key presenting it is checked first). */
  peek(token: string): RemoteTask | undefined {
    const t = this.live.get(token);
    return t && t.state === 'claimed' ? t : undefined;
  }

  /** The token came back from the agent it was handed to: a cancel of its claim no longer takes the task back. */
  used(t: RemoteTask): void {
    t.touched = true;
    this.forgetHanded(t);
  }

  endedTask(token: string): EndedTask | undefined {
    return this.ended.get(token);
  }

  /** When the remote agent's lease ends, in wall-clock ms for the agent (lastBeat is monotonic: a step of the clock moves no lease). */
  private leaseEnd(t: RemoteTask): number {
    return Math.round(Date.now() + (t.lastBeat + this.leaseMs - performance.now()));
  }

  /** A heartbeat (or any request of the task's agent): the remote agent is alive. */
  beat(t: RemoteTask): number {
    t.lastBeat = performance.now();
    return this.leaseEnd(t);
  }

  /**
   * Settles the attempt: its output (already checked by the caller) or its failure. Synchronous: the
   * token ends here, before any other request can see it live.
   */
  end(t: RemoteTask, status: EndStatus, reason: string, ok: boolean, value: unknown): void {
    if (t.state === 'ended') return;
    this.retire(t, status, reason);
    this.settling.push(() => t.settle(ok, value));
    this.scheduleSettle();
  }

  private settling: (() => void)[] = [];
  private settleTimer: NodeJS.Timeout | undefined;
  private settleSoon: NodeJS.Immediate | undefined;

  /**
   * Group commit. Outcomes settle together, so that the worker commits them in one transaction (one
   * fsync on SQLite): those that arrive in one turn of the event loop (requests come one socket read
   * at a time, where attempts in process finish in one microtask run), and, while remote agents hold
   * other tasks, those that arrive within `settleMs` of the first. As soon as no task is held
   * remotely any more (every outcome expected is in) they settle at once: a lone agent never waits.
   */
  private scheduleSettle(): void {
    if (this.settling.length === 0) return;
    if (this.held === 0 || this.settleMs === 0) {
      this.settleSoon ??= setImmediate(() => this.settleAll());
      return;
    }
    this.settleTimer ??= setTimeout(() => this.settleAll(), this.settleMs);
  }

  private settleAll(): void {
    clearTimeout(this.settleTimer);
    if (this.settleSoon) clearImmediate(this.settleSoon);
    this.settleTimer = undefined;
    this.settleSoon = undefined;
    for (const f of this.settling.splice(0)) f();
  }

  private retire(t: RemoteTask, status: EndStatus, reason: string): void {
    if (t.state === 'ended') return;
    this.forgetHanded(t);
    const wasQueued = t.state === 'queued';
    if (t.state === 'claimed') this.held--;
    t.state = 'ended';
    this.watched.delete(t);
    this.live.delete(t.token);
    if (wasQueued) {
      const q = this.queues.get(t.agent);
      const i = q ? q.indexOf(t) : -1;
      if (i >= 0) q!.splice(i, 1);
    }
    for (const s of t.inputs) for (const w of s.waiters.splice(0)) w();
    // the last held task ended: outcomes waiting for company settle now
    if (this.held === 0) this.scheduleSettle();
    this.ended.set(t.token, { runId: t.ctx.runId, phase: t.key, attempt: t.ctx.attempt, agent: t.agent, delegatedTo: t.delegatedTo, status, reason });
  }

  /**
   * Resolves once the engine committed the outcome of this attempt (its event came to onEvent), with
   * what it became; 'unknown' when the hub sees no events or none came within 10 s.
   */
  committed(runId: string, phase: string, attempt: number): Promise<string> {
    if (!this.observed) return Promise.resolve('unknown');
    const key = `${runId}\u0000${phase}\u0000${attempt}`;
    return new Promise((resolve) => {
      const list = this.commits.get(key) ?? [];
      this.commits.set(key, list);
      const w: CommitWait = { key, at: performance.now() + COMMIT_WAIT_MS, resolve: undefined };
      const done = (status: string): void => {
        w.resolve = undefined;
        resolve(status);
      };
      w.resolve = done;
      list.push(done);
      // one timer for every wait, armed for the oldest (they end in the order they began): a timer made and
      // cleared per completion was more of the hub's work than the rest of it
      while (this.waitsHead < this.waits.length && this.waits[this.waitsHead]!.resolve === undefined) this.waitsHead++;
      if (this.waitsHead > 1024 && this.waitsHead * 2 > this.waits.length) {
        this.waits.splice(0, this.waitsHead);
        this.waitsHead = 0;
      }
      this.waits.push(w);
      if (!this.waitTimer) this.armCommitWaits();
    });
  }

  private readonly waits: CommitWait[] = [];
  private waitsHead = 0;
  private waitTimer: NodeJS.Timeout | undefined;

  private armCommitWaits(): void {
    while (this.waitsHead < this.waits.length && this.waits[this.waitsHead]!.resolve === undefined) this.waitsHead++;
    if (this.waitsHead >= this.waits.length) {
      this.waits.length = 0;
      this.waitsHead = 0;
      return;
    }
    const first = this.waits[this.waitsHead]!;
    this.waitTimer = setTimeout(() => this.commitWaitsDue(), Math.max(1, first.at - performance.now()));
    this.waitTimer.unref?.();
  }

  /** Waits that heard nothing for COMMIT_WAIT_MS answer 'unknown'. */
  private commitWaitsDue(): void {
    this.waitTimer = undefined;
    const now = performance.now();
    while (this.waitsHead < this.waits.length) {
      const w = this.waits[this.waitsHead]!;
      if (w.resolve !== undefined) {
        if (w.at > now) break;
        const done = w.resolve;
        const l = this.commits.get(w.key);
        const i = l ? l.indexOf(done) : -1;
        if (i >= 0) l!.splice(i, 1);
        if (l && l.length === 0) this.commits.delete(w.key);
        done('unknown');
      }
      this.waitsHead++;
    }
    this.armCommitWaits();
  }

  /** Asks a human through the attempt (ctx.requestInput); the slot is answered when the engine resumes it. */
  ask(t: RemoteTask, req: { question: string; choices?: Json[]; schema?: JsonObject; timeoutMs?: number }): number {
    const slot: InputSlot = { answered: false, waiters: [] };
    t.inputs.push(slot);
    t.ctx.requestInput(req).then(
      (value) => {
        slot.answered = true;
        slot.value = value;
        t.lastBeat = performance.now();
        for (const w of slot.waiters.splice(0)) w();
      },
      (e: unknown) => {
        slot.answered = true;
        slot.error = e;
        for (const w of slot.waiters.splice(0)) w();
      },
    );
    return t.inputs.length - 1;
  }

  /** Waits up to `waitMs` for the answer of input `n`. */
  async answer(t: RemoteTask, n: number, waitMs: number, signal?: AbortSignal): Promise<InputSlot> {
    const slot = t.inputs[n]!;
    if (slot.answered || waitMs <= 0 || this.closed) return slot;
    t.polls++;
    try {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(finish, waitMs);
        signal?.addEventListener('abort', finish, { once: true });
        slot.waiters.push(finish);
        function finish(): void {
          clearTimeout(timer);
          signal?.removeEventListener('abort', finish);
          resolve();
        }
      });
    } finally {
      t.polls--;
      t.lastBeat = performance.now();
    }
    return slot;
  }

  /** The tasks parked here that no remote agent has claimed yet, as `runId \u0000 task key` (for /metrics: they are queued, not running). */
  waitingForClaim(): Set<string> {
    const out = new Set<string>();
    for (const q of this.queues.values()) for (const t of q) if (t.state === 'queued') out.add(`${t.ctx.runId}\u0000${t.key}`);
    return out;
  }

  /** What the hub holds now (tests check it drains: nothing is kept per task once it ended, but the bounded list of ended tokens). */
  stats(): { live: number; queued: number; waitingClaims: number; commitWaits: number; ended: number; handedClaims: number; rejections: number } {
    let queued = 0;
    for (const q of this.queues.values()) queued += q.length;
    let waitingClaims = 0;
    for (const w of this.waiters.values()) waitingClaims += w.length;
    return { live: this.live.size, queued, waitingClaims, commitWaits: this.commits.size, ended: this.ended.size, handedClaims: this.handed.size, rejections: this.rejections.count() };
  }

  /**
   * Ends the waiting claims and input polls (the server closes): a claim answers 204, an input poll 202
   * (not answered), instead of a connection cut a second later with no answer at all. Parked attempts
   * stay: the worker's stop hands them back.
   */
  /** The server is stopping (close() was called): waiting polls are answered as not answered, 202. */
  get stopping(): boolean {
    return this.closed;
  }

  close(): void {
    this.closed = true;
    for (const ws of this.waiters.values()) for (const w of ws.splice(0)) w.take(undefined);
    for (const t of this.live.values()) for (const s of t.inputs) for (const w of s.waiters.splice(0)) w();
    // no agent holds a queued task and none will claim it now: handed back at once, not after the grace
    for (const q of this.queues.values()) for (const t of [...q]) if (t.state === 'queued') void this.giveBack(t, 'released', 'the server is stopping: the task was handed back before an agent claimed it');
  }

  /** What the claim answers. */
  view(t: RemoteTask): RemoteTaskView {
    const c = t.ctx;
    // set field by field, in the answer's order: spreads of optional parts build the object the slow way
    const v: RemoteTaskView = {
      token: t.token,
      task_id: c.taskId,
      run_id: c.runId,
      phase: c.phase,
      attempt: c.attempt,
      agent: t.agent,
      input: c.input,
      initial_state: c.initialState,
      idempotency_key: c.idempotencyKey,
    } as RemoteTaskView;
    if (c.inputResponse !== undefined) v.input_response = c.inputResponse;
    if (c.lastCheckpoint !== undefined) v.last_checkpoint = c.lastCheckpoint;
    if (c.item !== undefined) v.item = { index: c.item.index, value: c.item.value };
    const left = c.remainingBudgetUsd();
    if (left !== undefined) v.remaining_budget_usd = roundUsd(left);
    v.lease_ms = this.leaseMs;
    v.lease_expires_at = this.leaseEnd(t);
    if (c.trace) v.traceparent = c.trace.traceparent;
    if (t.files) v.files = filesView(t.files);
    return v;
  }
}

/** Whether a claim got a claim-time rejection rather than a task. */
export function isRejection(x: ClaimAnswer): x is ClaimRejection {
  return (x as { kind?: unknown }).kind === 'rejection';
}

/**
 * `remaining_budget_usd` of a claim, heartbeat or cost answer: what the attempt may still spend, when a
 * budget applies, after every cost reported so far (a report is answered with what is left after it),
 * to a micro-dollar. `budget_exhausted` (heartbeats and cost answers): nothing more may be spent; a
 * report that went over the budget fails the run, and the next heartbeat says stop.
 */
export function remainingBudgetOf(c: AgentContext, exhausted = false): { remaining_budget_usd?: number; budget_exhausted?: boolean } {
  const left = c.remainingBudgetUsd();
  if (left === undefined) return {};
  const usd = roundUsd(left);
  return exhausted ? { remaining_budget_usd: usd, budget_exhausted: usd <= 0 } : { remaining_budget_usd: usd };
}

/** The task key of an attempt: an item's is `phase[index]`, which its ctx.phase (the phase's name) is not. */
function taskKeyOf(ctx: AgentContext): string {
  return ctx instanceof Attempt ? ctx.key : ctx.phase;
}

/**
 * Calls `f` once when the attempt is aborted; false when it already was. The engine's own attempts are
 * watched without their AbortSignal, which would otherwise be made for every parked task.
 */
function onAbort(ctx: AgentContext, f: (reason: unknown) => void): boolean {
  if (ctx instanceof Attempt) return ctx.onAbort(f);
  if (ctx.signal.aborted) return false;
  ctx.signal.addEventListener('abort', () => f(ctx.signal.reason), { once: true });
  return true;
}

function reasonText(reason: unknown): string {
  if (reason instanceof Error) return reason.message || reason.name;
  if (typeof reason === 'string') return reason;
  return 'the attempt was stopped';
}

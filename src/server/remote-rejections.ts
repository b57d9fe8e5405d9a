/**
 * Claim-time rejections of tasks served remotely (issue 17: a claim answers 422 with the
 * `UnresolvableInputError` payload, or 409 with `UpstreamIntentSuspendedError`). The engine rejects
 * such a task in its own claim, before any agent is involved (`task.claim_rejected`, and for an input
 * that can never resolve `task.failed`), so the task is never parked for a remote agent: the hub
 * (remote.ts) hears of the rejection through the engine's onEvent and hands it to a claim of the
 * task's agent, one that waits now or the next one within a lease. Each rejection answers one claim.
 * The engine's own events are those of any claim-time rejection: nothing here writes to the store.
 */
import type { JsonObject } from '../core/json.js';
import { BoundedMap } from '../core/lru.js';
import type { RunEvent } from '../engine/events.js';
import { itemParent, type RunState } from '../engine/state.js';
import type { WorkflowModel } from '../workflow/model.js';

/** A task of a remote agent the engine refused at claim time: what a claim of that agent answers. */
export interface ClaimRejection {
  readonly kind: 'rejection';
  readonly agent: string;
  /** Agents the phase's `permissions.delegate.to` names: their keys' claims may hear of it too. */
  readonly delegatedTo: readonly string[];
  readonly runId: string;
  /** The task's key: its phase, or `phase[index]` for a fan-out item. */
  readonly phase: string;
  /** 422 `UnresolvableInputError` (the task failed: its input can never resolve); 409 `UpstreamIntentSuspendedError` (it waits for an upstream's answer). */
  readonly status: 409 | 422;
  /** The RFC-0024 payload, as `task.claim_rejected` records it (`error`, `task_id`, `phase_name`, ...). */
  readonly error: JsonObject;
  /** When it was heard (performance.now()): kept for a lease at most. */
  readonly at: number;
}

/** What the hub knows of a workflow whose runs it serves: its remote agents and whom their phases delegate to. */
interface RemoteShape {
  agents: ReadonlySet<string>;
  delegates: ReadonlyMap<string, readonly string[]>;
}

/** Rejections kept per agent at most (a run of 100,000 items none of which resolves must not fill memory). */
const PER_AGENT = 1000;

export class ClaimRejections {
  private readonly waiting = new Map<string, ClaimRejection[]>();
  private readonly shapes = new BoundedMap<string, RemoteShape>(256);

  /** `keepMs`: how long a rejection waits for a claim of its agent (the remote lease). */
  constructor(private readonly keepMs: number) {}

  /** From bindRun: which agents of the workflow (by its hash) are remote, and the delegates of their phases. */
  learn(hash: string, model: WorkflowModel, remote: readonly string[]): void {
    if (this.shapes.has(hash) || remote.length === 0) return;
    const agents = new Set(remote);
    const delegates = new Map<string, readonly string[]>();
    for (const p of model.phases) if (agents.has(p.assign) || (p.retry.fallbackAgent !== undefined && agents.has(p.retry.fallbackAgent))) delegates.set(p.name, p.permissions?.delegate?.to ?? []);
    this.shapes.set(hash, { agents, delegates });
  }

  /**
   * A committed event: a claim-time rejection of a remote agent's task is the rejection to hand out
   * (returned); an upstream question that closed, or the run's end, makes its pending 409s moot (an
   * upstream that is no longer suspended suspends nothing), and they are dropped.
   */
  heard(e: RunEvent, state: RunState): ClaimRejection | undefined {
    if (e.type === 'gate.answered' || e.type === 'gate.withdrawn' || e.type === 'gate.expired') {
      const asker = state.gates.get(e.gate_id)?.phase;
      const taskId = asker !== undefined ? state.phases.get(asker)?.taskId : undefined;
      if (taskId !== undefined) this.dropSuspended(state.runId, taskId);
      return undefined;
    }
    if (e.type === 'run.completed' || e.type === 'run.failed' || e.type === 'run.cancelled') {
      this.dropSuspended(state.runId, undefined);
      return undefined;
    }
    if (e.type !== 'task.claim_rejected' || state.workflowHash === undefined) return undefined;
    const shape = this.shapes.get(state.workflowHash);
    if (!shape) return undefined;
    const phase = itemParent(e.phase) ?? e.phase;
    const agent = state.phases.get(e.phase)?.nextAgent ?? state.graph?.assign?.get(phase);
    if (agent === undefined || !shape.agents.has(agent)) return undefined;
    const error = e.error as JsonObject;
    return { kind: 'rejection', agent, delegatedTo: shape.delegates.get(phase) ?? [], runId: state.runId, phase: e.phase, status: error['error'] === 'UpstreamIntentSuspendedError' ? 409 : 422, error, at: performance.now() };
  }

  /** Kept for the next claim of its agent (none was waiting). */
  keep(r: ClaimRejection): void {
    const list = this.waiting.get(r.agent) ?? [];
    list.push(r);
    if (list.length > PER_AGENT) list.splice(0, list.length - PER_AGENT);
    this.waiting.set(r.agent, list);
  }

  /** The oldest rejection of `agent` that `may` lets this claim hear of, taken; those older than a lease are dropped. */
  take(agent: string, may: (r: ClaimRejection) => boolean): ClaimRejection | undefined {
    const list = this.waiting.get(agent);
    if (!list) return undefined;
    const old = performance.now() - this.keepMs;
    while (list.length > 0 && list[0]!.at < old) list.shift();
    const i = list.findIndex(may);
    const r = i >= 0 ? list.splice(i, 1)[0] : undefined;
    if (list.length === 0) this.waiting.delete(agent);
    return r;
  }

  /** The 409s of a run whose suspended upstream is `taskId` (undefined: any), dropped. */
  private dropSuspended(runId: string, taskId: string | undefined): void {
    for (const [agent, list] of this.waiting) {
      const kept = list.filter((r) => r.runId !== runId || r.status !== 409 || (taskId !== undefined && r.error['suspended_intent_id'] !== taskId));
      if (kept.length === 0) this.waiting.delete(agent);
      else if (kept.length !== list.length) this.waiting.set(agent, kept);
    }
  }

  /** How many wait for a claim (tests): those older than a lease are dropped first. */
  count(): number {
    const old = performance.now() - this.keepMs;
    let n = 0;
    for (const [agent, list] of this.waiting) {
      while (list.length > 0 && list[0]!.at < old) list.shift();
      if (list.length === 0) this.waiting.delete(agent);
      n += list.length;
    }
    return n;
  }
}

/**
 * When a run can next make progress: the one place that says so. The claim decision (decide.ts)
 * takes exactly the tasks `claimableAt` says are due, the worker (worker.ts) sleeps until the
 * earliest of them, and the projection (projection.ts) stores the same due times in the task and
 * run rows, so that any process asks the store what is due *now* instead of trusting flags it keeps
 * in memory. A due time that passes while a commit is in flight is found by the next look, by
 * construction: nothing here is edge-triggered.
 */
import { phaseModelOf, type Plan } from './plan.js';
import type { PhaseState, RunState } from './state.js';

/** Who asks: the claim of one worker. */
export interface Claimant {
  worker: string;
  /** The agents it binds (null: every agent). */
  agents: ReadonlySet<string> | null;
  /** Owners known to be dead (their answered or still-settling attempts need no grace period). */
  deadOwners?: ReadonlySet<string> | undefined;
  /** Phases whose answered attempt this worker continues itself (never claimed anew). */
  resuming?: ReadonlySet<string> | undefined;
  /** Phases with an attempt still executing in this worker (aborted, not yet settled): never two at once. */
  busy?: ReadonlySet<string> | undefined;
}

/** The agent of a task's next attempt: `assign`, or the fallback agent. */
export function nextAgentOf(plan: Plan, state: RunState, name: string): string {
  return state.phases.get(name)!.nextAgent ?? phaseModelOf(plan, name)!.assign;
}

/** Whether the run gate is open (it holds every claim). */
export function runGateOpen(state: RunState): boolean {
  const g = state.gates.get('approval');
  return g !== undefined && g.status === 'open';
}

/**
 * Whether a ready task waits on a gate whatever the claimant: the run gate, or an open access gate
 * of its agent. A claim takes nothing then, and the store row says so (`HELD`).
 */
export function heldByGate(plan: Plan, state: RunState, name: string): boolean {
  if (runGateOpen(state)) return true;
  const agent = nextAgentOf(plan, state, name);
  if (!plan.accessAgents.has(agent)) return false;
  const g = state.gates.get(`access-${agent}`);
  return g !== undefined && g.status === 'open';
}

/**
 * When the claimant may claim the ready task `name`: a time in ms (possibly in the past), or
 * undefined when it cannot until something else changes (a gate decision, another agent's task, a
 * local attempt still settling). A task whose access gate was never opened is due: the claim opens
 * it. A denied access gate is due too: the claim fails the task.
 */
export function claimableAt(plan: Plan, state: RunState, name: string, who: Claimant): number | undefined {
  const p: PhaseState = state.phases.get(name)!;
  if (p.status !== 'ready' || heldByGate(plan, state, name)) return undefined;
  const nb = p.notBefore ?? -Infinity;
  const agent = nextAgentOf(plan, state, name);
  if (plan.accessAgents.has(agent)) {
    const g = state.gates.get(`access-${agent}`);
    if (g === undefined || g.status === 'denied') return nb;
    if (g.status !== 'approved') return undefined;
  }
  if (who.agents && !who.agents.has(agent)) return undefined;
  if (who.busy?.has(name)) return undefined;
  // the last attempt's code still runs in another worker: its own process starts the next one once it settles
  const s = p.settling;
  const after = s !== undefined && s.owner !== who.worker && !who.deadOwners?.has(s.owner) ? Math.max(nb, s.until) : nb;
  const r = p.resumable;
  if (r) {
    if (r.owner === who.worker) return who.resuming?.has(name) ? undefined : after;
    if (r.owner !== undefined && who.deadOwners?.has(r.owner)) return after;
    return Math.max(after, r.until);
  }
  return after;
}

/** The earliest time the claimant may claim any ready task of the run, or undefined. */
export function nextClaim(plan: Plan, state: RunState, who: Claimant): number | undefined {
  if (state.status !== 'running' || state.ready.size === 0 || runGateOpen(state)) return undefined;
  let t: number | undefined;
  for (const name of state.ready) {
    const at = claimableAt(plan, state, name, who);
    if (at !== undefined && (t === undefined || at < t)) {
      t = at;
      if (t === -Infinity) break; // nothing comes earlier: a wide fan-out is not walked on every look
    }
  }
  return t;
}

/** The run's next timer (deadline, gate expiry, escalation), or null: kept as the run row's `wakeAt`. */
export function nextTimer(state: RunState): number | null {
  if (state.status !== 'running') return null;
  let t = state.deadlineAt ?? Infinity;
  // no iterator made for a run without gates (asked several times a commit)
  if (state.gates.size === 0) return t === Infinity ? null : t;
  for (const g of state.gates.values()) {
    if (g.status !== 'open') continue;
    if (g.expiresAt !== undefined && !g.expired) t = Math.min(t, g.expiresAt);
    if (g.escalateAt !== undefined && !g.escalated) t = Math.min(t, g.escalateAt);
  }
  return t === Infinity ? null : t;
}

/**
 * The earliest time another worker's running attempt may need taking over, as far as the run state
 * knows: its lease as first granted (renewals live in the store only, so this is when to *look*).
 */
export function nextLeaseLook(state: RunState, self: string): number | undefined {
  let t: number | undefined;
  for (const name of state.running) {
    const p = state.phases.get(name)!;
    if (p.leaseOwner === undefined || p.leaseOwner === self || p.leaseExpiresAt === undefined) continue;
    if (t === undefined || p.leaseExpiresAt < t) t = p.leaseExpiresAt;
  }
  return t;
}

/** The due time the store keeps for a ready task (`TaskRow.notBefore`): null (now), a time, or held. */
export function storedNotBefore(plan: Plan, state: RunState, name: string, held: number): number | null {
  const p = state.phases.get(name)!;
  if (p.status !== 'ready') return null;
  if (heldByGate(plan, state, name)) return held;
  const nb = p.notBefore;
  // another process's answered attempt keeps its task for a grace period: not due before it ends
  const until = p.resumable?.until;
  // likewise a task whose last attempt's code still runs (its own worker claims it from memory, not by this row)
  const t = Math.max(nb ?? -Infinity, until ?? -Infinity, p.settling?.until ?? -Infinity);
  return t === -Infinity ? null : t;
}

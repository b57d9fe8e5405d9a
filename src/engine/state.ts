/**
 * The run's state as a fold over its events. `applyEvent` is the only place the state changes, so
 * a run rebuilt from a store's events is the run that was recorded (replay(events) == the state
 * every worker kept while committing them).
 */
import type { Json, JsonObject } from '../core/json.js';
import type { FailureRecord, GateKind, OnTimeout, RunEvent, RunStatus, SkipReason, TaskStatus } from './events.js';

export interface PhaseState {
  status: TaskStatus;
  taskId: string;
  /** Number of the current (or last) attempt; 0 before the first claim. */
  attempts: number;
  /** Attempts that failed (the retry policy counts these; a lost lease is not a failure). */
  failures: number;
  /** The agent of the last claimed attempt. */
  agent: string | undefined;
  /** The agent of the next attempt when it is not `assign` (the fallback agent). */
  nextAgent: string | undefined;
  input: JsonObject | undefined;
  output: JsonObject | undefined;
  error: FailureRecord | undefined;
  skippedReason: SkipReason | undefined;
  skippedDetail: string | undefined;
  costUsd: number;
  startedAt: number | undefined;
  endedAt: number | undefined;
  /** The worker holding the running attempt, and the lease's first expiry (renewals live in the store only). */
  leaseOwner: string | undefined;
  leaseExpiresAt: number | undefined;
  /** A ready task is not claimed before this time (a retry delay). */
  notBefore: number | undefined;
  /** Input gates this phase opened, in order. The k-th `requestInput` of any attempt is answered by the latest gate opened for index k. */
  inputGates: string[];
  /** Set when the task waits on a gate (awaiting_approval, suspended_awaiting_input). */
  gate: string | undefined;
  /** After an answered input gate: the attempt that may continue in the same process, until when. */
  resumable: { attempt: number; owner: string | undefined; until: number } | undefined;
  /** A ready task whose last attempt's code still runs in `owner` (it ignored its abort): nobody else claims it before `until`. */
  settling: { owner: string; until: number } | undefined;
  /** `baton rerun`: the run this output was copied from. */
  reusedFrom: string | undefined;
  /** Completed with a partial result its agent's contract accepts (`onPartialCompletion: return_partial`). */
  partial: boolean;
  /** The last `ctx.checkpoint(value)` of any attempt of this task, and the attempt that saved it. */
  checkpoint: { value: Json; attempt: number } | undefined;
  /** Attempts that failed with `Timeout` (a contract's `onTimeout.maxRetries` counts these). */
  timeouts: number;
  /** The last failed attempt's failure. */
  lastFailure: FailureRecord | undefined;
  /** Escalation gates opened for this phase (`onAgentFailure: escalate_to_user`). */
  escalations: number;
  /** The process group of the last attempt that recorded one (a subprocess agent). */
  process: { attempt: number; pid: number; pgid: number; host: string; start_time?: string; owner_pid?: number; owner_start?: string } | undefined;
  /** A fan-out phase (`for_each`) once its items are known (`task.fanned_out`): counts of its item tasks. */
  fan: FanState | undefined;
  /** An item task of a fan-out phase (`phase[index]`): the phase and the item's index. */
  item: { parent: string; index: number } | undefined;
}

/**
 * A fan-out phase's items, counted as their tasks change (derived from the item events, so replay gives
 * the same counts). Items are tasks keyed `phase[index]` in `RunState.phases`; they are opened in index
 * order as slots free (`active` stays within the phase's window), so a fan of 100,000 items never has
 * 100,000 ready tasks at once.
 */
export interface FanState {
  count: number;
  /** The lowest index not yet opened (no task for it). */
  next: number;
  /** Items opened and not yet settled. */
  active: number;
  completed: number;
  failed: number;
  skipped: number;
  cancelled: number;
  /**
   * Items folded out of `RunState.phases` once settled (compactItems): a completed item's output, or
   * null for a skipped one, by index; a hole for an item still in `phases` or not opened. Undefined
   * until the first item is folded.
   */
  done: (JsonObject | null | undefined)[] | undefined;
  /** The cost of the folded items. */
  doneCost: number;
}

/** The task key of a fan-out item: `phase[index]` (a phase name cannot end in `[N]`, see compile.ts). */
export function itemKey(phase: string, index: number): string {
  return `${phase}[${index}]`;
}

/** The phase and index of an item task key, or undefined for a phase's own task. */
export function parseItemKey(name: string): { parent: string; index: number } | undefined {
  const open = itemBracket(name);
  return open < 0 ? undefined : { parent: name.slice(0, open), index: Number(name.slice(open + 1, -1)) };
}

/** The phase of an item task key (`draft` of `draft[7]`), or undefined for a phase's own task. */
export function itemParent(name: string): string | undefined {
  const open = itemBracket(name);
  return open < 0 ? undefined : name.slice(0, open);
}

/**
 * Where the `[` of an item key `phase[index]` is (a non-empty phase, an index without leading zeros),
 * or -1. A scan without a regular expression: it runs for every event of a fan of 100,000 items.
 */
function itemBracket(name: string): number {
  const end = name.length - 1;
  if (end < 3 || name.charCodeAt(end) !== 93 /* ] */) return -1;
  let i = end - 1;
  while (i > 0) {
    const c = name.charCodeAt(i);
    if (c < 48 || c > 57) break;
    i--;
  }
  // digits from i + 1 to end - 1: at least one, and no leading zero unless it is the only one
  if (i === end - 1 || i <= 0 || name.charCodeAt(i) !== 91 /* [ */) return -1;
  if (name.charCodeAt(i + 1) === 48 && end - i > 2) return -1;
  return i;
}

/** `closed`: the run ended (stopped, failed, cancelled) while the gate was still open; nobody can decide it now. */
/** `withdrawn`: an input gate whose attempt ended before it was answered; `closed`: open when its run ended. */
export type GateStatus = 'open' | 'approved' | 'denied' | 'answered' | 'withdrawn' | 'closed';

export interface GateState {
  id: string;
  kind: GateKind;
  phase: string | undefined;
  agent: string | undefined;
  attempt: number | undefined;
  approvers: string[];
  reason: string;
  openedAt: number;
  expiresAt: number | undefined;
  onTimeout: OnTimeout | undefined;
  escalateAt: number | undefined;
  escalated: boolean;
  /** on_timeout: escalate has fired: the gate stays open with no expiry. */
  expired: boolean;
  /** Input gates: the request index (k-th `requestInput` of an attempt) this gate asks. */
  index: number | undefined;
  question: string | undefined;
  choices: Json[] | undefined;
  schema: JsonObject | undefined;
  status: GateStatus;
  decidedBy: string | undefined;
  decidedAt: number | undefined;
  comment: string | undefined;
  auto: boolean;
  value: Json | undefined;
  /** Set for the gate the engine opens when an agent fails and its contract says `escalate_to_user`. */
  escalation: { failure: FailureRecord } | undefined;
}

export interface RunState {
  runId: string;
  workflow: string;
  workflowHash: string | undefined;
  trigger: Json;
  /** running until a terminal event; `waiting` is derived (see runStatusOf). */
  status: Exclude<RunStatus, 'waiting'>;
  phases: Map<string, PhaseState>;
  costUsd: number;
  failure: FailureRecord | undefined;
  cancelReason: string | undefined;
  startedAt: number;
  endedAt: number | undefined;
  /** Sequence number of the last applied event. */
  seq: number;
  deadlineAt: number | undefined;
  autoApprove: boolean;
  rerunOf: { run_id: string; from: string } | undefined;
  gates: Map<string, GateState>;
  /** Budget alerts already raised: a phase name, or '' for the run. */
  alerted: Set<string>;
  /** Ready tasks in the order they became ready (claims take them in this order). */
  ready: Set<string>;
  /**
   * The ready tasks with a not-before time or an answered attempt to resume: the few the worker's
   * looks must read closely, kept so that they never walk a wide fan-out's whole ready set.
   */
  readyWaits: Set<string>;
  /** Running tasks. */
  running: Set<string>;
  /** Phases not yet completed, failed, skipped or cancelled. */
  open: number;
  firstFailure: { phase: string; failure: FailureRecord } | undefined;
  /**
   * The dependency graph, attached by the engine (attachGraph) so that finishing a phase updates its
   * dependents' counters of unfinished dependencies: O(phases + edges) per run, as before the split.
   * Derived data: replaying the same events with the same graph gives the same counters.
   */
  graph: { dependents: ReadonlyMap<string, readonly string[]>; remaining: Map<string, number>; assign: ReadonlyMap<string, string> | undefined } | undefined;
  /**
   * Fold settled fan-out items out of `phases` (compactItems): a worker that keeps no event log
   * holds per item only its output, so that a fan of 100,000 items costs the memory of its gathered
   * output, not of 100,000 task states. Every decision reads folded and unfolded items alike; an
   * inspection (replay) never folds.
   */
  compactItems: boolean;
  /** Items that settled (completed or skipped) since the last compactItems(), to fold. */
  settledItems: string[];
  /** Items folded so far. */
  compacted: number;
}

export function newPhaseState(taskId: string): PhaseState {
  return {
    status: 'pending',
    taskId,
    attempts: 0,
    failures: 0,
    agent: undefined,
    nextAgent: undefined,
    input: undefined,
    output: undefined,
    error: undefined,
    skippedReason: undefined,
    skippedDetail: undefined,
    costUsd: 0,
    startedAt: undefined,
    endedAt: undefined,
    leaseOwner: undefined,
    leaseExpiresAt: undefined,
    notBefore: undefined,
    inputGates: [],
    gate: undefined,
    resumable: undefined,
    settling: undefined,
    reusedFrom: undefined,
    partial: false,
    checkpoint: undefined,
    timeouts: 0,
    lastFailure: undefined,
    escalations: 0,
    process: undefined,
    fan: undefined,
    item: undefined,
  };
}

export function taskIdFor(runId: string, phase: string): string {
  return `${runId}:${phase}`;
}

export function initialState(runId: string): RunState {
  return {
    runId,
    workflow: '',
    workflowHash: undefined,
    trigger: null,
    status: 'running',
    phases: new Map(),
    costUsd: 0,
    failure: undefined,
    cancelReason: undefined,
    startedAt: 0,
    endedAt: undefined,
    seq: 0,
    deadlineAt: undefined,
    autoApprove: false,
    rerunOf: undefined,
    gates: new Map(),
    alerted: new Set(),
    ready: new Set(),
    readyWaits: new Set(),
    running: new Set(),
    open: 0,
    firstFailure: undefined,
    graph: undefined,
    compactItems: false,
    settledItems: [],
    compacted: 0,
  };
}

/** Attaches the dependency graph and counts each phase's unfinished dependencies from the current statuses. */
export function attachGraph(state: RunState, dependsOn: ReadonlyMap<string, readonly string[]>, dependents: ReadonlyMap<string, readonly string[]>, assign?: ReadonlyMap<string, string>): void {
  const remaining = new Map<string, number>();
  for (const [name, deps] of dependsOn) {
    let n = 0;
    for (const d of deps) {
      const ds = state.phases.get(d)?.status;
      if (ds === undefined || !TERMINAL.has(ds)) n++;
    }
    remaining.set(name, n);
  }
  state.graph = { dependents, remaining, assign };
}

function phaseOf(state: RunState, name: string, taskId: string): PhaseState {
  let p = state.phases.get(name);
  if (!p) {
    p = newPhaseState(taskId);
    state.phases.set(name, p);
    state.open++;
    const item = parseItemKey(name);
    if (item) {
      p.item = item;
      const fan = state.phases.get(item.parent)?.fan;
      if (fan) {
        fan.active++;
        if (item.index === fan.next) advanceNext(state, item.parent, fan);
      }
    }
  }
  return p;
}

function advanceNext(state: RunState, parent: string, fan: FanState): void {
  while (fan.next < fan.count && (fan.done?.[fan.next] !== undefined || state.phases.has(itemKey(parent, fan.next)))) fan.next++;
}

/** The fan of a folded item key (compactItems), or undefined when the key is not a folded item. */
export function foldedItem(state: RunState, name: string): { fan: FanState; index: number; parent: PhaseState } | undefined {
  if (state.compacted === 0) return undefined;
  const item = parseItemKey(name);
  if (!item) return undefined;
  const parent = state.phases.get(item.parent);
  const fan = parent?.fan;
  if (!fan?.done || fan.done[item.index] === undefined) return undefined;
  return { fan, index: item.index, parent: parent! };
}

/**
 * Folds the items that settled since the last call out of `phases` (a completed item keeps its output,
 * a skipped one a null slot). Between decisions only: a decision reads the item it settles. Items
 * with a partial result, failed or cancelled items stay whole (they are few, and shown one by one).
 */
export function compactItems(state: RunState): void {
  const keys = state.settledItems;
  if (keys.length === 0) return;
  state.settledItems = [];
  for (const key of keys) {
    const p = state.phases.get(key);
    if (!p?.item) continue;
    const fan = state.phases.get(p.item.parent)?.fan;
    if (!fan || p.item.index >= fan.count) continue;
    let slot: JsonObject | null;
    if (p.status === 'completed' && !p.partial && p.output !== undefined) slot = p.output;
    else if (p.status === 'skipped') slot = null;
    else continue;
    fan.done ??= new Array<JsonObject | null | undefined>(fan.count);
    fan.done[p.item.index] = slot;
    fan.doneCost += p.costUsd;
    state.phases.delete(key);
    state.compacted++;
  }
}

/** Turns folding on for a state (a worker that keeps no event log) and folds what has already settled. */
export function startCompacting(state: RunState): void {
  if (state.compactItems) {
    compactItems(state);
    return;
  }
  state.compactItems = true;
  for (const [name, p] of state.phases) if (p.item && (p.status === 'completed' || p.status === 'skipped')) state.settledItems.push(name);
  compactItems(state);
}

function countItem(fan: FanState, s: TaskStatus, by: number): void {
  if (s === 'completed') fan.completed += by;
  else if (s === 'failed') fan.failed += by;
  else if (s === 'skipped') fan.skipped += by;
  else if (s === 'cancelled') fan.cancelled += by;
}

const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'skipped', 'cancelled']);
export function isTerminal(s: TaskStatus): boolean {
  return TERMINAL.has(s);
}

/** Every status change of a task goes through here, keeping the ready/running sets and the open count. */
function setStatus(state: RunState, name: string, p: PhaseState, s: TaskStatus): void {
  const was = p.status;
  if (was === s) return;
  if (was === 'ready') state.ready.delete(name);
  else if (was === 'running') state.running.delete(name);
  if (s === 'ready') state.ready.add(name);
  // a fan-out phase runs through its items: it holds no lease and is never claimed itself
  else if (s === 'running' && p.fan === undefined) state.running.add(name);
  if (TERMINAL.has(s) && !TERMINAL.has(was)) {
    state.open--;
    if (p.item) {
      const fan = state.phases.get(p.item.parent)?.fan;
      if (fan) {
        fan.active--;
        countItem(fan, s, 1);
      }
      if (state.compactItems && (s === 'completed' || s === 'skipped')) state.settledItems.push(name);
    }
    const g = state.graph;
    if (g) for (const d of g.dependents.get(name) ?? []) g.remaining.set(d, (g.remaining.get(d) ?? 1) - 1);
  }
  p.status = s;
  // a suspended attempt keeps its owner: that process may continue it once answered
  if (s !== 'running' && s !== 'suspended_awaiting_input') {
    p.leaseOwner = undefined;
    p.leaseExpiresAt = undefined;
  }
  if (s !== 'ready') p.notBefore = undefined;
  if (s !== 'awaiting_approval' && s !== 'suspended_awaiting_input') p.gate = undefined;
  if (s !== 'ready') p.resumable = undefined;
  if (s !== 'ready') p.settling = undefined;
  if (was === 'ready') state.readyWaits.delete(name);
}

/** Keeps `readyWaits` in line after a ready task's `notBefore`, `resumable` or `settling` changed. */
function markWait(state: RunState, name: string, p: PhaseState): void {
  if (p.status === 'ready' && (p.notBefore !== undefined || p.resumable !== undefined || p.settling !== undefined)) state.readyWaits.add(name);
  else state.readyWaits.delete(name);
}

/** Applies one event in place. Events must arrive in `seq` order. */
export function applyEvent(state: RunState, e: RunEvent): void {
  state.seq = e.seq;
  // an event about a folded item (compactItems) changes nothing but costs: the item has settled
  if (state.compacted > 0 && 'phase' in e && typeof e.phase === 'string' && e.type.startsWith('task.') && !state.phases.has(e.phase)) {
    const f = foldedItem(state, e.phase);
    if (f) {
      if (e.type === 'task.cost') {
        state.costUsd = e.run_total_usd;
        f.parent.costUsd = sumUsd(f.parent.costUsd, e.usd);
        f.fan.doneCost += e.usd;
      }
      return;
    }
  }
  switch (e.type) {
    case 'run.started':
      state.runId = e.run_id;
      state.workflow = e.workflow;
      state.workflowHash = e.workflow_hash;
      state.trigger = e.trigger;
      state.startedAt = e.at;
      state.deadlineAt = e.deadline_at;
      state.autoApprove = e.auto_approve === true;
      state.rerunOf = e.rerun_of;
      for (const name of e.phases) phaseOf(state, name, taskIdFor(e.run_id, name));
      return;
    case 'task.ready': {
      const p = phaseOf(state, e.phase, e.task_id);
      setStatus(state, e.phase, p, 'ready');
      p.notBefore = e.not_before;
      markWait(state, e.phase, p);
      return;
    }
    case 'task.claimed': {
      const p = phaseOf(state, e.phase, e.task_id);
      setStatus(state, e.phase, p, 'running');
      p.attempts = e.attempt;
      p.agent = e.agent;
      p.input = e.input;
      p.startedAt ??= e.at;
      p.leaseOwner = e.worker;
      p.leaseExpiresAt = e.lease_expires_at;
      return;
    }
    case 'task.resumed': {
      const p = phaseOf(state, e.phase, e.task_id);
      setStatus(state, e.phase, p, 'running');
      p.leaseOwner = e.worker;
      p.leaseExpiresAt = e.lease_expires_at;
      return;
    }
    case 'task.attempt_failed': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.failures++;
      if (e.failure.code === 'Timeout') p.timeouts++;
      p.lastFailure = e.failure;
      return;
    }
    case 'task.rejected': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.failures++;
      p.lastFailure = { code: typeof e.error['error'] === 'string' ? e.error['error'] : 'OutputRejected', message: typeof e.error['message'] === 'string' ? e.error['message'] : 'the output was rejected', retryable: true };
      return;
    }
    case 'task.checkpoint': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.checkpoint = { value: e.value, attempt: e.attempt };
      return;
    }
    case 'task.retrying': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.nextAgent = e.agent;
      setStatus(state, e.phase, p, 'ready');
      p.notBefore = e.not_before;
      p.settling = e.held_by !== undefined && e.held_until !== undefined ? { owner: e.held_by, until: e.held_until } : undefined;
      markWait(state, e.phase, p);
      return;
    }
    case 'task.lease_expired': {
      const p = phaseOf(state, e.phase, e.task_id);
      // an attempt waiting for an answer, handed back by its stopping worker: the question stays, the owner goes
      if (p.status === 'suspended_awaiting_input') {
        p.leaseOwner = undefined;
        return;
      }
      if (p.status === 'ready' && p.resumable !== undefined) {
        p.resumable = { attempt: p.resumable.attempt, owner: undefined, until: Math.min(p.resumable.until, e.at) };
        markWait(state, e.phase, p);
        return;
      }
      setStatus(state, e.phase, p, 'ready');
      return;
    }
    case 'task.fanned_out': {
      const p = phaseOf(state, e.phase, e.task_id);
      const fan: FanState = { count: e.items, next: 0, active: 0, completed: 0, failed: 0, skipped: 0, cancelled: 0, done: undefined, doneCost: 0 };
      // items recorded before the fan (reused by `baton rerun --failed-items`) count from the start
      for (const [name, q] of state.phases) {
        if (q.item?.parent !== e.phase || q.item.index >= e.items) continue;
        if (TERMINAL.has(q.status)) {
          countItem(fan, q.status, 1);
          if (state.compactItems && (q.status === 'completed' || q.status === 'skipped')) state.settledItems.push(name);
        } else fan.active++;
      }
      p.fan = fan;
      advanceNext(state, e.phase, fan);
      setStatus(state, e.phase, p, 'running');
      p.startedAt ??= e.at;
      return;
    }
    case 'task.claim_rejected':
    case 'task.stale_outcome':
    case 'task.sibling_output':
    case 'task.log':
    case 'task.warning':
    case 'task.file':
      return;
    case 'task.agent_event': {
      // a subprocess agent's process group, kept so that a takeover can end an orphan first
      if (e.kind === 'process' && typeof e.data['pid'] === 'number' && typeof e.data['pgid'] === 'number' && typeof e.data['host'] === 'string') {
        const p = phaseOf(state, e.phase, e.task_id);
        const st = e.data['start_time'];
        const op = e.data['owner_pid'];
        const os = e.data['owner_start'];
        p.process = {
          attempt: e.attempt,
          pid: e.data['pid'],
          pgid: e.data['pgid'],
          host: e.data['host'],
          ...(typeof st === 'string' ? { start_time: st } : {}),
          ...(typeof op === 'number' ? { owner_pid: op } : {}),
          ...(typeof os === 'string' ? { owner_start: os } : {}),
        };
      }
      return;
    }
    case 'task.cost': {
      const p = phaseOf(state, e.phase, e.task_id);
      p.costUsd = e.phase_total_usd;
      state.costUsd = e.run_total_usd;
      // a fan-out phase's spend is its items' (its budget counts them together)
      if (p.item) {
        const parent = state.phases.get(p.item.parent);
        if (parent) parent.costUsd = sumUsd(parent.costUsd, e.usd);
      }
      return;
    }
    case 'task.completed': {
      const p = phaseOf(state, e.phase, e.task_id);
      setStatus(state, e.phase, p, 'completed');
      p.output = e.output;
      p.error = undefined;
      p.endedAt = e.at;
      p.reusedFrom = e.reused_from;
      p.partial = e.partial === true;
      if (e.reused_from !== undefined) p.attempts = e.attempt;
      return;
    }
    case 'task.failed': {
      const p = phaseOf(state, e.phase, e.task_id);
      setStatus(state, e.phase, p, 'failed');
      p.error = e.failure;
      p.endedAt = e.at;
      // a failed item fails the run only through its phase (past tolerated_failures)
      if (!p.item) state.firstFailure ??= { phase: e.phase, failure: e.failure };
      return;
    }
    case 'task.skipped': {
      const p = phaseOf(state, e.phase, e.task_id);
      setStatus(state, e.phase, p, 'skipped');
      p.skippedReason = e.reason;
      p.skippedDetail = e.detail;
      p.endedAt = e.at;
      return;
    }
    case 'task.cancelled': {
      const p = phaseOf(state, e.phase, e.task_id);
      setStatus(state, e.phase, p, 'cancelled');
      p.endedAt = e.at;
      return;
    }
    case 'gate.opened': {
      state.gates.set(e.gate_id, {
        id: e.gate_id,
        kind: e.kind,
        phase: e.phase,
        agent: e.agent,
        attempt: e.attempt,
        approvers: e.approvers,
        reason: e.reason,
        openedAt: e.at,
        expiresAt: e.expires_at,
        onTimeout: e.on_timeout,
        escalateAt: e.escalate_at,
        escalated: false,
        expired: false,
        index: e.kind === 'input' ? (e.index ?? state.phases.get(e.phase ?? '')?.inputGates.length) : undefined,
        question: e.question,
        choices: e.choices,
        schema: e.schema,
        status: 'open',
        decidedBy: undefined,
        decidedAt: undefined,
        comment: undefined,
        auto: false,
        value: undefined,
        escalation: e.escalation,
      });
      if (e.phase !== undefined && (e.kind === 'phase' || e.kind === 'input')) {
        const p = phaseOf(state, e.phase, e.task_id ?? taskIdFor(state.runId, e.phase));
        // an escalation is not an attempt's k-th request: it never answers one
        if (e.kind === 'input' && !e.escalation) p.inputGates.push(e.gate_id);
        setStatus(state, e.phase, p, e.kind === 'phase' ? 'awaiting_approval' : 'suspended_awaiting_input');
        p.gate = e.gate_id;
        // the failed attempt is over: no process holds the task while a human decides
        if (e.escalation) {
          p.escalations++;
          p.leaseOwner = undefined;
          p.leaseExpiresAt = undefined;
        }
      }
      return;
    }
    case 'gate.decided': {
      const g = state.gates.get(e.gate_id);
      if (!g) return;
      g.status = e.decision;
      g.decidedBy = e.by;
      g.decidedAt = e.at;
      g.comment = e.comment;
      g.auto = e.auto;
      if (g.kind === 'phase' && g.phase !== undefined && e.decision === 'approved') {
        const p = state.phases.get(g.phase);
        if (p && p.status === 'awaiting_approval') setStatus(state, g.phase, p, 'ready');
      }
      return;
    }
    case 'gate.answered': {
      const g = state.gates.get(e.gate_id);
      if (!g) return;
      g.status = 'answered';
      g.value = e.value;
      g.decidedBy = e.by;
      g.decidedAt = e.at;
      // an escalation's answer is acted on by the decisions (retry, skip or fail the phase)
      if (g.phase !== undefined && !g.escalation) {
        const p = state.phases.get(g.phase);
        if (p && p.status === 'suspended_awaiting_input') {
          // no grace when nobody may continue the attempt (its worker handed it back, or is known gone)
          const owner = e.owner_gone ? undefined : p.leaseOwner;
          setStatus(state, g.phase, p, 'ready');
          p.resumable = { attempt: g.attempt ?? p.attempts, owner, until: owner === undefined ? e.at : e.at + RESUME_GRACE_MS };
          markWait(state, g.phase, p);
        }
      }
      return;
    }
    case 'gate.refused':
      return;
    case 'gate.expired': {
      const g = state.gates.get(e.gate_id);
      if (g) g.expired = true;
      return;
    }
    case 'gate.escalated': {
      const g = state.gates.get(e.gate_id);
      if (g) g.escalated = true;
      return;
    }
    case 'gate.withdrawn': {
      const g = state.gates.get(e.gate_id);
      if (g) {
        g.status = 'withdrawn';
        g.decidedAt = e.at;
      }
      // the attempt that asked holds its task again, for the outcome that ends it (the next event)
      const p = state.phases.get(e.phase);
      if (p && p.status === 'suspended_awaiting_input' && p.gate === e.gate_id) setStatus(state, e.phase, p, 'running');
      return;
    }
    case 'budget.alert':
      state.alerted.add(e.scope === 'run' ? '' : (e.phase ?? ''));
      return;
    case 'run.completed':
      state.status = 'completed';
      state.endedAt = e.at;
      closeGates(state);
      return;
    case 'run.failed':
      state.status = 'failed';
      state.failure = e.failure;
      state.endedAt = e.at;
      closeGates(state);
      return;
    case 'run.cancelled':
      state.status = 'cancelled';
      state.cancelReason = e.reason;
      state.endedAt = e.at;
      closeGates(state);
      return;
    default: {
      const never: never = e;
      throw new Error(`unknown event ${(never as { type: string }).type}`);
    }
  }
}

/**
 * How long the process whose attempt asked for input keeps the right to continue that attempt
 * after the answer; past it (the process is gone) any worker runs a new attempt with
 * `ctx.inputResponse`.
 */
export const RESUME_GRACE_MS = 30_000;

/** A run that ended leaves no gate open: those still waiting are closed. */
function closeGates(state: RunState): void {
  for (const g of state.gates.values()) if (g.status === 'open') g.status = 'closed';
}

export function replay(runId: string, events: Iterable<RunEvent>): RunState {
  const s = initialState(runId);
  for (const e of events) applyEvent(s, e);
  return s;
}

/** The run status as stored and shown: `waiting` while gates are open and nothing runs or is ready. */
export function runStatusOf(state: RunState): RunStatus {
  if (state.status !== 'running') return state.status;
  if (state.running.size > 0) return 'running';
  let open = false;
  let access = false;
  for (const g of state.gates.values()) {
    if (g.status !== 'open') continue;
    open = true;
    // an open run gate holds every ready task: the run waits for a decision, not for a worker
    if (g.kind === 'run') return 'waiting';
    if (g.kind === 'access') access = true;
  }
  if (!open) return 'running';
  if (state.ready.size === 0) return 'waiting';
  if (!access) return 'running';
  // ready tasks held by their agent's open access gate wait too (the agents are known once the graph is attached)
  const assign = state.graph?.assign;
  for (const name of state.ready) {
    const p = state.phases.get(name)!;
    const agent = p.nextAgent ?? assign?.get(name);
    if (agent === undefined || state.gates.get(`access-${agent}`)?.status !== 'open') return 'running';
  }
  return 'waiting';
}

/** a + b to 1e-12 USD: far below any price, far above a float sum's drift (0.1 + 0.2 is 0.30000000000000004). */
export function sumUsd(a: number, b: number): number {
  return Math.round((a + b) * 1e12) / 1e12;
}

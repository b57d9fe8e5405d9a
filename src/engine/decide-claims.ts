/**
 * Claims: ready tasks handed to a worker, with the access gates a claim opens and the inputs resolved
 * from the recorded outputs.
 */
import type { Json } from '../core/json.js';
import { tryResolveTaskInputs } from '../workflow/runtime.js';
import { contractOfPhase } from './plan.js';
import { claimableAt, runGateOpen } from './due.js';
import type { Claimed, Fact } from './decide-types.js';
import { emit, initialStateOf, model, openGate, outputsView, type Ctx } from './decide-context.js';
import { failAccess } from './decide-gates.js';
import { fanArray, fanOut, terminal } from './decide-settle.js';

// ---- claims -----------------------------------------------------------------------------------

export function claim(ctx: Ctx, f: Extract<Fact, { kind: 'claim' }>): Claimed[] {
  const { state, env } = ctx;
  // made with its first task (a chain claims one a commit: an empty list's first push made room for 17)
  let out: Claimed[] | undefined;
  if (f.max <= 0 || runGateOpen(state)) return [];
  // the set itself, not a copy: claims delete what they take (safe while iterating); a fan-out phase released
  // by its gate adds its first items, which this same loop then visits (a Set iterates what is added to it)
  for (const name of state.ready) {
    if ((out !== undefined && out.length >= f.max) || state.status !== 'running') break;
    const p = state.phases.get(name)!;
    const pm = model(ctx, name);
    if (p.item === undefined && pm.forEach) {
      // a fan-out phase released by its approval gate: it runs as its items, never as one task
      fanOut(ctx, name);
      continue;
    }
    if (p.notBefore !== undefined && p.notBefore > env.now) continue;
    // agentOf(), with the phase and its model at hand
    const agent = p.nextAgent ?? pm.assign;
    if (ctx.plan.accessAgents.has(agent)) {
      // a claim opens the agent's access gate (its first task), and fails tasks whose access was denied
      const g = state.gates.get(`access-${agent}`);
      if (g === undefined) openAccessGate(ctx, agent, name);
      const now = state.gates.get(`access-${agent}`)!;
      if (now.status === 'denied') {
        failAccess(ctx, name, now);
        continue;
      }
    }
    // the one rule of when a task is due for this claimant (due.ts): the worker sleeps by the same one
    const at = claimableAt(ctx.plan, state, name, f);
    if (at === undefined || at > env.now) continue;
    let item: { index: number; value: Json } | undefined;
    if (p.item) {
      const arr = fanArray(ctx, pm, pm.forEach!);
      // the upstream outputs were recorded once and never change: the array the phase fanned out over still resolves
      if (arr.ok) item = { index: p.item.index, value: arr.items[p.item.index] ?? null };
    }
    const r = tryResolveTaskInputs(pm, outputsView(state), { trigger: state.trigger, initialState: initialStateOf(ctx, pm), taskId: p.taskId, item });
    if (!r.ok) {
      // upstream outputs never change once recorded: a rejected claim can never succeed, so the task fails now
      const payload = r.error.toJSON();
      emit(ctx, { type: 'task.claim_rejected', phase: name, task_id: p.taskId, error: payload });
      terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: p.attempts, failure: { code: r.error.error, error: r.error.error, message: r.error.message, retryable: false, details: payload } });
      continue;
    }
    let inputResponse: Json | undefined;
    if (p.resumable && p.inputGates.length > 0) inputResponse = state.gates.get(p.inputGates[p.inputGates.length - 1]!)?.value;
    // a later attempt resumes from the last checkpoint, unless the contract says a timeout starts over (`onTimeout: retry`)
    // (the contract looked up only after a timeout)
    const fresh = p.lastFailure?.code === 'Timeout' && contractOfPhase(ctx.plan, name)?.errorHandling.onTimeout?.action === 'retry';
    const lastCheckpoint = p.checkpoint !== undefined && !fresh ? p.checkpoint.value : undefined;
    const attempt = p.attempts + 1;
    emit(ctx, { type: 'task.claimed', phase: name, task_id: p.taskId, attempt, agent, input: r.input, worker: f.worker, lease_expires_at: env.now + f.leaseMs, seq: 0, at: 0 });
    const c: Claimed = { phase: name, taskId: p.taskId, attempt, agent, input: r.input };
    if (item) c.item = item;
    if (inputResponse !== undefined) c.inputResponse = inputResponse;
    if (lastCheckpoint !== undefined) c.lastCheckpoint = lastCheckpoint;
    if (out === undefined) out = [c];
    else out.push(c);
  }
  return out ?? [];
}

function openAccessGate(ctx: Ctx, agent: string, phase: string): void {
  const ar = ctx.plan.model.governance.accessReview;
  const id = `access-${agent}`;
  const g = openGate(ctx, id, 'access', { approvers: ar?.approvers ?? [], timeoutHours: ar?.timeoutHours, onTimeout: undefined }, `agent \`${agent}\` requires access approval before its first task (phase \`${phase}\`)`, { agent });
  if (g.status !== 'open' || !ar || ar.onRequest === 'defer') return;
  emit(ctx, { type: 'gate.decided', gate_id: id, decision: ar.onRequest === 'approve' ? 'approved' : 'denied', by: 'access_review', auto: true });
}

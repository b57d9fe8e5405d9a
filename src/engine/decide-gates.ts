/**
 * Gate commands and what follows them: approving or denying a gate, answering an input gate (and an
 * escalation), and an attempt asking for input.
 */
import type { Json } from '../core/json.js';
import { UpstreamIntentSuspendedError } from '../workflow/errors.js';
import type { PhaseModel } from '../workflow/model.js';
import type { FailureRecord } from './events.js';
import { checkAnswer } from './answers.js';
import { toJson } from './attempt.js';
import type { GateState } from './state.js';
import type { Fact, FactResult } from './decide-types.js';
import { agentOf, emit, HOUR, model, openGate, type Ctx } from './decide-context.js';
import { stop, terminal } from './decide-settle.js';

// ---- gates ----------------------------------------------------------------------------------

export function decideGate(ctx: Ctx, f: Extract<Fact, { kind: 'decide_gate' }>): FactResult {
  const g = ctx.state.gates.get(f.gateId);
  if (!g) return { kind: 'gate', ok: false, code: 'unknown-gate', message: `run ${ctx.state.runId} has no gate \`${f.gateId}\`${gateList(ctx)}` };
  if (g.kind === 'input') return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` asks for input: answer it with \`baton respond\`` };
  if (g.status !== 'open') return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` was already ${g.status}${g.decidedBy ? ` by ${g.decidedBy}` : ''}` };
  if (g.approvers.length > 0 && !g.approvers.includes(f.by)) {
    const reason = `${f.by} is not an approver of gate \`${g.id}\` (approvers: ${g.approvers.join(', ')})`;
    emit(ctx, { type: 'gate.refused', gate_id: g.id, by: f.by, reason });
    return { kind: 'gate', ok: false, code: 'gate-refused', message: reason };
  }
  emit(ctx, { type: 'gate.decided', gate_id: g.id, decision: f.decision, by: f.by, ...(f.comment !== undefined ? { comment: f.comment } : {}), auto: false });
  afterDecision(ctx, g);
  return { kind: 'gate', ok: true };
}

/** What a decided (or expired) gate leads to. */
export function afterDecision(ctx: Ctx, g: GateState): void {
  if (g.status !== 'denied') return;
  const failure = (code: string, message: string): FailureRecord => ({ code, message, retryable: false, details: { gate_id: g.id, ...(g.decidedBy ? { by: g.decidedBy } : {}) } });
  switch (g.kind) {
    case 'run':
      stop(ctx, { kind: 'failed', failure: failure('ApprovalDenied', `the run was denied approval${g.decidedBy ? ` by ${g.decidedBy}` : ''}`) });
      return;
    case 'phase': {
      const p = ctx.state.phases.get(g.phase!)!;
      if (p.status === 'awaiting_approval') terminal(ctx, { type: 'task.failed', phase: g.phase!, task_id: p.taskId, attempts: p.attempts, failure: failure('ApprovalDenied', `phase '${g.phase!}' was denied approval${g.decidedBy ? ` by ${g.decidedBy}` : ''}`) });
      return;
    }
    case 'access':
      for (const name of [...ctx.state.ready]) {
        if (agentOf(ctx, name) === g.agent) failAccess(ctx, name, g);
      }
      return;
    case 'input':
      return;
  }
}

export function failAccess(ctx: Ctx, name: string, g: GateState): void {
  const p = ctx.state.phases.get(name)!;
  terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: p.attempts, failure: { code: 'AccessDenied', message: `agent '${g.agent ?? ''}' was denied access${g.decidedBy ? ` by ${g.decidedBy}` : ''}`, retryable: false, details: { gate_id: g.id, agent: g.agent ?? null } } });
}

/** The refusal of a command that names a gate the run never had (a typo): `unknown-gate`, whatever the run's status. */
export function unknownGate(ctx: Ctx, gateId: string): FactResult | undefined {
  return ctx.state.gates.has(gateId) ? undefined : { kind: 'gate', ok: false, code: 'unknown-gate', message: `run ${ctx.state.runId} has no gate \`${gateId}\`${gateList(ctx)}` };
}

function gateList(ctx: Ctx): string {
  const ids = [...ctx.state.gates.keys()];
  return ids.length === 0 ? ' (it has no gates)' : ` (its gates: ${ids.join(', ')})`;
}

export function respond(ctx: Ctx, f: Extract<Fact, { kind: 'respond' }>): FactResult {
  const g = ctx.state.gates.get(f.gateId);
  if (!g) return { kind: 'gate', ok: false, code: 'unknown-gate', message: `run ${ctx.state.runId} has no gate \`${f.gateId}\`${gateList(ctx)}` };
  if (g.kind !== 'input') return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` is an approval: decide it with \`baton approve\` or \`baton deny\`` };
  if (g.status === 'withdrawn') return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` was withdrawn: the attempt that asked ended before it was answered` };
  if (g.status !== 'open') return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` was already answered${g.decidedBy ? ` by ${g.decidedBy}` : ''}` };
  if (g.expired) return { kind: 'gate', ok: false, code: 'gate-refused', message: `gate \`${g.id}\` timed out: its question is no longer asked` };
  if (g.approvers.length > 0 && !g.approvers.includes(f.by)) {
    const reason = `${f.by} may not answer gate \`${g.id}\` (allowed: ${g.approvers.join(', ')})`;
    emit(ctx, { type: 'gate.refused', gate_id: g.id, by: f.by, reason });
    return { kind: 'gate', ok: false, code: 'gate-refused', message: reason };
  }
  // the answer is recorded: it must be JSON a store keeps exactly (a library caller may pass anything)
  const json = toJson(f.value);
  const wrong = !json.ok ? `the answer is not JSON: it ${json.message}` : checkAnswer(json.value, g.choices, g.schema);
  if (wrong !== undefined || !json.ok) {
    const reason = wrong ?? 'the answer is not JSON';
    emit(ctx, { type: 'gate.refused', gate_id: g.id, by: f.by, reason });
    return { kind: 'gate', ok: false, code: 'gate-refused', message: reason };
  }
  // the process whose attempt asked is gone (this host knows): no grace kept for it to continue
  const asker = g.phase !== undefined && !g.escalation ? ctx.state.phases.get(g.phase) : undefined;
  const gone = asker?.status === 'suspended_awaiting_input' && asker.leaseOwner !== undefined && f.ownerGone?.(asker.leaseOwner) === true;
  emit(ctx, { type: 'gate.answered', gate_id: g.id, value: json.value, by: f.by, ...(gone ? { owner_gone: true as const } : {}) });
  if (g.escalation) afterEscalation(ctx, g, json.value, f.by);
  return { kind: 'gate', ok: true };
}

export function requestInput(ctx: Ctx, f: Extract<Fact, { kind: 'request_input' }>): FactResult {
  const p = ctx.state.phases.get(f.phase);
  if (!p || p.status !== 'running' || p.attempts !== f.attempt || p.leaseOwner !== f.worker) return { kind: 'input-refused', message: 'the attempt no longer holds its task' };
  // the k-th request of any attempt is the latest gate opened for index k: an attempt that replaces one that
  // asked gets the answer again; a gate that timed out unanswered is asked anew
  for (let i = p.inputGates.length - 1; i >= 0; i--) {
    const g = ctx.state.gates.get(p.inputGates[i]!)!;
    if (g.index !== f.index) continue;
    if (g.status === 'answered') return { kind: 'input', gateId: g.id, answered: true, value: g.value ?? null };
    break;
  }
  const id = `input-${f.phase}-${p.inputGates.length + 1}`;
  const gate = openGate(
    ctx,
    id,
    'input',
    { approvers: [], timeoutHours: f.timeoutMs !== undefined ? f.timeoutMs / HOUR : undefined, onTimeout: undefined },
    f.question,
    {
      phase: f.phase,
      task_id: p.taskId,
      agent: p.agent ?? model(ctx, f.phase).assign,
      attempt: f.attempt,
      index: f.index,
      question: f.question,
      ...(f.choices !== undefined ? { choices: f.choices } : {}),
      ...(f.schema !== undefined ? { schema: f.schema } : {}),
    },
  );
  rejectReaders(ctx, f.phase, gate);
  return { kind: 'input', gateId: id, answered: false };
}

/**
 * RFC-0024's RFC-0026 patch: claims of the downstream tasks whose declared inputs read a suspended phase
 * (an agent's question, or an escalation to a human) are rejected while it is suspended (a dependent that
 * reads nothing from it is only pending).
 */
export function rejectReaders(ctx: Ctx, phase: string, gate: GateState): void {
  const p = ctx.state.phases.get(phase)!;
  const expected = gate.expiresAt !== undefined ? new Date(gate.expiresAt).toISOString() : null;
  for (const d of ctx.plan.dependents.get(phase) ?? []) {
    if (!readsPhase(model(ctx, d), phase)) continue;
    const dp = ctx.state.phases.get(d)!;
    const err = new UpstreamIntentSuspendedError(dp.taskId, d, p.taskId, expected);
    emit(ctx, { type: 'task.claim_rejected', phase: d, task_id: dp.taskId, error: err.toJSON() });
  }
}

/** Whether a phase's declared inputs (or its `for_each`) read an output of `upstream`. */
function readsPhase(phase: PhaseModel, upstream: string): boolean {
  if (phase.forEach?.source.kind === 'phase' && phase.forEach.source.phase === upstream) return true;
  return phase.inputs?.some((b) => b.source.kind === 'phase' && b.source.phase === upstream) === true;
}

/** The human's answer to an escalation. */
export function afterEscalation(ctx: Ctx, g: GateState, answer: Json, by: string): void {
  const name = g.phase!;
  const p = ctx.state.phases.get(name)!;
  if (p.status !== 'suspended_awaiting_input' || p.gate !== g.id) return;
  const failure = g.escalation!.failure;
  if (answer === 'retry') {
    emit(ctx, { type: 'task.retrying', phase: name, task_id: p.taskId, attempt: p.attempts, next_attempt: p.attempts + 1, delay_ms: 0, agent: model(ctx, name).assign, reason: 'EscalationRetry' });
  } else if (answer === 'skip') {
    terminal(ctx, { type: 'task.skipped', phase: name, task_id: p.taskId, reason: 'escalation', detail: `skipped by ${by} after ${failure.code}` });
  } else {
    terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: p.attempts, failure: { ...failure, retryable: false, details: { ...(failure.details ?? {}), escalation: g.id, decided_by: by } } });
  }
}

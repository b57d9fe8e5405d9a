/**
 * Timers (the `tick` fact): the run deadline, gate escalations and gate expiries.
 */
import type { FailureRecord } from './events.js';
import { emit, formatMs, model, type Ctx } from './decide-context.js';
import { afterDecision } from './decide-gates.js';
import { retryOrFail } from './decide-outcomes.js';
import { stop } from './decide-settle.js';

export function tick(ctx: Ctx): void {
  const { state, env } = ctx;
  const now = env.now;
  if (state.deadlineAt !== undefined && now >= state.deadlineAt) {
    const ms = state.deadlineAt - state.startedAt;
    stop(ctx, { kind: 'failed', failure: { code: 'RunTimeout', message: `the run timed out after ${formatMs(ms)}`, retryable: false, details: { timeout_ms: ms } } });
    return;
  }
  const contact = ctx.plan.model.governance.escalation?.contact ?? null;
  for (const g of [...state.gates.values()]) {
    if (g.status !== 'open' || state.status !== 'running') continue;
    if (g.escalateAt !== undefined && !g.escalated && now >= g.escalateAt) {
      emit(ctx, { type: 'gate.escalated', gate_id: g.id, contact, waited_ms: now - g.openedAt });
    }
    if (g.expiresAt === undefined || g.expired || now < g.expiresAt) continue;
    if (g.kind === 'input') {
      emit(ctx, { type: 'gate.expired', gate_id: g.id, action: 'abort' });
      const p = state.phases.get(g.phase!)!;
      if (p.status === 'suspended_awaiting_input' && p.gate === g.id) {
        // retryable as a phase Timeout is: a retry asks again on a new gate (when the policy allows)
        const failure: FailureRecord = { code: 'InputTimeout', message: `no answer to \`${g.question ?? g.reason}\` within ${formatMs(g.expiresAt - g.openedAt)}`, retryable: true, details: { gate_id: g.id } };
        emit(ctx, { type: 'task.attempt_failed', phase: g.phase!, task_id: p.taskId, attempt: p.attempts, failure });
        retryOrFail(ctx, g.phase!, p.attempts, p.agent ?? model(ctx, g.phase!).assign, failure);
      }
      continue;
    }
    if (g.kind === 'access') {
      emit(ctx, { type: 'gate.expired', gate_id: g.id, action: 'abort' });
      emit(ctx, { type: 'gate.decided', gate_id: g.id, decision: 'denied', by: 'timeout', auto: true });
      afterDecision(ctx, g);
      continue;
    }
    const action = g.onTimeout ?? 'escalate';
    emit(ctx, { type: 'gate.expired', gate_id: g.id, action });
    if (action === 'escalate') {
      if (!g.escalated) emit(ctx, { type: 'gate.escalated', gate_id: g.id, contact, waited_ms: now - g.openedAt });
    } else if (action === 'proceed') {
      emit(ctx, { type: 'gate.decided', gate_id: g.id, decision: 'approved', by: 'timeout', auto: true });
    } else {
      stop(ctx, { kind: 'failed', failure: { code: 'ApprovalTimeout', message: `gate \`${g.id}\` was not decided within ${formatMs(g.expiresAt - g.openedAt)}`, retryable: false, details: { gate_id: g.id } } });
    }
  }
}

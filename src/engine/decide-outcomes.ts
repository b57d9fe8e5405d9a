/**
 * Outcomes of attempts: a completion checked against the declared outputs and the contract, or a
 * failure retried, handed to the fallback agent, escalated to a human or made final; and costs against
 * the phase and run budgets.
 */
import { isPlainObject, type JsonObject } from '../core/json.js';
import { checkTaskOutputs } from '../workflow/runtime.js';
import { BudgetExceededError } from './errors.js';
import type { FailureRecord, RunEvent } from './events.js';
import { contractOfPhase } from './plan.js';
import { backoffDelay, isRetryable } from './retry.js';
import { foldedItem, sumUsd, taskIdFor, type PhaseState } from './state.js';
import type { Fact } from './decide-types.js';
import { emit, model, openGate, type Ctx } from './decide-context.js';
import { stop, terminal } from './decide-settle.js';
import { rejectReaders } from './decide-gates.js';

// ---- outcomes -----------------------------------------------------------------------------------

/** Decides an attempt's outcome; true when it completed the task (accepted: its output files are recorded, then synced). */
export function outcome(ctx: Ctx, f: Extract<Fact, { kind: 'outcome' }>): boolean {
  const p = ctx.state.phases.get(f.phase);
  if (!p) {
    // an item folded out of the state has settled: a late outcome is recorded, as for any settled task
    const folded = foldedItem(ctx.state, f.phase);
    if (folded) emit(ctx, { type: 'task.stale_outcome', phase: f.phase, task_id: taskIdFor(ctx.state.runId, f.phase), attempt: f.attempt, worker: f.worker, reason: `the task is ${folded.fan.done![folded.index] === null ? 'skipped' : 'completed'}`, outcome: f.outcome.ok ? 'completed' : 'failed' });
    return false;
  }
  ownOutcome(ctx, f, p);
  const stale = p.status !== 'running' ? `the task is ${p.status}` : p.attempts !== f.attempt ? `attempt ${p.attempts} replaced it` : p.leaseOwner !== undefined && p.leaseOwner !== f.worker ? `its lease passed to ${p.leaseOwner}` : undefined;
  if (stale !== undefined) {
    emit(ctx, { type: 'task.stale_outcome', phase: f.phase, task_id: p.taskId, attempt: f.attempt, worker: f.worker, reason: stale, outcome: f.outcome.ok ? 'completed' : 'failed' });
    return false;
  }
  const pm = model(ctx, f.phase);
  const agent = p.agent ?? pm.assign;
  if (!f.outcome.ok) {
    emit(ctx, { type: 'task.attempt_failed', phase: f.phase, task_id: p.taskId, attempt: f.attempt, failure: f.outcome.failure });
    retryOrFail(ctx, f.phase, f.attempt, agent, f.outcome.failure, f.settlingMs !== undefined && f.settlingMs > 0 ? { by: f.worker, until: ctx.env.now + f.settlingMs } : undefined);
    return false;
  }
  if (f.outcome.costUsd > 0) {
    addCost(ctx, f.phase, f.attempt, f.outcome.costUsd);
    if (ctx.state.status !== 'running') return false;
  }
  const checked = checkTaskOutputs(pm, f.outcome.output, { taskId: p.taskId });
  if (!checked.ok) {
    const payload = checked.error.toJSON();
    emit(ctx, { type: 'task.rejected', phase: f.phase, task_id: p.taskId, attempt: f.attempt, error: payload });
    retryOrFail(ctx, f.phase, f.attempt, agent, { code: checked.error.error, error: checked.error.error, message: checked.error.message, retryable: true, details: payload });
    return false;
  }
  const recorded = checked.output;
  let partial = false;
  // (the contract looked up only for a partial result)
  const pc = recorded['completionStatus'] === 'partial' ? contractOfPhase(ctx.plan, f.phase)?.errorHandling.onPartialCompletion : undefined;
  if (pc) {
    const missing = pc.action === 'return_partial' ? pc.requiresFlags.filter((k) => isEmpty(recorded[k])) : [];
    if (pc.action === 'fail' || missing.length > 0) {
      const failure: FailureRecord =
        pc.action === 'fail'
          ? { code: 'PartialCompletion', message: `agent \`${agent}\` returned a partial result (completionStatus: partial), which its contract does not accept (onPartialCompletion: fail)`, retryable: true, details: { agent } }
          : { code: 'PartialCompletionError', message: `agent \`${agent}\` returned a partial result without ${missing.map((k) => `\`${k}\``).join(', ')}, which its contract requires to flag what is missing`, retryable: true, details: { agent, missing } };
      emit(ctx, { type: 'task.attempt_failed', phase: f.phase, task_id: p.taskId, attempt: f.attempt, failure });
      retryOrFail(ctx, f.phase, f.attempt, agent, failure);
      return false;
    }
    partial = true;
  }
  const extra = pm.outputs ? extraKeys(recorded, pm.outputs) : [];
  // the output files go with the completion, in its commit: a file is synced only once this is recorded
  if (f.files) for (const file of f.files) emit(ctx, { type: 'task.file', phase: f.phase, task_id: p.taskId, attempt: f.attempt, ...file });
  // seq and at last, set by emit (decide-context.ts)
  const completed: RunEvent & { type: 'task.completed' } = partial
    ? { type: 'task.completed', phase: f.phase, task_id: p.taskId, attempt: f.attempt, output: recorded, extra_keys: extra, cost_usd: roundCost(p.costUsd), partial: true, seq: 0, at: 0 }
    : { type: 'task.completed', phase: f.phase, task_id: p.taskId, attempt: f.attempt, output: recorded, extra_keys: extra, cost_usd: roundCost(p.costUsd), seq: 0, at: 0 };
  terminal(ctx, completed);
  return true;
}

/**
 * An attempt that ends while its own question is open (an agent that returned without awaiting its
 * `requestInput`, a remote agent that completes or fails before the answer came) or answered but not
 * yet resumed: its outcome is the attempt's last word, so it is applied, not recorded as stale while
 * the task waits for an answer nobody needs and then runs again as a new attempt. An open question is
 * withdrawn first (`gate.withdrawn`: answers are refused from then on); an answered one was resumed
 * by this very outcome (`task.resumed`). Either puts the task back in the attempt's hands, as when it
 * asked, and the outcome then goes the ordinary way.
 */
function ownOutcome(ctx: Ctx, f: Extract<Fact, { kind: 'outcome' }>, p: PhaseState): void {
  if (p.attempts !== f.attempt) return;
  if (p.status === 'suspended_awaiting_input') {
    if (p.leaseOwner !== undefined && p.leaseOwner !== f.worker) return;
    const g = p.gate !== undefined ? ctx.state.gates.get(p.gate) : undefined;
    if (!g || g.kind !== 'input' || g.status !== 'open' || g.escalation !== undefined || g.attempt !== f.attempt) return;
    emit(ctx, { type: 'gate.withdrawn', gate_id: g.id, phase: f.phase, attempt: f.attempt, reason: `attempt ${f.attempt} ${f.outcome.ok ? 'completed' : 'failed'} before its question was answered` });
    return;
  }
  if (p.status === 'ready' && p.resumable?.attempt === f.attempt && p.resumable.owner === f.worker) {
    emit(ctx, { type: 'task.resumed', phase: f.phase, task_id: p.taskId, attempt: f.attempt, worker: f.worker, lease_expires_at: ctx.env.now });
  }
}

/** The keys of an output that its phase does not declare (`extra_keys`), in the output's order. */
function extraKeys(output: JsonObject, declared: readonly { key: string }[]): string[] {
  const extra: string[] = [];
  // for-in over own keys, in Object.keys' order: no array of keys per completion
  for (const k in output) {
    if (!Object.prototype.hasOwnProperty.call(output, k)) continue;
    let known = false;
    for (const d of declared) {
      if (d.key === k) {
        known = true;
        break;
      }
    }
    if (!known) extra.push(k);
  }
  return extra;
}

function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0) || (isPlainObject(v) && Object.keys(v).length === 0);
}

function roundCost(x: number): number {
  return Math.round(x * 1e9) / 1e9;
}

/**
 * After a failed attempt: retry (the phase's retry policy, or the contract's `onTimeout` for a
 * timeout), hand over to the fallback agent, ask a human (`onAgentFailure: escalate_to_user`), or
 * fail the phase. `hold`: the failed attempt's code still runs in worker `by`; the next attempt is
 * that worker's until `until`.
 */
export function retryOrFail(ctx: Ctx, name: string, attempt: number, agent: string, failure: FailureRecord, hold?: Hold): void {
  const pm = model(ctx, name);
  const p = ctx.state.phases.get(name)!;
  const policy = pm.retry;
  const eh = contractOfPhase(ctx.plan, name)?.errorHandling;
  const onFallback = agent !== pm.assign;
  // after a human chose `retry`, a new failure goes back to the human
  const escalated = p.escalations > 0;
  const ot = eh?.onTimeout;
  if (failure.code === 'Timeout' && ot !== undefined) {
    // the contract's `onTimeout` governs timeouts (counted apart from the retry policy's failures)
    if (!onFallback && !escalated && ot.action !== 'fail' && p.timeouts <= ot.maxRetries) {
      retry(ctx, name, attempt, agent, failure, backoffDelay(policy, p.timeouts), hold);
      return;
    }
  } else {
    const counted = p.failures - (ot ? p.timeouts : 0);
    if (!onFallback && !escalated && eh?.onAgentFailure?.action !== 'fail' && counted < policy.maxAttempts && isRetryable(policy, failure)) {
      // a provider's retry-after (a rate limit) is honoured when it asks for longer than the backoff
      const after = failure.details?.['retry_after_ms'];
      retry(ctx, name, attempt, agent, failure, Math.max(backoffDelay(policy, counted), typeof after === 'number' && Number.isFinite(after) && after > 0 ? Math.min(after, 86_400_000) : 0), hold);
      return;
    }
  }
  const fb = eh?.onAgentFailure?.fallbackAgent ?? policy.fallbackAgent;
  if (!onFallback && !escalated && fb !== undefined && fb !== pm.assign && eh?.onAgentFailure?.action !== 'fail') {
    emit(ctx, { type: 'task.retrying', phase: name, task_id: p.taskId, attempt, next_attempt: attempt + 1, delay_ms: 0, agent: fb, reason: failure.code, ...held(hold) });
    return;
  }
  if (eh?.onAgentFailure?.action === 'escalate_to_user' && failure.code !== 'InputValidationError') {
    escalate(ctx, name, failure);
    return;
  }
  terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: attempt, failure });
}

type Hold = { by: string; until: number };

const held = (hold: Hold | undefined): { held_by?: string; held_until?: number } => (hold ? { held_by: hold.by, held_until: hold.until } : {});

function retry(ctx: Ctx, name: string, attempt: number, agent: string, failure: FailureRecord, delay: number, hold?: Hold): void {
  const p = ctx.state.phases.get(name)!;
  emit(ctx, {
    type: 'task.retrying',
    phase: name,
    task_id: p.taskId,
    attempt,
    next_attempt: attempt + 1,
    delay_ms: delay,
    agent,
    reason: failure.code,
    ...(delay > 0 ? { not_before: ctx.env.now + Math.ceil(delay) } : {}),
    ...held(hold),
  });
}

export const ESCALATION_CHOICES: readonly string[] = ['retry', 'skip', 'fail'];

/** `onAgentFailure: escalate_to_user`: an input gate asks a human whether to retry, skip or fail the phase. */
function escalate(ctx: Ctx, name: string, failure: FailureRecord): void {
  const p = ctx.state.phases.get(name)!;
  const question = `phase \`${name}\` failed after ${p.attempts} attempt${p.attempts === 1 ? '' : 's'} (${failure.code}: ${failure.message.slice(0, 500)}); retry, skip or fail it?`;
  const gate = openGate(ctx, `escalate-${name}-${p.escalations + 1}`, 'input', { approvers: [], timeoutHours: undefined, onTimeout: undefined }, question, {
    phase: name,
    task_id: p.taskId,
    agent: p.agent ?? model(ctx, name).assign,
    attempt: p.attempts,
    question,
    choices: [...ESCALATION_CHOICES],
    escalation: { failure },
  });
  rejectReaders(ctx, name, gate);
}

export function addCost(ctx: Ctx, name: string, attempt: number, usd: number): void {
  if (usd === 0) return;
  const { state } = ctx;
  const pm = model(ctx, name);
  const ps: PhaseState = state.phases.get(name)!;
  // running sums of float costs drift (0.1 + 0.2 is 0.30000000000000004): the totals are kept to 1e-12 USD,
  // so the events, the state folded from them and ctx.remainingBudgetUsd() say 0.3
  const phaseTotal = sumUsd(ps.costUsd, usd);
  const runTotal = sumUsd(state.costUsd, usd);
  emit(ctx, { type: 'task.cost', phase: name, task_id: ps.taskId, attempt, usd, phase_total_usd: phaseTotal, run_total_usd: runTotal });
  const ct = pm.costTracking;
  if (ct && ct.enabled && ct.budgetUsd !== undefined) {
    // a fan-out item's spend counts against its phase's budget, with its siblings' (the event above added it)
    const scope = ps.item ? ps.item.parent : name;
    const spent = ps.item ? state.phases.get(scope)!.costUsd : phaseTotal;
    // a zero budget has no percentages (x / 0 is Infinity, which JSON stores as null): any spend exceeds it, below
    const pct = (spent / ct.budgetUsd) * 100;
    if (ct.budgetUsd > 0 && ct.alertAtPercent !== undefined && pct >= ct.alertAtPercent && !state.alerted.has(scope)) {
      emit(ctx, { type: 'budget.alert', scope: 'phase', phase: scope, budget_usd: ct.budgetUsd, spent_usd: spent, percent: Math.round(pct * 10) / 10 });
    }
    if (spent > ct.budgetUsd + 1e-12) {
      const err = new BudgetExceededError('phase', ct.budgetUsd, spent, scope);
      stop(ctx, { kind: 'failed', failure: { code: err.error, error: err.error, message: err.message, retryable: false, details: err.toJSON() } });
      return;
    }
  }
  const max = ctx.plan.model.governance.maxCostUsd;
  if (max !== undefined) {
    if (max > 0 && !state.alerted.has('') && runTotal >= max * 0.8) {
      emit(ctx, { type: 'budget.alert', scope: 'run', budget_usd: max, spent_usd: runTotal, percent: Math.round((runTotal / max) * 1000) / 10 });
    }
    if (runTotal > max + 1e-12) {
      const err = new BudgetExceededError('run', max, runTotal);
      stop(ctx, { kind: 'failed', failure: { code: err.error, error: err.error, message: err.message, retryable: false, details: err.toJSON() } });
    }
  }
}

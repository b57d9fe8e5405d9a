/**
 * What the decisions need from a compiled workflow, computed once per model: the dependency graph
 * both ways, the gates (run, phase, access) in engine terms.
 */
import { parseExpression, type Expression } from '../workflow/expr.js';
import type { AgentContract } from '../workflow/contract/model.js';
import { phasesNamed } from '../workflow/expressions.js';
import type { PhaseModel, WorkflowModel } from '../workflow/model.js';
import type { OnTimeout } from './events.js';
import { itemParent } from './state.js';

export interface GateSpec {
  when: Expression | undefined;
  approvers: string[];
  timeoutHours: number | undefined;
  onTimeout: OnTimeout;
}

export interface Plan {
  model: WorkflowModel;
  byName: ReadonlyMap<string, PhaseModel>;
  dependsOn: ReadonlyMap<string, readonly string[]>;
  dependents: ReadonlyMap<string, readonly string[]>;
  /** Each phase's `assign` (attached to run states so that a run held by an access gate shows as waiting). */
  assign: ReadonlyMap<string, string>;
  /**
   * `governance.require_approval`, with the phases its condition reads: `phases`, every one it waits for;
   * `direct`, those it reads by name (`risk.category`), which must have completed to be read (through
   * `phases.risk.status` a skipped or failed phase is read as such).
   */
  runGate: (GateSpec & { phases: string[]; direct: string[] }) | undefined;
  /** Phase gates (`x-require_approval` on a phase). */
  phaseGates: ReadonlyMap<string, GateSpec>;
  /** Agents declared `approval_required: true`. */
  accessAgents: ReadonlySet<string>;
  /**
   * Agent contracts by agent id: contract files, inline `x-contract`, LLM blueprints, and (at bind
   * time, `withContracts`) those `defineAgent` handlers carry. They steer partial completions,
   * timeouts (`onTimeout`), failures (`onAgentFailure`) and the default attempt timeout.
   */
  contracts: ReadonlyMap<string, AgentContract>;
}

/** The phase model of a task: its phase's, or for a fan-out item (`phase[index]`) its fan-out phase's. */
export function phaseModelOf(plan: Plan, task: string): PhaseModel | undefined {
  const pm = plan.byName.get(task);
  if (pm !== undefined) return pm;
  const parent = itemParent(task);
  return parent !== undefined ? plan.byName.get(parent) : undefined;
}

/** The phase's governing contract: its assigned agent's (a fallback agent runs under it). */
export function contractOfPhase(plan: Plan, phase: string): AgentContract | undefined {
  const pm = phaseModelOf(plan, phase);
  return pm ? plan.contracts.get(pm.assign) : undefined;
}

/** The plan with contracts that handlers carry (`defineAgent`) for agents the workflow gives none. */
export function withContracts(plan: Plan, extra: ReadonlyMap<string, AgentContract>): Plan {
  let contracts: Map<string, AgentContract> | undefined;
  for (const [id, c] of extra) {
    if (plan.contracts.has(id)) continue;
    (contracts ??= new Map(plan.contracts)).set(id, c);
  }
  return contracts ? { ...plan, contracts } : plan;
}

/** The default attempt timeout from a contract's `resources.estimatedTime` (its upper bound). */
export function estimatedMsOf(c: AgentContract | undefined): number | undefined {
  return c?.resources.estimatedMs?.max;
}

const plans = new WeakMap<WorkflowModel, Plan>();

export function planOf(model: WorkflowModel): Plan {
  let p = plans.get(model);
  if (!p) {
    p = buildPlan(model);
    plans.set(model, p);
  }
  return p;
}

function buildPlan(model: WorkflowModel): Plan {
  const dependsOn = new Map<string, readonly string[]>();
  const dependents = new Map<string, string[]>();
  const assign = new Map<string, string>();
  for (const p of model.phases) {
    assign.set(p.name, p.assign);
    dependsOn.set(p.name, p.dependsOn);
    dependents.set(p.name, []);
  }
  for (const p of model.phases) for (const d of p.dependsOn) dependents.get(d)?.push(p.name);
  const ra = model.governance.requireApproval;
  const runGate = ra
    ? {
        when: ra.when,
        approvers: ra.approvers,
        timeoutHours: ra.timeoutHours,
        onTimeout: ra.onTimeout,
        phases: ra.when ? phasesRead(ra.when, model) : [],
        direct: (ra.when?.names ?? []).filter((n) => n !== 'trigger' && n !== 'initial_state' && model.byName.has(n)),
      }
    : undefined;
  const phaseGates = new Map<string, GateSpec>();
  for (const p of model.phases) {
    const g = phaseGateOf(p);
    if (g) phaseGates.set(p.name, g);
  }
  const accessAgents = new Set<string>();
  const contracts = new Map<string, AgentContract>();
  for (const [id, a] of Object.entries(model.agents ?? {})) {
    if (a.approvalRequired) accessAgents.add(id);
    if (a.contract) contracts.set(id, a.contract);
  }
  return { model, byName: model.byName, dependsOn, dependents, assign, runGate, phaseGates, accessAgents, contracts };
}

/**
 * A phase's `x-require_approval`: `true`, or the shape of governance.require_approval (`when`
 * optional). The compiler checks it (phase-gate diagnostics); here it is only read.
 */
export function phaseGateOf(p: PhaseModel): GateSpec | undefined {
  const raw = p.extensions['x-require_approval'];
  if (raw === true) return { when: undefined, approvers: [], timeoutHours: undefined, onTimeout: 'escalate' };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const o = raw;
  let when: Expression | undefined;
  if (typeof o['when'] === 'string') {
    const r = parseExpression(o['when']);
    if (r.ok) when = r.expression;
  }
  const approvers = Array.isArray(o['approvers']) ? o['approvers'].filter((x): x is string => typeof x === 'string') : [];
  const th = o['timeout_hours'];
  const ot = o['on_timeout'];
  return {
    when,
    approvers,
    timeoutHours: typeof th === 'number' && Number.isFinite(th) && th > 0 ? th : undefined,
    onTimeout: ot === 'abort' || ot === 'proceed' ? ot : 'escalate',
  };
}

/**
 * The phases a workflow-level condition reads, so the run gate waits for them: by name (`risk.category`)
 * and through `phases` (`phases.risk.status`, `phases['fetch-data'].output.n`), else it would be evaluated
 * at the start and fail closed on a phase that has not run yet.
 */
function phasesRead(when: Expression, model: WorkflowModel): string[] {
  const out = new Set(when.names.filter((n) => n !== 'trigger' && n !== 'initial_state' && model.byName.has(n)));
  if (when.names.includes('phases') && !model.byName.has('phases')) {
    for (const { name } of phasesNamed(when.source)) if (model.byName.has(name)) out.add(name);
  }
  return [...out];
}

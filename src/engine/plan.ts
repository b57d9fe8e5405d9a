/**
 * What the decisions need from a compiled workflow, computed once per model: the dependency graph
 * both ways, the gates (run, phase, access) in engine terms.
 */
import { parseExpression, type Expression } from '../workflow/expr.js';
import type { PhaseModel, WorkflowModel } from '../workflow/model.js';
import type { OnTimeout } from './events.js';

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
  /** `governance.require_approval`, with the phases its condition reads (names other than trigger / initial_state). */
  runGate: (GateSpec & { phases: string[] }) | undefined;
  /** Phase gates (`x-require_approval` on a phase). */
  phaseGates: ReadonlyMap<string, GateSpec>;
  /** Agents declared `approval_required: true`. */
  accessAgents: ReadonlySet<string>;
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
        phases: (ra.when?.names ?? []).filter((n) => n !== 'trigger' && n !== 'initial_state' && model.byName.has(n)),
      }
    : undefined;
  const phaseGates = new Map<string, GateSpec>();
  for (const p of model.phases) {
    const g = phaseGateOf(p);
    if (g) phaseGates.set(p.name, g);
  }
  const accessAgents = new Set<string>();
  for (const [id, a] of Object.entries(model.agents ?? {})) if (a.approvalRequired) accessAgents.add(id);
  return { model, byName: model.byName, dependsOn, dependents, assign, runGate, phaseGates, accessAgents };
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

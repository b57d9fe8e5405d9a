/**
 * A run in the workflow-state shape of the agent-contract spec (its "state serialisation format"):
 * id, name, startedAt, currentStep, status, context (completed steps with their outputs, artifacts)
 * and nextSteps with the inputs they will receive. `baton show RUN --state` prints it; `baton run
 * --state-out FILE` keeps a file of it current while the run goes.
 */
import type { Json, JsonObject } from '../core/json.js';
import type { RunEvent } from '../engine/events.js';
import type { RunState } from '../engine/state.js';
import { runStatusOf } from '../engine/state.js';
import { tryResolveTaskInputs } from '../workflow/runtime.js';
import type { WorkflowModel } from '../workflow/model.js';
import { fileRows, storedArtifacts } from './artifacts.js';

export interface WorkflowStateDoc {
  workflowState: {
    id: string;
    name: string;
    startedAt: string;
    currentStep: string | null;
    status: 'in_progress' | 'waiting' | 'completed' | 'failed' | 'cancelled';
    context: {
      trigger: Json;
      completedSteps: { stepId: string; agentId: string | null; completedAt: string | null; outputs: JsonObject; /** Set when the step completed with a partial result its contract accepts. */ status?: 'partial' }[];
      /**
       * The run's artifacts: the `$store` tree of the step form (`artifacts.outline` -> the output stored
       * there), and the files it touched (provenance), keyed by workspace path: path -> {phase, attempt, access, sha256, size}.
       */
      artifacts: Record<string, Json>;
    };
    nextSteps: { stepId: string; agentId: string; inputs: JsonObject | null }[];
  };
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

export function workflowState(state: RunState, model: WorkflowModel, events: readonly RunEvent[], initialState?: JsonObject): WorkflowStateDoc {
  const status = runStatusOf(state);
  const completedSteps: WorkflowStateDoc['workflowState']['context']['completedSteps'] = [];
  let currentStep: string | null = null;
  const nextSteps: WorkflowStateDoc['workflowState']['nextSteps'] = [];
  const outputs = new Map<string, unknown>();
  for (const [name, p] of state.phases) if (p.output !== undefined) outputs.set(name, p.output);
  // document order (the model's), not the order the phases happened to settle in
  for (const pm of model.phases) {
    const p = state.phases.get(pm.name);
    if (!p) continue;
    // a fan-out phase is never claimed itself (its items are) and a rerun's reused phase was claimed in another run: its agent is the one assigned
    if (p.status === 'completed') completedSteps.push({ stepId: pm.name, agentId: p.agent ?? pm.assign, completedAt: iso(p.endedAt), outputs: p.output ?? {}, ...(p.partial ? { status: 'partial' as const } : {}) });
    else if (currentStep === null && (p.status === 'running' || p.status === 'suspended_awaiting_input' || p.status === 'awaiting_approval')) currentStep = pm.name;
    if (p.status === 'ready' || p.status === 'awaiting_approval' || (p.status === 'pending' && pm.dependsOn.every((d) => state.phases.get(d)?.status === 'completed'))) {
      const initial = initialState ? { ...initialState, ...pm.initialState } : pm.initialState;
      const r = tryResolveTaskInputs(pm, outputs, { trigger: state.trigger, initialState: initial, taskId: p.taskId });
      nextSteps.push({ stepId: pm.name, agentId: p.nextAgent ?? pm.assign, inputs: r.ok ? r.input : null });
    }
  }
  const artifacts: Record<string, Json> = {};
  for (const r of fileRows(state.runId, events)) {
    if (typeof r.path !== 'string') continue;
    artifacts[r.path] = { phase: r.phase, attempt: r.attempt, access: r.access, ...(r.key !== null ? { key: r.key } : {}), ...(r.item !== null ? { item: r.item } : {}), ...(r.sha256 !== null ? { sha256: r.sha256 } : {}), ...(r.size !== null ? { size: r.size } : {}) };
  }
  // the `$store` tree (step form) wins over a file of the same name
  Object.assign(artifacts, storedArtifacts(model, state));
  return {
    workflowState: {
      id: state.runId,
      name: model.info.name,
      startedAt: new Date(state.startedAt).toISOString(),
      currentStep,
      status: status === 'running' ? 'in_progress' : status,
      context: { trigger: state.trigger, completedSteps, artifacts },
      nextSteps,
    },
  };
}

/**
 * Stub agents for dry runs (`--stub-agents`): each returns a value built from the phase's declared
 * output types, so any workflow can be run end to end before its agents exist.
 */
import type { JsonObject } from '../core/json.js';
import type { AgentHandler } from '../engine/agent.js';
import type { WorkflowModel } from '../workflow/model.js';

export function stubAgent(model: WorkflowModel): AgentHandler {
  const samples = new Map<string, JsonObject>();
  return (ctx) => {
    let s = samples.get(ctx.phase);
    if (!s) {
      const p = model.byName.get(ctx.phase);
      s = p?.outputType ? (p.outputType.sample() as JsonObject) : {};
      samples.set(ctx.phase, s);
    }
    return structuredClone(s);
  };
}

/** Binds every agent the workflow names (assign and fallback) to the stub. */
export function stubAgents(model: WorkflowModel): Record<string, AgentHandler> {
  const h = stubAgent(model);
  const out: Record<string, AgentHandler> = {};
  for (const p of model.phases) {
    out[p.assign] = h;
    if (p.retry.fallbackAgent) out[p.retry.fallbackAgent] = h;
  }
  for (const id of Object.keys(model.agents ?? {})) out[id] = h;
  return out;
}

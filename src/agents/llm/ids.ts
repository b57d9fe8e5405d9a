/**
 * Which agents of a workflow run on a model: the decision alone, without the LLM layer (bind.ts) that
 * runs them. The engine asks it for every run it binds, and loads the LLM layer only for a run that has
 * such an agent: a workflow of functions and subprocesses never loads the ~30 modules of the LLM layer.
 */
import { BatonError } from '../../core/errors.js';
import type { WorkflowModel } from '../../workflow/model.js';

/** Every agent id a phase assigns (or falls back to), and every declared agent. */
export function referencedAgents(model: WorkflowModel): string[] {
  const ids = new Set<string>(Object.keys(model.agents ?? {}));
  for (const p of model.phases) {
    ids.add(p.assign);
    if (p.retry.fallbackAgent !== undefined) ids.add(p.retry.fallbackAgent);
  }
  return [...ids];
}

/** Which agents run on a model, given those already bound to something else (`agents`: `--llm ID`; `allUnbound`: `--llm-agents`). */
export function llmAgentIds(model: WorkflowModel, isBound: (id: string) => boolean, o: { agents?: readonly string[] | undefined; allUnbound?: boolean | undefined }): string[] {
  const known = referencedAgents(model);
  for (const id of o.agents ?? []) {
    if (!known.includes(id)) throw new BatonError('usage', `--llm ${id}: no phase is assigned agent \`${id}\` (agents: ${known.join(', ')})`);
  }
  return known.filter((id) => (o.agents ?? []).includes(id) || (!isBound(id) && (model.agents?.[id]?.blueprint !== undefined || o.allUnbound === true)));
}

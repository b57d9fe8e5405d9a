/** Checks of `--agent-command` / `--agent-serve` bindings against the workflow. */
import type { WorkflowModel } from '../workflow/model.js';

/** Every agent id a run can use: declared under `agents`, assigned, or a retry's fallback. */
export function agentIdsOf(model: WorkflowModel): string[] {
  const ids = new Set<string>(Object.keys(model.agents ?? {}));
  for (const p of model.phases) {
    ids.add(p.assign);
    if (p.retry.fallbackAgent) ids.add(p.retry.fallbackAgent);
  }
  return [...ids].sort();
}

/** A message for a binding of an agent the workflow does not have, or undefined. */
export function unknownBinding(flag: string, id: string, model: WorkflowModel): string | undefined {
  const ids = agentIdsOf(model);
  if (ids.includes(id)) return undefined;
  return `--${flag} ${id}=...: the workflow has no agent \`${id}\`; its agents are ${ids.map((a) => `\`${a}\``).join(', ')}`;
}

/** Where the bundled examples live, and how a workflow argument (file or example directory) is resolved. */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's examples/ folder (works from src/ under vitest and from dist/ when installed). */
export function examplesDir(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples');
}

export interface ResolvedTarget {
  workflow: string;
  /** An agents module beside the workflow (agents.mjs / .js / .ts), when the target is a directory. */
  agents: string | undefined;
  /** A trigger.json beside the workflow, when the target is a directory. */
  trigger: string | undefined;
}

const AGENT_FILES = ['agents.mjs', 'agents.js', 'agents.ts', 'agents.mts'];

/**
 * A FILE argument may be a workflow file, a directory holding workflow.yaml (then agents.* and
 * trigger.json beside it are used by default), or the name of a bundled example.
 */
export function resolveTarget(arg: string, cwd: string): ResolvedTarget | undefined {
  let path = resolve(cwd, arg);
  if (!existsSync(path)) {
    const example = join(examplesDir(), arg);
    if (!arg.includes('/') && existsSync(example)) path = example;
    else return undefined;
  }
  if (statSync(path).isDirectory()) {
    const wf = ['workflow.yaml', 'workflow.yml'].map((f) => join(path, f)).find((f) => existsSync(f));
    if (!wf) return undefined;
    const agents = AGENT_FILES.map((f) => join(path, f)).find((f) => existsSync(f));
    const trigger = join(path, 'trigger.json');
    return { workflow: wf, agents, trigger: existsSync(trigger) ? trigger : undefined };
  }
  return { workflow: path, agents: undefined, trigger: undefined };
}

export function listExamples(): string[] {
  const dir = examplesDir();
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((d) => existsSync(join(dir, d, 'workflow.yaml')))
    .sort();
}

/** Where the bundled examples live, and how a workflow argument (file or example directory) is resolved. */
import { accessSync, constants, cpSync, existsSync, openSync, closeSync, readSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closest } from '../core/suggest.js';
import type { WorkflowModel } from '../workflow/model.js';

/** The package's examples/ folder (works from src/ under vitest and from dist/ when installed). */
export function examplesDir(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples');
}

export interface ResolvedTarget {
  workflow: string;
  /** An agents module beside the workflow (agents.mjs / .js / .ts), when the target is a directory or its workflow.yaml. */
  agents: string | undefined;
  /** A trigger.json beside the workflow. */
  trigger: string | undefined;
  /** The bundled example's name, when the argument named one (not a path of the caller's). */
  example?: string | undefined;
}

const AGENT_FILES = ['agents.mjs', 'agents.js', 'agents.ts', 'agents.mts'];

const WORKFLOW_FILES = ['workflow.yaml', 'workflow.yml'];

/**
 * A FILE argument may be a workflow file, a directory holding workflow.yaml, or the name of a
 * bundled example. trigger.json beside the workflow is the default trigger for all three; agents.*
 * beside it are bound for a directory, or its workflow.yaml named directly (`dir` and
 * `dir/workflow.yaml` mean the same run). A directory that cannot be read is its own target: reading
 * it gives the `file-unreadable` diagnostic (permission denied) every command then reports alike.
 * Used by run, validate, check and types.
 */
export function resolveTarget(arg: string, cwd: string): ResolvedTarget | undefined {
  let path = resolve(cwd, arg);
  let example: string | undefined;
  if (!existsSync(path)) {
    const bundled = join(examplesDir(), arg);
    if (!arg.includes('/') && existsSync(bundled)) {
      path = bundled;
      example = arg;
    } else return undefined;
  }
  let dir: string;
  let wf: string | undefined;
  if (statSync(path).isDirectory()) {
    dir = path;
    wf = WORKFLOW_FILES.map((f) => join(path, f)).find((f) => existsSync(f));
    if (!wf && !readable(path)) return { workflow: path, agents: undefined, trigger: undefined, ...(example !== undefined ? { example } : {}) };
    if (!wf) return undefined;
  } else {
    dir = dirname(path);
    wf = path;
  }
  const agents = dir === path || WORKFLOW_FILES.includes(basename(wf)) ? AGENT_FILES.map((f) => join(dir, f)).find((f) => existsSync(f)) : undefined;
  const trigger = join(dir, 'trigger.json');
  return { workflow: wf, agents, trigger: existsSync(trigger) ? trigger : undefined, ...(example !== undefined ? { example } : {}) };
}

/**
 * Why `resolveTarget` found nothing at `arg`, with the file, directory or bundled example whose name is
 * closest to what was typed (`hello_wrld.yaml`: did you mean `hello_world.yaml`?).
 */
export function noWorkflowAt(arg: string, cwd: string): string {
  const said = `no workflow at \`${arg}\` (a file, a directory with workflow.yaml, or a bundled example: see \`baton list\`)`;
  if (isWorkflowFolder(arg, cwd)) {
    // a folder of workflow files (the corpus): one of them is what to run
    const dir = resolve(cwd, arg);
    const files = workflowFilesIn(dir).map((f) => join(arg, relative(dir, f)));
    if (files.length > 0) return `${arg} holds no workflow.yaml: name one of its workflows (${files.slice(0, 8).map((f) => `\`${f}\``).join(', ')}${files.length > 8 ? ', ...' : ''})`;
  }
  const near = nearestTarget(arg, cwd);
  return near === undefined ? said : `${said}; did you mean \`${near}\`?`;
}

/** The workflow file, directory or bundled example named most like `arg`, which names none, written as the user wrote `arg`. */
export function nearestTarget(arg: string, cwd: string): string | undefined {
  const trimmed = arg.replace(/[/\\]+$/, '');
  const typed = basename(trimmed);
  if (typed === '' || typed === '.' || typed === '..') return undefined;
  const names: string[] = [];
  try {
    for (const e of readdirSync(dirname(resolve(cwd, trimmed)), { withFileTypes: true })) if (e.isDirectory() || /\.ya?ml$/i.test(e.name)) names.push(e.name);
  } catch {
    // a folder that cannot be read suggests nothing
  }
  if (!/[/\\]/.test(trimmed)) {
    try {
      for (const e of readdirSync(examplesDir(), { withFileTypes: true })) if (e.isDirectory()) names.push(e.name);
    } catch {
      // no bundled examples
    }
  }
  const near = closest(typed, names.filter((n) => n !== typed));
  return near === undefined ? undefined : `${trimmed.slice(0, trimmed.length - typed.length)}${near}`;
}

/**
 * Whether running the workflow reads and writes files of its own, as the workflow declares it: AIP-16
 * `inputsFiles` / `outputsFiles` of a phase or an agent (the engine stages and syncs them), or files an
 * agent's contract says it writes (`sideEffects.filesWritten`, written by the agent's own code). A bundled
 * example that does is run from a copy (copyExample); `src/cli/examples.test.ts` holds every bundled
 * example whose code writes files to declaring it.
 */
export function declaresFiles(model: WorkflowModel): boolean {
  if (model.phases.some((p) => p.files !== undefined)) return true;
  return Object.values(model.agents ?? {}).some((a) => a.files !== undefined || a.contract?.files !== undefined || (a.contract?.sideEffects.filesWritten.length ?? 0) > 0);
}

function readable(dir: string): boolean {
  try {
    accessSync(dir, constants.R_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** A readable directory that holds no workflow.yaml: `baton validate DIR` validates the workflow files in it. */
export function isWorkflowFolder(arg: string, cwd: string): boolean {
  const path = resolve(cwd, arg);
  try {
    return statSync(path).isDirectory() && readable(path) && resolveTarget(arg, cwd) === undefined;
  } catch {
    return false;
  }
}

/** A top-level `openintent:` or `workflow:` key: what a workflow file has and a contract, blueprint or replies file has not. */
const WORKFLOW_KEY = /^(?:openintent|workflow)[ \t]*:/m;
const SNIFF_BYTES = 256 * 1024;

/**
 * The workflow files under `dir` (`baton validate workflows/`): every *.yaml / *.yml, in sub-folders too
 * (not hidden ones nor node_modules), with a top-level `openintent:` or `workflow:` key in its first 256 KB,
 * sorted. A file or folder that cannot be read is listed too, so that its read error is reported.
 */
export function workflowFilesIn(dir: string): string[] {
  const out: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(dir).sort();
  } catch {
    return [dir];
  }
  for (const name of entries) {
    if (name.startsWith('.') || name === 'node_modules') continue;
    const p = join(dir, name);
    let isDir: boolean;
    try {
      isDir = statSync(p).isDirectory();
    } catch {
      continue; // a dangling link: nothing to read
    }
    if (isDir) out.push(...workflowFilesIn(p));
    else if (/\.ya?ml$/i.test(name) && looksLikeWorkflow(p)) out.push(p);
  }
  return out;
}

function looksLikeWorkflow(file: string): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return true; // unreadable: listed, and its error reported
  }
  try {
    const buf = Buffer.alloc(SNIFF_BYTES);
    const n = readSync(fd, buf, 0, SNIFF_BYTES, 0);
    return WORKFLOW_KEY.test(buf.subarray(0, n).toString('utf8'));
  } catch {
    return true;
  } finally {
    closeSync(fd);
  }
}

/** Whether the bundled examples lie in an installed package (under node_modules), not in a checkout of Baton. */
export function examplesInstalled(dir: string = examplesDir()): boolean {
  return dir.split(sep).includes('node_modules');
}

/**
 * A bundled example that reads and writes files, copied to `<cwd>/<name>` so that its files are
 * written where the caller works, never inside node_modules (read-only for a global install, and lost on
 * the next install). Its earlier outputs (`out/`) are left behind. The target in the copy.
 */
export function copyExample(target: ResolvedTarget, cwd: string): ResolvedTarget {
  const from = dirname(target.workflow);
  const to = join(cwd, target.example ?? basename(from));
  cpSync(from, to, { recursive: true, errorOnExist: true, force: false, filter: (src) => dirname(src) !== from || basename(src) !== 'out' });
  const again = resolveTarget(to, cwd);
  if (!again) throw new Error(`the copy of ${from} in ${to} holds no workflow`);
  return again;
}

export function listExamples(): string[] {
  const dir = examplesDir();
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((d) => existsSync(join(dir, d, 'workflow.yaml')))
    .sort();
}

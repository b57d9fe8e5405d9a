/**
 * The workflows a server offers by name (`baton serve --workflows DIR`): each `*.yaml` / `*.yml` file
 * in DIR (its name without the extension) and each folder holding `workflow.yaml` (the folder's
 * name). Files are read again at each use, so an edited workflow is served as it now is, and the folder
 * is read again when a name is not found in it, so a workflow added later is served too.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { BatonError } from '../core/errors.js';

export interface RegisteredWorkflow {
  name: string;
  path: string;
}

/**
 * The workflows of a folder by name, kept in step with the folder: a name that is not known (or whose
 * file is gone) reads the folder again before it is refused, so a workflow added after the server
 * started is served; `refresh()` reads it again at once (a listing does). A folder that cannot be read
 * any more keeps what was read last.
 */
export class WorkflowFolder extends Map<string, RegisteredWorkflow> {
  constructor(
    private readonly root: string,
    private readonly given: string,
  ) {
    super();
    this.fill(readFolder(root, given));
  }

  refresh(): void {
    try {
      this.fill(readFolder(this.root, this.given));
    } catch {
      // the folder went away or is unreadable now: what was read last stays
    }
  }

  override get(name: string): RegisteredWorkflow | undefined {
    const w = super.get(name);
    if (w && existsSync(w.path)) return w;
    this.refresh();
    return super.get(name);
  }

  override has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  private fill(found: Map<string, RegisteredWorkflow>): void {
    super.clear();
    for (const [k, v] of found) super.set(k, v);
  }
}

/** `dir` relative to `cwd` (default: the process's), named in messages as given. */
export function scanWorkflows(dir: string, cwd = process.cwd()): WorkflowFolder {
  return new WorkflowFolder(resolve(cwd, dir), dir);
}

function readFolder(root: string, dir: string): Map<string, RegisteredWorkflow> {
  let entries: string[];
  try {
    if (!statSync(root).isDirectory()) throw new BatonError('usage', `--workflows ${dir}: not a directory`);
    entries = readdirSync(root).sort();
  } catch (e) {
    if (e instanceof BatonError) throw e;
    throw new BatonError('usage', `--workflows ${dir}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (e as Error).message}`);
  }
  const out = new Map<string, RegisteredWorkflow>();
  for (const e of entries) {
    const p = join(root, e);
    let st;
    try {
      st = statSync(p);
    } catch {
      continue;
    }
    if (st.isFile() && (extname(e) === '.yaml' || extname(e) === '.yml')) add(out, basename(e, extname(e)), p);
    else if (st.isDirectory() && existsSync(join(p, 'workflow.yaml'))) add(out, e, join(p, 'workflow.yaml'));
  }
  return out;
}

function add(out: Map<string, RegisteredWorkflow>, name: string, path: string): void {
  // a file `x.yaml` and a folder `x/` both named x: the first (sorted) wins; the other is reachable by renaming
  if (!out.has(name)) out.set(name, { name, path });
}

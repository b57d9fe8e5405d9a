/**
 * The workflows a server offers by name (`baton serve --workflows DIR`): each `*.yaml` / `*.yml` file
 * in DIR (its name without the extension) and each folder holding `workflow.yaml` (the folder's
 * name). Files are read again at each use, so an edited workflow is served as it now is.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { BatonError } from '../core/errors.js';

export interface RegisteredWorkflow {
  name: string;
  path: string;
}

/** `dir` relative to `cwd` (default: the process's), named in messages as given. */
export function scanWorkflows(dir: string, cwd = process.cwd()): Map<string, RegisteredWorkflow> {
  const root = resolve(cwd, dir);
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

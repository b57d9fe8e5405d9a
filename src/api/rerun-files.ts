/**
 * A rerun's output files (`engine.rerun`, AIP-16): the files that the phases and items it reuses synced
 * in the first run are brought to the paths the new run's tokens name, so that a phase it runs again
 * reads them where its own paths look (`out/<runId>/draft.md` names the new run). Each is recorded as
 * synced with the reused completion (decide-settle.ts); the first run's files stay as they were.
 */
import type { CarriedFile } from '../engine/decide.js';
import type { RunEvent } from '../engine/events.js';
import { expandPath, tokenValues, type FileStager, type ScratchRoot } from '../engine/files.js';
import type { RunState } from '../engine/state.js';
import type { AgentContract } from '../workflow/contract/model.js';
import { filesOfPhase } from '../workflow/files.js';
import type { WorkflowModel } from '../workflow/model.js';

type SyncedFile = Extract<RunEvent, { type: 'task.file' }>;

export interface RerunFilesInput {
  model: WorkflowModel;
  /** Agent contracts beside the workflow's (a `defineAgent` handler's), by agent id. */
  contracts: ReadonlyMap<string, AgentContract>;
  /** The first run's state and log. */
  state: RunState;
  events: readonly RunEvent[];
  /** The task keys whose completions the rerun reuses (a phase, or an item under `--failed-items`). */
  reused: ReadonlySet<string>;
  newRunId: string;
  now: number;
  stager: FileStager;
  stagerFor: (workspace: string) => FileStager;
}

/**
 * The files to record with each reused completion, by the task key it is recorded under: an item of a
 * fan-out phase reused whole brings its files to its phase's completion (the rerun has no item tasks).
 * A file whose bytes changed since it was recorded, or that is gone, is not brought over (`failed`).
 */
export async function carryRerunFiles(o: RerunFilesInput): Promise<Map<string, CarriedFile[]>> {
  const out = new Map<string, CarriedFile[]>();
  const synced = new Map<string, SyncedFile[]>();
  for (const e of o.events) {
    if (e.type !== 'task.file' || e.direction !== 'synced') continue;
    const k = `${e.phase}\u0000${e.attempt}`;
    const l = synced.get(k);
    if (l) l.push(e);
    else synced.set(k, [e]);
  }
  if (synced.size === 0) return out;
  for (const [name, p] of o.state.phases) {
    if (p.status !== 'completed') continue;
    const target = o.reused.has(name) ? name : p.item && o.reused.has(p.item.parent) ? p.item.parent : undefined;
    const files = target === undefined ? undefined : synced.get(`${name}\u0000${p.attempts}`);
    if (target === undefined || !files) continue;
    const phase = p.item ? p.item.parent : name;
    const contract = filesOfPhase(o.model, o.contracts, phase, p.agent ?? o.model.byName.get(phase)?.assign ?? '');
    const stager = contract?.workspace !== undefined ? o.stagerFor(contract.workspace) : o.stager;
    const today = tokenValues({ runId: o.newRunId, workflowId: o.model.info.name, phase, attempt: p.attempts }, o.now);
    let root: ScratchRoot | undefined;
    const list = out.get(target) ?? [];
    out.set(target, list);
    try {
      // the last sync of a key is its file
      const last = new Map<string, SyncedFile>();
      for (const f of files) last.set(f.key, f);
      for (const f of last.values()) {
        const item = f.item !== undefined ? { item: f.item } : {};
        const decl = contract?.outputs.find((e) => e.key === f.key);
        const values = decl ? tokensOf(decl.path, f.path) : undefined;
        if (!decl || !values) {
          list.push({ key: f.key, path: f.path, ...item, failed: `its path no longer matches the declaration of \`${f.key}\`` });
          continue;
        }
        let path: string;
        try {
          path = expandPath(decl.path, { ...values, runId: o.newRunId, isoDate: today['isoDate']! });
        } catch (err) {
          list.push({ key: f.key, path: f.path, ...item, failed: (err as Error).message });
          continue;
        }
        try {
          root ??= await stager.open({ runId: o.newRunId, workflowId: o.model.info.name, phase, attempt: p.attempts, ...(p.item ? { item: { index: p.item.index, value: null } } : {}) });
          // read back even where nothing is copied: a record says these bytes are at the path
          const d = await root.stage(f.key, f.path);
          if (d.sha256 !== f.sha256) {
            list.push({ key: f.key, path, ...item, failed: `${f.path} no longer holds the bytes the first run recorded (sha256 ${f.sha256.slice(0, 12)}…, now ${d.sha256.slice(0, 12)}…)` });
            continue;
          }
          // a path that names no run (or date) is the same file: it is there already
          if (path === f.path) {
            list.push({ key: f.key, path, sha256: f.sha256, size: f.size, ...item });
            continue;
          }
          const s = await root.sync(f.key, path, d);
          if (s === 'missing') list.push({ key: f.key, path, ...item, failed: `${f.path} could not be copied` });
          else list.push({ key: f.key, path, sha256: s.sha256, size: s.size, ...item });
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          list.push({ key: f.key, path, ...item, failed: code === 'ENOENT' ? `${f.path} is no longer in the workspace` : (err as Error).message });
        }
      }
    } finally {
      await root?.remove();
    }
  }
  return out;
}

/** What the run tokens expand to (files.ts tokenValues), so that `<item>-<attempt>` reads `a-b-2` as `a-b` and 2; an item's value may hold anything. */
const TOKEN_PATTERNS: Readonly<Record<string, string>> = {
  attempt: '(\\d+)',
  index: '(\\d+)',
  isoDate: '(\\d{4}-\\d{2}-\\d{2})',
  runId: '([^/]*?)',
  workflowId: '([^/]*?)',
  toolId: '([^/]*?)',
  phase: '([^/]*?)',
};

/**
 * The token values a recorded path was expanded with, read back against its declared template
 * (`out/<runId>/<item>.md` and `out/run_1/intro.md`: runId run_1, item intro); undefined when the path
 * does not match it, or a token read twice differs.
 */
export function tokensOf(template: string, path: string): Record<string, string> | undefined {
  const names: string[] = [];
  const pattern = template
    .split(/(<[^<>]*>)/)
    .map((part) => {
      const token = /^<([^<>]*)>$/.exec(part);
      if (!token) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(token[1]!);
      return TOKEN_PATTERNS[token[1]!] ?? '(.*?)';
    })
    .join('');
  const m = new RegExp(`^${pattern}$`, 's').exec(path);
  if (!m) return undefined;
  const values: Record<string, string> = {};
  for (const [i, name] of names.entries()) {
    const v = m[i + 1]!;
    if (Object.prototype.hasOwnProperty.call(values, name) && values[name] !== v) return undefined;
    values[name] = v;
  }
  return values;
}

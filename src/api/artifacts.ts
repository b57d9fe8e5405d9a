/**
 * A run's artifacts, from its events and outputs: the files it touched (provenance: `task.file`, which
 * the engine records for AIP-16 staged and synced files, and `task.agent_event` `file_read` /
 * `file_written`, which adapters record for contract `sideEffects`), and the `$store` tree of the
 * contract spec's step form (each stored output at its path under `artifacts`).
 */
import { isPlainObject, type Json, type JsonObject } from '../core/json.js';
import type { RunEvent } from '../engine/events.js';
import type { RunState } from '../engine/state.js';
import type { ArtifactTarget, WorkflowModel } from '../workflow/model.js';
import { resolveBinding } from '../workflow/runtime.js';
import { itemStorePath } from '../workflow/steps.js';

/** One file a run read or wrote, as `baton show RUN --artifacts` lists it. */
export interface FileRow {
  run_id: string;
  phase: string;
  attempt: number;
  /** A fan-out item's index, or null. */
  item: number | null;
  /** The AIP-16 key (`inputsFiles.<key>`), or null for a contract `sideEffects` file. */
  key: string | null;
  access: 'read' | 'written';
  /** `staged` / `synced` (recorded by the engine) or `declared` (a `sideEffects` file an adapter found). */
  direction: 'staged' | 'synced' | 'declared';
  path: Json;
  sha256: Json;
  size: Json;
}

/** Whether an event is file provenance (kept by `--state-out` as the run goes). */
export function isFileEvent(e: RunEvent): boolean {
  return e.type === 'task.file' || (e.type === 'task.agent_event' && (e.kind === 'file_read' || e.kind === 'file_written'));
}

export function fileRows(runId: string, events: readonly RunEvent[]): FileRow[] {
  const rows: FileRow[] = [];
  for (const e of events) {
    if (e.type === 'task.file') {
      rows.push({ run_id: runId, phase: e.phase, attempt: e.attempt, item: e.item ?? null, key: e.key, access: e.direction === 'staged' ? 'read' : 'written', direction: e.direction, path: e.path, sha256: e.sha256, size: e.size });
    } else if (e.type === 'task.agent_event' && (e.kind === 'file_read' || e.kind === 'file_written')) {
      const key = e.data['key'];
      rows.push({ run_id: runId, phase: e.phase, attempt: e.attempt, item: null, key: typeof key === 'string' ? key : null, access: e.kind === 'file_read' ? 'read' : 'written', direction: 'declared', path: e.data['path'] ?? null, sha256: e.data['sha256'] ?? null, size: e.data['size'] ?? null });
    }
  }
  return rows;
}

/**
 * The run's `artifacts` tree: each `$store` target of a completed phase holds that output. Targets
 * with `{$item...}` segments belong to fan-out items (not run yet): they are left out.
 */
export function storedArtifacts(model: WorkflowModel, state: RunState): JsonObject {
  const tree: JsonObject = {};
  for (const t of model.artifacts) {
    if (t.path.some((s) => typeof s !== 'string')) {
      // a templated target (`drafts.{$item.name}`): one entry per completed item of the fan-out
      storeItems(model, state, t, tree);
      continue;
    }
    const out = state.phases.get(t.phase)?.output;
    if (!out || !Object.prototype.hasOwnProperty.call(out, t.key)) continue;
    place(tree, t.path as string[], out[t.key]!);
  }
  return tree;
}

function place(tree: JsonObject, segs: readonly string[], value: Json): void {
  let node = tree;
  segs.slice(0, -1).forEach((s) => {
    if (!isPlainObject(node[s])) {
      const fresh: JsonObject = {};
      if (s === '__proto__') Object.defineProperty(node, s, { value: fresh, enumerable: true, writable: true, configurable: true });
      else node[s] = fresh;
    }
    node = node[s] as JsonObject;
  });
  const last = segs[segs.length - 1]!;
  if (last === '__proto__') Object.defineProperty(node, last, { value, enumerable: true, writable: true, configurable: true });
  else node[last] = value;
}

/** The items of `t.phase` that completed, each stored at the target with its element's values in place of `{$item...}`. */
function storeItems(model: WorkflowModel, state: RunState, t: ArtifactTarget, tree: JsonObject): void {
  const pm = model.byName.get(t.phase);
  const fan = state.phases.get(t.phase)?.fan;
  if (!pm?.forEach || !fan) return;
  const outputs = new Map<string, unknown>();
  for (const [name, p] of state.phases) if (p.output !== undefined && p.item === undefined) outputs.set(name, p.output);
  const arr = resolveBinding({ name: 'for_each', ref: pm.forEach.ref, source: pm.forEach.source } as Parameters<typeof resolveBinding>[0], outputs, state.trigger, pm.initialState);
  if (!arr.ok || !Array.isArray(arr.value)) return;
  for (let i = 0; i < fan.count; i++) {
    // a settled item may be folded out of `phases` (a worker that keeps no event log): its output is in `fan.done`
    const folded = fan.done?.[i];
    const p = folded === undefined ? state.phases.get(`${t.phase}[${i}]`) : undefined;
    const out = folded !== undefined ? (folded ?? undefined) : p?.status === 'completed' ? p.output : undefined;
    if (!out || !Object.prototype.hasOwnProperty.call(out, t.key)) continue;
    // an element without a name for its slot is left out of the tree (its output is still the item's);
    // two items that name the same place: the later one (by index) is kept, as the fan-out's
    // `task.warning StoreCollision` said when the phase fanned out
    const segs = itemStorePath(t, arr.value[i]);
    if (segs) place(tree, segs, out[t.key]!);
  }
}

/**
 * AIP-16 file contracts, the static side: `inputsFiles` / `outputsFiles` on a phase, an agent or a
 * contract (`<key>: {path, mode?, contentType?}`), their shape, and the rules that can be checked
 * before anything runs: a key is a single file name, a workspace path stays inside the workspace
 * (no absolute path, no `..` segment), and every `<token>` is one Baton knows. The same functions
 * check paths again at run time, after the tokens are replaced (src/engine/files.ts).
 */
import { isPlainObject } from '../core/json.js';
import type { Path } from '../core/path.js';
import { closest } from '../core/suggest.js';
import { error, type Diagnostic } from '../diagnostics/diagnostic.js';
import type { FileContract, FileEntry, WorkflowModel } from './model.js';
import type { AgentContract } from './contract/model.js';
import type { Field } from './shape.js';

const entryShape: Field = {
  t: 'object',
  what: 'a file entry `{path, mode?, contentType?}`',
  fields: { path: { t: 'string', nonEmpty: true, required: true }, mode: { t: 'enum', values: ['ro', 'rw'] }, contentType: { t: 'string' } },
};

/** `inputsFiles` / `outputsFiles`: a mapping of keys to file entries. */
export const filesField: Field = { t: 'map', of: entryShape };

/** Tokens every file path may use (AIP-16's three, and Baton's `<phase>` and `<attempt>`). */
export const RUN_TOKENS = ['runId', 'workflowId', 'toolId', 'isoDate', 'phase', 'attempt'] as const;
/** Tokens only a fan-out item has: `<index>` and `<item>` / `<item.path.into.it>`. */
export const ITEM_TOKENS = ['index', 'item'] as const;

const TOKEN = /<([^<>]*)>/g;
const ITEM_PATH = /^item(\.[\p{L}\p{N}_][\p{L}\p{M}\p{N}_-]*)*$/u;

/** The `<token>`s of a path, with their offsets. */
export function tokensOf(path: string): { name: string; offset: number }[] {
  return [...path.matchAll(TOKEN)].map((m) => ({ name: m[1]!, offset: m.index }));
}

export type TokenKind = 'run' | 'item' | 'unknown';

export function tokenKind(name: string): TokenKind {
  if ((RUN_TOKENS as readonly string[]).includes(name)) return 'run';
  if (name === 'index' || ITEM_PATH.test(name)) return 'item';
  return 'unknown';
}

/** Why `key` is not a single file name, or undefined. */
export function keyProblem(key: string): string | undefined {
  if (key === '' || key === '.' || key === '..') return `\`${key}\` is not a file name`;
  if (/[/\\]/.test(key)) return `\`${key}\` holds a path separator`;
  if (key.includes('\0')) return 'the key holds a NUL character';
  return undefined;
}

/**
 * Why a workspace-relative path would leave the workspace, or undefined: an absolute path (POSIX,
 * `C:`, a UNC or backslash root), or a `..` segment. Tokens are not expanded here.
 */
export function escapeProblem(path: string): string | undefined {
  if (path.startsWith('/') || path.startsWith('\\') || /^[A-Za-z]:/.test(path)) return `\`${path}\` is an absolute path`;
  if (path.split(/[/\\]/).includes('..')) return `\`${path}\` climbs out of the workspace with \`..\``;
  return undefined;
}

export interface FileCheckScope {
  /** Whether item tokens (`<index>`, `<item.x>`) may appear: a fan-out phase. Undefined: not known here (an agent's files). */
  fanOut: boolean | undefined;
}

/** Reads and checks `inputsFiles` / `outputsFiles` of one mapping (a phase, an agent, a contract) at `base`. */
export function fileContractOf(raw: Record<string, unknown>, base: Path, scope: FileCheckScope, out: Diagnostic[]): FileContract | undefined {
  // most phases declare no files: nothing to build
  if (raw['inputsFiles'] === undefined && raw['outputsFiles'] === undefined) return undefined;
  const inputs = entries(raw['inputsFiles'], [...base, 'inputsFiles'], scope, out);
  const outputs = entries(raw['outputsFiles'], [...base, 'outputsFiles'], scope, out);
  return inputs.length + outputs.length > 0 ? { inputs, outputs } : undefined;
}

function entries(raw: unknown, at: Path, scope: FileCheckScope, out: Diagnostic[]): FileEntry[] {
  if (!isPlainObject(raw)) return [];
  const list: FileEntry[] = [];
  for (const [key, e] of Object.entries(raw)) {
    const bad = keyProblem(key);
    if (bad !== undefined) {
      out.push(error('invalid-value', [...at, key], `file key ${bad}: a key is a single file name (the file sits at \`<fsRoot>/<key>\`)`, { target: 'key', hint: 'name the key like a file: `draft.md`' }));
      continue;
    }
    if (!isPlainObject(e) || typeof e['path'] !== 'string' || e['path'] === '') continue; // the shape check reported it
    const path = e['path'];
    if (checkPath(path, [...at, key, 'path'], scope, out)) continue;
    const mode = e['mode'];
    list.push({
      key,
      path,
      ...(mode === 'ro' || mode === 'rw' ? { mode } : {}),
      ...(typeof e['contentType'] === 'string' ? { contentType: e['contentType'] } : {}),
    });
  }
  return list;
}

/** Checks one workspace path; true when it has an error. */
export function checkPath(path: string, at: Path, scope: FileCheckScope, out: Diagnostic[]): boolean {
  let bad = false;
  const escape = escapeProblem(path);
  if (escape !== undefined) {
    out.push(error('path-escape', at, `${escape}: file paths are relative to the workspace and stay inside it`, { hint: 'write a path inside the workspace, e.g. `drafts/<runId>.md`' }));
    bad = true;
  }
  if (path.includes('\0')) {
    out.push(error('invalid-value', at, 'the path holds a NUL character', { hint: 'remove the `\\0` from the path' }));
    bad = true;
  }
  for (const t of tokensOf(path)) {
    const kind = tokenKind(t.name);
    const span = { offset: t.offset, length: t.name.length + 2 };
    if (kind === 'unknown') {
      const s = closest(t.name, [...RUN_TOKENS, ...ITEM_TOKENS]);
      out.push(error('unknown-token', at, `unknown token \`<${t.name}>\` in a file path`, { hint: s ? `did you mean \`<${s}>\`?` : `tokens: ${[...RUN_TOKENS, ...ITEM_TOKENS].map((x) => `<${x}>`).join(', ')}, <item.path>`, data: span }));
      bad = true;
    } else if (kind === 'item' && scope.fanOut === false) {
      out.push(error('item-outside-for-each', at, `\`<${t.name}>\` names a fan-out item, but this phase has no \`for_each\``, { hint: 'use `<index>` and `<item.x>` only in a phase with `for_each`', data: span }));
      bad = true;
    }
  }
  return bad;
}

/** Phase files over agent files, key by key (the phase's entry wins). */
export function mergeFiles(agent: FileContract | undefined, phase: FileContract | undefined): FileContract | undefined {
  if (!agent) return phase;
  if (!phase) return agent;
  const merge = (a: FileEntry[], p: FileEntry[]): FileEntry[] => [...a.filter((e) => !p.some((x) => x.key === e.key)), ...p];
  const workspace = phase.workspace ?? agent.workspace;
  return { inputs: merge(agent.inputs, phase.inputs), outputs: merge(agent.outputs, phase.outputs), ...(workspace !== undefined ? { workspace } : {}) };
}

/** Every file a phase's attempt has: the phase's own over its agent's (a declaration's and its contract's). */
export function filesOfPhase(model: WorkflowModel, contracts: ReadonlyMap<string, AgentContract> | undefined, phase: string, agent: string): FileContract | undefined {
  const pm = model.byName.get(phase);
  const decl = model.agents?.[agent];
  const own = mergeFiles(contracts?.get(agent)?.files ?? decl?.contract?.files, decl?.files);
  return mergeFiles(own, pm?.files);
}

/**
 * What an item token (`<item>`, `<item.a.b>`) of a file path holds for the item `value`: its string or
 * number as text, or undefined when it holds neither (such a path cannot name the item's file).
 */
export function itemTokenValue(name: string, value: unknown): string | undefined {
  let v = value;
  for (const k of name === 'item' ? [] : name.slice('item.'.length).split('.')) v = isPlainObject(v) && Object.prototype.hasOwnProperty.call(v, k) ? v[k] : undefined;
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

/**
 * Output files of a fan-out phase that two items would write at one workspace path: `<item.x>` values
 * that repeat (two sections both called `intro` under `out/<item.name>.md`). Only item tokens are
 * replaced (run tokens are the same for every item); a path with `<index>` is each item's own, and an
 * item whose value cannot name a file is left out (its file is refused when it runs).
 */
export function itemFileCollisions(outputs: readonly FileEntry[], items: readonly unknown[]): { key: string; path: string; declared: string; items: number[] }[] {
  const found: { key: string; path: string; declared: string; items: number[] }[] = [];
  for (const e of outputs) {
    const tokens = tokensOf(e.path).filter((t) => tokenKind(t.name) === 'item');
    if (tokens.length === 0 || tokens.some((t) => t.name === 'index')) continue;
    const at = new Map<string, number[]>();
    items.forEach((el, i) => {
      let ok = true;
      let path = e.path.replace(TOKEN, (whole, name: string) => {
        if (tokenKind(name) !== 'item') return whole;
        const v = itemTokenValue(name, el);
        if (v === undefined) ok = false;
        return v ?? whole;
      });
      // a value that makes the path refused (`..`, `x/../..`) writes no file when its item runs
      if (!ok || escapeProblem(path) !== undefined) return;
      // one file, however its path is spelled (`out/./a.md`, `out//a.md`, `out/a/` and `out/a.md`), as
      // the engine records it (expandPath); a path left empty or with a NUL is refused there too
      path = path.split('/').filter((x) => x !== '' && x !== '.').join('/');
      if (path === '' || path.includes('\0')) return;
      const list = at.get(path);
      if (list) list.push(i);
      else at.set(path, [i]);
    });
    for (const [path, indexes] of at) if (indexes.length > 1) found.push({ key: e.key, path, declared: e.path, items: indexes });
  }
  return found;
}

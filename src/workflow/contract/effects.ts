/**
 * `sideEffects` conflicts between phases that may run at the same time (neither is an ancestor of
 * the other): both writing paths that may name one file, or one reading what the other writes. Paths
 * are patterns (./patterns.ts): globs, `{name}` placeholders and item tokens are wildcards, since
 * nothing before the run says which value a placeholder takes; two paths that are both templated by
 * the phases' own values (inputs, items) are taken to name different files (phasesMayShare), and
 * `<phase>` keeps two phases apart: it is each phase's own name. The items of one `for_each`
 * phase run at the same time too (itemConflicts).
 */
import { error, warning, type Diagnostic } from '../../diagnostics/diagnostic.js';
import type { FileContract, FileEntry, PhaseModel } from '../model.js';
import type { AgentContract, FileEffect } from './model.js';
import { isLiteral, patternsOverlap } from './patterns.js';

/** A side effect of one phase: `path` its pattern (tokens read for that phase), `text` as written. */
type Effect = FileEffect & { text: string };

interface Use {
  phase: PhaseModel;
  agent: string;
  mode: 'write' | 'read';
  effect: Effect;
}

/** How many conflicts are reported at most (each pair of patterns reports its first few pairs of phases). */
const MAX_REPORTED = 50;

/**
 * `filesOf`: a phase's AIP-16 files (its own, its agent's, its contract's), as reads (`inputsFiles`) and
 * writes (`outputsFiles`). In their paths `<phase>` is the phase's name (phases never share such a file),
 * item tokens are placeholders, and the run's tokens are the same for every phase.
 */
export function checkSideEffects(phases: readonly PhaseModel[], contractOf: (agent: string) => AgentContract | undefined, out: Diagnostic[], filesOf?: (p: PhaseModel) => FileContract | undefined): void {
  // group by (pattern, mode): phases of one agent share its patterns, so there are few groups
  const groups = new Map<string, Use[]>();
  for (const p of phases) {
    const c = contractOf(p.assign);
    const files = filesOf?.(p);
    // no file at all (most phases): nothing to group, and no time spent saying so
    if (!c?.sideEffects.filesWritten.length && !c?.sideEffects.filesRead.length && !files?.outputs.length && !files?.inputs.length) continue;
    const own = (list: FileEntry[], side: string): Effect[] => list.map((e) => ({ path: filePattern(e.path, p.name), text: e.path, at: { path: ['workflow', p.name, side, e.key] }, synced: true }));
    // a defineAgent's AIP-16 files are in its sideEffects (synced): their tokens read as the phase's own
    const tokens = (list: FileEffect[]): Effect[] => list.map((e) => ({ ...e, text: e.path, path: e.synced ? filePattern(e.path, p.name) : e.path }));
    const written = [...tokens(c?.sideEffects.filesWritten ?? []), ...own(files?.outputs ?? [], 'outputsFiles')];
    const read = [...tokens(c?.sideEffects.filesRead ?? []), ...own(files?.inputs ?? [], 'inputsFiles')];
    if (p.forEach && p.forEach.maxParallel !== 1) itemConflicts(p, p.assign, written, read, out);
    for (const [mode, list] of [['write', written], ['read', read]] as const) {
      for (const effect of list) {
        const k = `${mode}\u0000${effect.path}`;
        let g = groups.get(k);
        if (!g) groups.set(k, (g = []));
        g.push({ phase: p, agent: p.assign, mode, effect });
      }
    }
  }
  if (groups.size === 0) return;
  const byName = new Map(phases.map((p) => [p.name, p]));
  const ancestors = new Map<string, Set<string>>();
  const ancestorsOf = (name: string): Set<string> => {
    let s = ancestors.get(name);
    if (s) return s;
    s = new Set();
    const stack = [...(byName.get(name)?.dependsOn ?? [])];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (s.has(n)) continue;
      s.add(n);
      const up = ancestors.get(n);
      if (up) for (const x of up) s.add(x);
      else stack.push(...(byName.get(n)?.dependsOn ?? []));
    }
    ancestors.set(name, s);
    return s;
  };
  const concurrent = (a: string, b: string): boolean => a !== b && !ancestorsOf(a).has(b) && !ancestorsOf(b).has(a);

  const keys = [...groups.keys()];
  let reported = 0;
  const seenPairs = new Set<string>();
  for (let i = 0; i < keys.length && reported < MAX_REPORTED; i++) {
    for (let j = i; j < keys.length && reported < MAX_REPORTED; j++) {
      const A = groups.get(keys[i]!)!;
      const B = groups.get(keys[j]!)!;
      const a0 = A[0]!;
      const b0 = B[0]!;
      if (a0.mode === 'read' && b0.mode === 'read') continue;
      if (!patternsOverlap(a0.effect.path, b0.effect.path)) continue;
      for (const x of A) {
        for (const y of B) {
          if (reported >= MAX_REPORTED) break;
          if (x.phase === y.phase || !concurrent(x.phase.name, y.phase.name) || !phasesMayShare(x, y)) continue;
          const [first, second] = x.phase.name < y.phase.name || (x.phase.name === y.phase.name && x.mode === 'write') ? [x, y] : [y, x];
          const pairKey = `${first.phase.name}\u0000${second.phase.name}\u0000${first.effect.path}\u0000${second.effect.path}`;
          if (seenPairs.has(pairKey)) continue;
          seenPairs.add(pairKey);
          reported++;
          out.push(conflict(first, second));
        }
      }
    }
  }
}

/** A placeholder that a phase fills with its own values: an input (`{sectionName}`) or an item (`<item.name>`). */
const VALUE_PLACEHOLDER = /\{(?!index\})[^{}]*\}/;
const ITEM_PLACEHOLDER = /\{item(\.[^{}]*)?\}/;

/**
 * May two phases' paths (which overlap as patterns) name one file? A path templated by a value of the
 * phase's own (an input, an item) is one file per value: two such paths are taken to name different
 * files, as one agent serving several phases writes `drafts/{section}.tex` for each (nothing before the
 * run says their values differ, and refusing every such pair would refuse the common case). Two
 * fan-outs over the same array writing `out/<item>.txt` do name the same files, as do two `<index>`
 * paths (every fan-out counts from 0); against a literal path or a glob a template may match.
 */
function phasesMayShare(x: Use, y: Use): boolean {
  const a = x.effect.path;
  const b = y.effect.path;
  if (!VALUE_PLACEHOLDER.test(a) || !VALUE_PLACEHOLDER.test(b)) return true;
  const fa = x.phase.forEach;
  const fb = y.phase.forEach;
  return fa !== undefined && fb !== undefined && fa.ref === fb.ref && ITEM_PLACEHOLDER.test(a) && ITEM_PLACEHOLDER.test(b);
}

function conflict(a: Use, b: Use): Diagnostic {
  const desc = (u: Use): string => `\`${u.phase.name}\` (agent \`${u.agent}\`) ${u.mode === 'write' ? 'writes' : 'reads'} \`${u.effect.text}\``;
  return error('side-effect-conflict', ['workflow', b.phase.name, 'assign'], `phases \`${a.phase.name}\` and \`${b.phase.name}\` may run at the same time (neither depends on the other): ${desc(b)} while ${desc(a)}`, {
    hint: `add \`depends_on: [${a.phase.name}]\` to \`${b.phase.name}\` (or the reverse) so they run in order, or write to different paths`,
    related: [{ message: `${desc(a)}`, path: ['workflow', a.phase.name, 'assign'] }],
    data: { phases: [a.phase.name, b.phase.name], paths: [a.effect.text, b.effect.text] },
  });
}

/**
 * The items of a `for_each` phase run at the same time (unless `max_parallel: 1`): a file the phase writes
 * under one literal path (no `<index>` / `<item...>`, no input placeholder, no wildcard) is written by
 * every item, each over the last; a path it reads that may name a file another item writes is read by
 * one item while another writes it (a path read and written exactly as one template, `out/<index>.txt`,
 * is each item's own file). When Baton writes the file (an AIP-16 output it syncs) that is an error:
 * the items' results overwrite each other. When the agent writes it itself (its contract's
 * `sideEffects.filesWritten`: a status file every item updates, say), Baton cannot tell whether the agent
 * shares it safely: a warning.
 */
function itemConflicts(p: PhaseModel, agent: string, written: readonly Effect[], read: readonly Effect[], out: Diagnostic[]): void {
  // at the phase's own path; an agent's file (one place for every phase it serves) at the phase's `for_each`
  const own = (e: FileEffect): boolean => e.at.file === undefined && e.at.path[0] === 'workflow' && e.at.path[1] === p.name;
  const where = (e: FileEffect): readonly (string | number)[] => (own(e) ? e.at.path : p.forEach!.at);
  for (const w of written) {
    const literal = isLiteral(w.path);
    const readers = read.filter((r) => (literal || r.path !== w.path) && patternsOverlap(r.path, w.path));
    if (!literal && readers.length === 0) continue;
    const r = readers[0];
    // a literal write: at the write; a read of another item's file: at the read
    const at = literal || !r ? where(w) : where(r);
    const what = literal ? `each ${r ? 'reads and writes' : 'writes'} \`${w.text}\`: ${r ? 'one item reads it while another writes it' : 'each item overwrites the last'}` : `one item may read \`${r!.text}\` while another writes it (\`${w.text}\`)`;
    const placed: Partial<Diagnostic> = literal || !r || !own(w) ? {} : { related: [{ message: `written here as \`${w.text}\``, path: w.at.path }] };
    const paths = r ? [w.text, r.text] : [w.text];
    if (w.synced) {
      out.push(
        error('side-effect-conflict', at, `the items of \`${p.name}\` (for_each) may run at the same time, and ${what}`, {
          hint: literal ? 'put `<index>` or `<item.…>` in the path: one file per item (or run the items one at a time: `max_parallel: 1`)' : 'read a file no item writes, or run the items one at a time: `max_parallel: 1`',
          ...placed,
          data: { phases: [p.name], paths },
        }),
      );
      continue;
    }
    out.push(
      warning('fan-out-shared-write', at, `the items of \`${p.name}\` (for_each) may run at the same time, and ${what}; agent \`${agent}\` writes it itself (its contract's \`sideEffects.filesWritten\`): Baton does not write that file, so it cannot keep the items apart`, {
        hint: 'unless the agent updates it safely from items running at once, put an input that differs per item in the path (`{sectionName}`), or run the items one at a time: `max_parallel: 1`',
        ...(w.at.file !== undefined ? { data: { phases: [p.name], paths, contract: w.at.file, at: w.at.path.join('.') } } : { data: { phases: [p.name], paths }, related: [{ message: `agent \`${agent}\` declares it here`, path: w.at.path }] }),
      }),
    );
  }
}

/** A file contract path as a side-effect pattern of phase `phase` (see checkSideEffects). */
function filePattern(path: string, phase: string): string {
  return path.replace(/<([^<>]*)>/g, (m, name: string) => (name === 'phase' ? phase : name === 'index' || name === 'item' || name.startsWith('item.') ? `{${name}}` : m));
}

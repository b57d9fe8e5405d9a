/**
 * `sideEffects` conflicts between phases that may run at the same time (neither is an ancestor of
 * the other): both writing the same path or glob, or one reading what the other writes. A path with
 * `{name}` placeholders is one file per phase input: two phases writing the same templated path are
 * assumed to write different files (a forEach over sections); against a literal path or a glob it
 * may match, it conflicts.
 */
import { error, warning, type Diagnostic } from '../../diagnostics/diagnostic.js';
import type { FileContract, FileEntry, PhaseModel } from '../model.js';
import type { AgentContract, FileEffect } from './model.js';

interface Use {
  phase: PhaseModel;
  agent: string;
  mode: 'write' | 'read';
  effect: FileEffect;
}

/** How many conflicts are reported at most (each pair of patterns reports its first few pairs of phases). */
const MAX_REPORTED = 50;

/**
 * `filesOf`: a phase's AIP-16 files (its own, its agent's, its contract's), as reads (`inputsFiles`) and
 * writes (`outputsFiles`). In their paths `<phase>` is the phase's name (phases never share such a file),
 * item tokens are templates (one file per item), and the run's tokens are the same for every phase.
 */
export function checkSideEffects(phases: readonly PhaseModel[], contractOf: (agent: string) => AgentContract | undefined, out: Diagnostic[], filesOf?: (p: PhaseModel) => FileContract | undefined): void {
  // group by (pattern, mode): phases of one agent share its patterns, so there are few groups
  const groups = new Map<string, Use[]>();
  for (const p of phases) {
    const c = contractOf(p.assign);
    const files = filesOf?.(p);
    const own = (list: FileEntry[], side: string): FileEffect[] => list.map((e) => ({ path: filePattern(e.path, p.name), at: { path: ['workflow', p.name, side, e.key] }, synced: true }));
    const written = [...(c?.sideEffects.filesWritten ?? []), ...own(files?.outputs ?? [], 'outputsFiles')];
    const read = [...(c?.sideEffects.filesRead ?? []), ...own(files?.inputs ?? [], 'inputsFiles')];
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
      if (!patternsOverlap(a0.effect.path, b0.effect.path, i === j)) continue;
      for (const x of A) {
        for (const y of B) {
          if (reported >= MAX_REPORTED) break;
          if (x.phase === y.phase || !concurrent(x.phase.name, y.phase.name)) continue;
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

function conflict(a: Use, b: Use): Diagnostic {
  const desc = (u: Use): string => `\`${u.phase.name}\` (agent \`${u.agent}\`) ${u.mode === 'write' ? 'writes' : 'reads'} \`${u.effect.path}\``;
  return error('side-effect-conflict', ['workflow', b.phase.name, 'assign'], `phases \`${a.phase.name}\` and \`${b.phase.name}\` may run at the same time (neither depends on the other): ${desc(b)} while ${desc(a)}`, {
    hint: `add \`depends_on: [${a.phase.name}]\` to \`${b.phase.name}\` (or the reverse) so they run in order, or write to different paths`,
    related: [{ message: `${desc(a)}`, path: ['workflow', a.phase.name, 'assign'] }],
    data: { phases: [a.phase.name, b.phase.name], paths: [a.effect.path, b.effect.path] },
  });
}

/**
 * The items of a `for_each` phase run at the same time (unless `max_parallel: 1`): a file the phase writes
 * under one literal path (no `<index>` / `<item...>`, no input placeholder, no wildcard) is written by
 * every item, each over the last; one it also reads is read by one item while another writes it. When
 * Baton writes the file (an AIP-16 output it syncs) that is an error: the items' results overwrite each
 * other. When the agent writes it itself (its contract's `sideEffects.filesWritten`: a status file every
 * item updates, say), Baton cannot tell whether the agent shares it safely: a warning.
 */
function itemConflicts(p: PhaseModel, agent: string, written: readonly FileEffect[], read: readonly FileEffect[], out: Diagnostic[]): void {
  const literal = (e: FileEffect): boolean => !PLACEHOLDER.test(e.path) && !/[*?]/.test(e.path);
  // at the phase's own path; an agent's file (one place for every phase it serves) at the phase's `for_each`
  const where = (e: FileEffect): readonly (string | number)[] => (e.at.file === undefined && e.at.path[0] === 'workflow' && e.at.path[1] === p.name ? e.at.path : p.forEach!.at);
  for (const w of written) {
    if (!literal(w)) continue;
    const readToo = read.find((r) => r.path === w.path);
    const what = readToo ? 'one item reads it while another writes it' : 'each item overwrites the last';
    if (w.synced) {
      out.push(
        error('side-effect-conflict', where(w), `the items of \`${p.name}\` (for_each) may run at the same time, and each ${readToo ? 'reads and writes' : 'writes'} \`${w.path}\`: ${what}`, {
          hint: 'put `<index>` or `<item.…>` in the path: one file per item (or run the items one at a time: `max_parallel: 1`)',
          data: { phases: [p.name], paths: [w.path] },
        }),
      );
      continue;
    }
    out.push(
      warning('fan-out-shared-write', where(w), `the items of \`${p.name}\` (for_each) may run at the same time, and agent \`${agent}\` ${readToo ? 'reads and writes' : 'writes'} \`${w.path}\` in each (its contract's \`sideEffects.filesWritten\`): Baton does not write that file, so it cannot keep the items apart`, {
        hint: 'unless the agent updates it safely from items running at once, put an input that differs per item in the path (`{sectionName}`), or run the items one at a time: `max_parallel: 1`',
        ...(w.at.file !== undefined ? { data: { phases: [p.name], paths: [w.path], contract: w.at.file, at: w.at.path.join('.') } } : { data: { phases: [p.name], paths: [w.path] }, related: [{ message: `agent \`${agent}\` declares it here`, path: w.at.path }] }),
      }),
    );
  }
}

/** A file contract path as a side-effect pattern of phase `phase` (see checkSideEffects). */
function filePattern(path: string, phase: string): string {
  return path.replace(/<([^<>]*)>/g, (m, name: string) => (name === 'phase' ? phase : name === 'index' || name === 'item' || name.startsWith('item.') ? `{${name}}` : m));
}

const PLACEHOLDER = /\{[^{}]*\}/;

/** May two path patterns name the same file? `same`: the pattern is compared with itself (one group). */
export function patternsOverlap(a: string, b: string, same = false): boolean {
  const pa = PLACEHOLDER.test(a);
  const pb = PLACEHOLDER.test(b);
  if (same || a === b) return !pa; // a templated path: one file per phase input
  if (pa && pb) return false; // two templates: assumed distinct, as above
  const ra = globRegex(a);
  const rb = globRegex(b);
  // one side matches a sample of the other (wildcards filled with a letter), or both are literals and equal
  return ra.test(sample(b)) || rb.test(sample(a));
}

function sample(p: string): string {
  return p.replace(/\{[^{}]*\}/g, 'x').replace(/\*\*/g, 'x').replace(/\*/g, 'x').replace(/\?/g, 'x');
}

function globRegex(p: string): RegExp {
  let re = '';
  for (let i = 0; i < p.length; i++) {
    const ch = p[i]!;
    if (ch === '*' && p[i + 1] === '*') {
      re += '.*';
      i++;
      if (p[i + 1] === '/') i++;
    } else if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else if (ch === '{') {
      const end = p.indexOf('}', i);
      if (end < 0) re += '\\{';
      else {
        re += '[^/]+';
        i = end;
      }
    } else re += ch.replace(/[.+^$()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** The dependency graph: references, duplicates, cycles (each reported once, whole), topological order. */
import type { Path } from '../core/path.js';
import { didYouMean } from '../core/suggest.js';
import { error, warning, type Diagnostic } from '../diagnostics/diagnostic.js';

export interface GraphPhase {
  name: string;
  title: string | undefined;
  /** depends_on entries as written (strings only; shape errors were reported already). */
  dependsOn: readonly { name: string; index: number }[];
}

/** Checks depends_on references and cycles. Returns the valid edges per phase (unknown names dropped, duplicates folded). */
export function checkGraph(phases: readonly GraphPhase[], out: Diagnostic[], duplicated: ReadonlySet<string> = new Set()): Map<string, string[]> {
  const names = new Set(phases.map((p) => p.name));
  // phases by title, for the hint of an unknown dependency: built on the first one (a valid file needs none)
  let titles: Map<string, string> | undefined;
  const byTitle = (): Map<string, string> => {
    if (titles) return titles;
    titles = new Map<string, string>();
    for (const p of phases) if (p.title !== undefined && !titles.has(p.title.toLowerCase())) titles.set(p.title.toLowerCase(), p.name);
    return titles;
  };
  const edges = new Map<string, string[]>();

  for (const p of phases) {
    const deps: string[] = [];
    // the deps so far are the names seen: a set only for a long list (most phases list one or two)
    const seen = p.dependsOn.length > 16 ? new Set<string>() : undefined;
    for (const { name: dep, index } of p.dependsOn) {
      if (!names.has(dep)) {
        const path: Path = ['workflow', p.name, 'depends_on', index];
        // never the phase itself: depending on it is a cycle (the spec's example lists the others)
        const titled = byTitle().get(dep.toLowerCase());
        const others = names.size - 1;
        const hint =
          titled !== undefined && titled !== p.name
            ? `\`${dep}\` is the title of phase \`${titled}\`; depends_on takes phase names: use \`${titled}\``
            : others === 0
              ? `\`${p.name}\` is the only phase: add the phase \`${dep}\` to \`workflow\`, or remove this entry`
              : (didYouMean(dep, except(names, p.name)) ?? `Available phases: ${firstOf(except(names, p.name), 12).join(', ')}${others > 12 ? ', ...' : ''}`);
        // the spec's words (Example Validation Errors)
        out.push(error('unknown-dependency', path, `Phase '${p.name}' depends on unknown phase '${dep}'`, { hint, error: 'WorkflowValidationError', data: { phase_name: p.name, dependency: dep } }));
        continue;
      }
      if (seen ? seen.has(dep) : deps.includes(dep)) {
        out.push(warning('duplicate-dependency', ['workflow', p.name, 'depends_on', index], `\`${dep}\` is listed more than once in depends_on`, { hint: 'remove the repeated entry' }));
        continue;
      }
      seen?.add(dep);
      deps.push(dep);
    }
    edges.set(p.name, deps);
  }
  findCycles(phases, edges, out, duplicated);
  return edges;
}

/**
 * Iterative DFS (a 10,000-phase chain must not overflow the stack). Each back edge closes one cycle,
 * reported at the depends_on entry that closes it, with the whole cycle printed.
 */
function findCycles(phases: readonly GraphPhase[], edges: Map<string, string[]>, out: Diagnostic[], duplicated: ReadonlySet<string>): void {
  // by index: a 10,000-phase file walks as many phases and edges, with no map lookup per step but one per edge
  const at = new Map<string, number>();
  for (let i = 0; i < phases.length; i++) at.set(phases[i]!.name, i);
  const deps: (readonly string[])[] = phases.map((p) => edges.get(p.name) ?? []);
  const state = new Uint8Array(phases.length); // 0 = not seen, 1 = on stack, 2 = done
  const stack: number[] = [];
  const next: number[] = [];
  for (let root = 0; root < phases.length; root++) {
    if (state[root] !== 0) continue;
    stack.push(root);
    next.push(0);
    state[root] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const list = deps[top]!;
      const k = next[next.length - 1]!;
      if (k >= list.length) {
        state[top] = 2;
        stack.pop();
        next.pop();
        continue;
      }
      next[next.length - 1] = k + 1;
      const dep = list[k]!;
      const d = at.get(dep);
      const s = d === undefined ? undefined : state[d];
      if (s === 1) {
        // phase top depends on dep, which is on the current path: dep -> ... -> top -> dep reversed
        const start = stack.indexOf(d!);
        const cycle = [...stack.slice(start).map((i) => phases[i]!.name), dep];
        const name = phases[top]!.name;
        const entry = phases[top]!.dependsOn.find((x) => x.name === dep);
        out.push(
          error('dependency-cycle', ['workflow', name, 'depends_on', entry?.index ?? 0], `Circular dependency detected: ${cycle.join(' -> ')}`, {
            hint: cycle.length > 2 ? 'Remove one of the dependencies to break the cycle' : selfHint(dep, duplicated.has(dep)),
            error: 'WorkflowValidationError',
            data: { cycle },
          }),
        );
      } else if (s === 0) {
        state[d!] = 1;
        stack.push(d!);
        next.push(0);
      }
    }
  }
}

/**
 * A phase that depends on itself. Most often it is a copy of the phase it was meant to follow, pasted under
 * the same name: YAML keeps the last of two equal keys, so the copy reads as depending on itself.
 */
function selfHint(name: string, duplicated: boolean): string {
  if (duplicated) return `phase \`${name}\` is defined twice, and the last definition, the one read, depends on \`${name}\`: rename one of them`;
  return `a phase cannot depend on itself: remove \`${name}\` from its depends_on`;
}

/** Kahn's algorithm, stable in document order. Phases on a cycle are appended at the end. `names` are distinct (a mapping's keys). */
export function topologicalOrder(names: readonly string[], edges: Map<string, string[]>): string[] {
  const at = new Map<string, number>();
  for (let i = 0; i < names.length; i++) at.set(names[i]!, i);
  // by index, not by name: one map lookup per edge (a 10,000-phase file has as many edges)
  const indeg = new Int32Array(names.length);
  const dependents: (number[] | undefined)[] = new Array<number[] | undefined>(names.length);
  for (let i = 0; i < names.length; i++) {
    const deps = edges.get(names[i]!);
    if (!deps) continue;
    indeg[i] = deps.length;
    for (const d of deps) {
      const j = at.get(d);
      if (j === undefined) continue; // never placed: its dependent waits for it, and is appended at the end
      const list = dependents[j];
      if (list) list.push(i);
      else dependents[j] = [i];
    }
  }
  const queue: number[] = [];
  for (let i = 0; i < names.length; i++) if (indeg[i] === 0) queue.push(i);
  for (let q = 0; q < queue.length; q++) {
    for (const m of dependents[queue[q]!] ?? []) if (--indeg[m]! === 0) queue.push(m);
  }
  const order = queue.map((i) => names[i]!);
  if (order.length < names.length) {
    const placed = new Uint8Array(names.length);
    for (const i of queue) placed[i] = 1;
    for (let i = 0; i < names.length; i++) if (!placed[i]) order.push(names[i]!);
  }
  return order;
}

/** The items but one, without copying a large set for each diagnostic. */
function* except(items: Iterable<string>, skip: string): Iterable<string> {
  for (const x of items) if (x !== skip) yield x;
}

/** The first `n` items, without copying a large set for each diagnostic. */
function firstOf(items: Iterable<string>, n: number): string[] {
  const out: string[] = [];
  for (const x of items) {
    if (out.length >= n) break;
    out.push(x);
  }
  return out;
}

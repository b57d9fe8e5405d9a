/**
 * How deep the declared types nest, following names. Validation recurses with the value, but
 * building a type's schema (and ajv compiling it) recurses with the type: a chain of 1,000 aliases
 * or records (`T0: T1[]`, `T1: T2[]`, ...) overflowed the stack on the first output checked. Cycles
 * (`Tree: {children: Tree[]}`) are fine in themselves, so the measure is taken on the graph of named
 * types with each strongly connected group counted at its full size: a sound upper bound on any
 * depth-first walk, computed without recursion.
 */
import type { TypeNode } from './api.js';
import { stronglyConnected } from '../core/scc.js';

/** Levels of nesting (arrays, records, nullables, named references) a declaration may reach. */
export const MAX_TYPE_DEPTH = 200;

/** Own nesting depth of a node (names not followed), and the names it refers to. */
function localShape(node: TypeNode | undefined): { depth: number; refs: string[] } {
  const refs: string[] = [];
  let depth = 0;
  const stack: [TypeNode, number][] = node ? [[node, 1]] : [];
  while (stack.length > 0) {
    const [n, d] = stack.pop()!;
    if (d > depth) depth = d;
    switch (n.kind) {
      case 'named':
        refs.push(n.name);
        break;
      case 'array':
        stack.push([n.element, d + 1]);
        break;
      case 'nullable':
        stack.push([n.inner, d + 1]);
        break;
      case 'record':
        for (const f of n.fields) stack.push([f.type, d + 1]);
        break;
      case 'primitive':
      case 'enum':
        break;
    }
  }
  return { depth, refs };
}

/**
 * For each declared name, an upper bound of the nesting reached by following names. Tarjan's
 * strongly connected components (iterative), then the longest weighted path over the condensation.
 */
export function typeDepths(names: readonly string[], definition: (name: string) => TypeNode | undefined): Map<string, number> {
  const shape = new Map<string, { depth: number; refs: string[] }>();
  for (const n of names) shape.set(n, localShape(definition(n)));
  const succ = (n: string): string[] => (shape.get(n)?.refs ?? []).filter((r) => shape.has(r));

  const { comp, comps } = stronglyConnected(names, succ);
  // Tarjan emits components in reverse topological order: successors come first
  const longest: number[] = [];
  comps.forEach((members, c) => {
    let weight = 0;
    let below = 0;
    for (const m of members) {
      weight += shape.get(m)!.depth;
      for (const r of succ(m)) {
        const rc = comp.get(r)!;
        if (rc !== c) below = Math.max(below, longest[rc]!);
      }
    }
    longest[c] = weight + below;
  });
  const out = new Map<string, number>();
  for (const n of names) out.set(n, longest[comp.get(n)!]!);
  return out;
}

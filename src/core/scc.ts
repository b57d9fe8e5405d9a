/**
 * Strongly connected components (Tarjan's algorithm, iterative: a chain of thousands of nodes must not
 * overflow the stack). Components come out in reverse topological order: every component a node
 * reaches comes before the node's own. `succ` may name nodes outside `nodes`: they are visited too.
 */
export function stronglyConnected(nodes: Iterable<string>, succ: (node: string) => readonly string[]): { comp: Map<string, number>; comps: string[][] } {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const comp = new Map<string, number>();
  const comps: string[][] = [];
  let next = 0;
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: { v: string; kids: readonly string[]; i: number }[] = [{ v: root, kids: succ(root), i: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      if (top.i < top.kids.length) {
        const w = top.kids[top.i++]!;
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          work.push({ v: w, kids: succ(w), i: 0 });
        } else if (onStack.has(w)) low.set(top.v, Math.min(low.get(top.v)!, index.get(w)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.v, Math.min(low.get(parent.v)!, low.get(top.v)!));
      if (low.get(top.v) === index.get(top.v)) {
        const members: string[] = [];
        let x: string;
        do {
          x = stack.pop()!;
          onStack.delete(x);
          comp.set(x, comps.length);
          members.push(x);
        } while (x !== top.v);
        comps.push(members);
      }
    }
  }
  return { comp, comps };
}

/**
 * Limits that keep a hostile YAML file from exhausting memory or the stack, checked while js-yaml
 * reads it: alias expansion (billion laughs), alias cycles, nesting depth. Each failure carries the
 * offset where the limit was passed.
 */
import { bomShift, contentStart, type Listener } from './yaml-index.js';

/** Deepest nesting of collections (js-yaml's maxDepth counts every node level). Every walk over a
 * parsed value (the compiler's checks, the engine's copies) is bounded by this. */
export const MAX_NESTING = 200;
/** Nodes that aliases may add when expanded, in total. A shared retry policy on 10,000 phases adds ~60,000. */
export const MAX_ALIAS_NODES = 1_000_000;

export class YamlLimitError extends Error {
  constructor(
    readonly kind: 'alias-limit' | 'alias-cycle',
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** Expanded size of a value (aliases counted as often as they are used), stopping past `cap`. */
function expandedSize(v: unknown, memo: WeakMap<object, number>, cap: number): number {
  if (typeof v !== 'object' || v === null) return 1;
  const hit = memo.get(v);
  if (hit !== undefined) return hit;
  // iterative post-order: the value may be as deep as MAX_NESTING, and cycles are handled by the caller
  const stack: { o: object; kids: unknown[]; i: number; sum: number }[] = [{ o: v, kids: Object.values(v), i: 0, sum: 1 }];
  const onStack = new Set<object>([v]);
  let last = 0;
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.i < top.kids.length) {
      const c = top.kids[top.i++];
      if (typeof c !== 'object' || c === null) top.sum += 1;
      else if (memo.has(c)) top.sum += memo.get(c)!;
      else if (onStack.has(c)) top.sum += 1; // a cycle: reported by findCycle
      else {
        onStack.add(c);
        stack.push({ o: c, kids: Object.values(c), i: 0, sum: 1 });
      }
      if (top.sum > cap) return cap + 1;
      continue;
    }
    stack.pop();
    onStack.delete(top.o);
    memo.set(top.o, top.sum);
    last = top.sum;
    const parent = stack[stack.length - 1];
    if (parent) {
      parent.sum += top.sum;
      if (parent.sum > cap) return cap + 1;
    }
  }
  return last;
}

/** An object reachable from itself, if any (js-yaml lets `&a [*a]` build a cyclic array). */
export function findCycle(root: unknown): object | undefined {
  if (typeof root !== 'object' || root === null) return undefined;
  const done = new Set<object>();
  const onStack = new Set<object>();
  const stack: { o: object; kids: unknown[]; i: number }[] = [{ o: root, kids: Object.values(root), i: 0 }];
  onStack.add(root);
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.i < top.kids.length) {
      const c = top.kids[top.i++];
      if (typeof c !== 'object' || c === null || done.has(c)) continue;
      if (onStack.has(c)) return c;
      onStack.add(c);
      stack.push({ o: c, kids: Object.values(c), i: 0 });
      continue;
    }
    stack.pop();
    onStack.delete(top.o);
    done.add(top.o);
  }
  return undefined;
}

/**
 * A listener counting alias expansion as nodes close; throws YamlLimitError at the alias that
 * passes MAX_ALIAS_NODES. `aliases` lists every alias read (offset and referent), for cycle reports.
 */
export function aliasGuard(text: string, limit = MAX_ALIAS_NODES): { listener: Listener; aliases: { offset: number; name: string; referent: unknown }[] } {
  const shift = bomShift(text);
  const opens: number[] = [];
  const memo = new WeakMap<object, number>();
  const aliases: { offset: number; name: string; referent: unknown }[] = [];
  let total = 0;
  const listener: Listener = (event, state) => {
    if (event === 'open') {
      opens.push(state.position + shift);
      return;
    }
    const open = opens.pop()!;
    if (state.kind !== null) return;
    const at = contentStart(text, open);
    if (text.charCodeAt(at) !== 42 /* * */) return;
    const name = /^\*([^\s,[\]{}]*)/.exec(text.slice(at, at + 200))?.[1] ?? '';
    aliases.push({ offset: at, name, referent: state.result });
    total += expandedSize(state.result, memo, limit);
    if (total > limit) {
      throw new YamlLimitError('alias-limit', `aliases expand to more than ${limit.toLocaleString('en-US')} nodes (limit ${limit.toLocaleString('en-US')}); \`*${name}\` passes it`, at);
    }
  };
  return { listener, aliases };
}

/**
 * Source positions from js-yaml's node listener. js-yaml keeps no ranges, but it reports each node
 * as it opens and closes; a second js-yaml pass with a listener costs about what the first did
 * (~0.1 s for a 3.4 MB, 10,000-phase file), where the `yaml` library's positioned parse took 1-3 s
 * and gigabytes on hostile input. So positions are built only when a diagnostic needs one, once.
 *
 * The listener also guards the fast path itself (see `aliasGuard`): alias expansion is counted as
 * nodes close, so a billion-laughs file fails at the alias that passed the limit.
 */
import jsyaml from 'js-yaml';
import type { Range } from '../diagnostics/diagnostic.js';

export type NodeKind = 'map' | 'seq' | 'scalar' | 'alias' | 'empty';

export interface IndexNode {
  kind: NodeKind;
  start: number;
  end: number;
  /** The constructed value (for scalars, what a key compares against; for aliases, the referent). */
  value: unknown;
  children: IndexNode[];
}

/** js-yaml's parser state, as far as the listener reads it. */
interface ListenerState {
  position: number;
  kind: string | null;
  result: unknown;
}

export type Listener = (event: 'open' | 'close', state: ListenerState) => void;

/** Offsets in js-yaml's input are shifted by one when it strips a byte-order mark. */
export function bomShift(text: string): number {
  return text.charCodeAt(0) === 0xfeff ? 1 : 0;
}

/** Skips spaces, line breaks and comments, then node properties (`&anchor`, `!tag`). */
export function contentStart(text: string, from: number): number {
  let i = from;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) i++;
    else if (c === 35 /* # */) {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl + 1;
    } else if ((c === 38 /* & */ || c === 33) /* ! */ && i + 1 < text.length && !/\s/.test(text[i + 1]!)) {
      while (i < text.length && !/\s/.test(text[i]!)) i++;
    } else return i;
  }
}

function trimEnd(text: string, start: number, end: number): number {
  let e = Math.min(end, text.length);
  while (e > start) {
    const c = text.charCodeAt(e - 1);
    if (c === 32 || c === 9 || c === 10 || c === 13) e--;
    else break;
  }
  return e;
}

/** Shared by every node without children (most are scalars): never pushed to. */
const NO_CHILDREN: IndexNode[] = [];

/** A listener that builds the node tree. `root()` is the document node (undefined for an empty file). */
export function treeBuilder(text: string): { listener: Listener; root: () => IndexNode | undefined } {
  const shift = bomShift(text);
  const stack: IndexNode[] = [];
  let root: IndexNode | undefined;
  const listener: Listener = (event, state) => {
    if (event === 'open') {
      stack.push({ kind: 'empty', start: state.position + shift, end: 0, value: null, children: NO_CHILDREN });
      return;
    }
    const node = stack.pop()!;
    node.start = contentStart(text, node.start);
    const k = state.kind;
    const isAlias = text.charCodeAt(node.start) === 42; /* * */
    node.kind = isAlias ? 'alias' : k === 'mapping' ? 'map' : k === 'sequence' ? 'seq' : k === 'scalar' ? 'scalar' : state.result === null ? 'empty' : 'scalar';
    node.value = state.result;
    node.end = node.kind === 'empty' ? node.start : Math.max(node.start, trimEnd(text, node.start, state.position + shift));
    // a flow collection at the top of a document (a JSON file, `{a: 1}` on one line) is reported twice, the
    // outer node holding only the inner one over the same text: one node, or its pairs would not be found
    const only = node.children.length === 1 ? node.children[0]! : undefined;
    if (only && only.kind === node.kind && (only.kind === 'map' || only.kind === 'seq') && only.start === node.start && only.end === node.end) node.children = only.children;
    const parent = stack[stack.length - 1];
    if (parent) {
      if (parent.children === NO_CHILDREN) parent.children = [node];
      else parent.children.push(node);
    } else root = node;
  };
  /** After a parse error: nodes still open are closed where the text stopped, their kind guessed from how they start. */
  const finish = (): void => {
    while (stack.length > 0) {
      const node = stack.pop()!;
      node.start = contentStart(text, node.start);
      const c = text.charCodeAt(node.start);
      node.kind = c === 91 /* [ */ || (c === 45 /* - */ && /\s/.test(text[node.start + 1] ?? ' ')) ? 'seq' : node.children.length > 0 ? 'map' : 'empty';
      node.end = node.start;
      const parent = stack[stack.length - 1];
      if (parent) {
        if (parent.children === NO_CHILDREN) parent.children = [node];
        else parent.children.push(node);
      } else root = node;
    }
  };
  return { listener, root: () => (finish(), root) };
}

/** `key: value` pairs of a mapping node: a child followed by `:` is a key, the next child its value. */
export function pairsOf(text: string, node: IndexNode): { key: IndexNode; value: IndexNode | undefined }[] {
  const out: { key: IndexNode; value: IndexNode | undefined }[] = [];
  const ch = node.children;
  for (let i = 0; i < ch.length; i++) {
    const c = ch[i]!;
    let j = c.end;
    while (text.charCodeAt(j) === 32 || text.charCodeAt(j) === 9) j++;
    // an explicit key (`? depends_on` then `: [a]` on the next line): its `:` may follow line breaks and comments
    if (text.charCodeAt(j) !== 58 && explicitKey(text, c.start)) j = contentStart(text, j);
    if (text.charCodeAt(j) === 58 /* : */ && c.kind !== 'map') {
      out.push({ key: c, value: ch[i + 1] });
      i++;
    }
  }
  return out;
}

/** Whether the node starting at `start` follows a `?` indicator (an explicit key). */
function explicitKey(text: string, start: number): boolean {
  let i = start - 1;
  while (i >= 0 && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 9)) i--;
  return text.charCodeAt(i) === 63 /* ? */ && (i === 0 || /[\s{,[]/.test(text[i - 1]!));
}

function keyText(n: IndexNode): string {
  return String(n.value);
}

/** The positions of one parsed text: lookups by document path. */
export class PositionIndex {
  /** Collections by identity, so a path through an alias continues at its anchor (built on the first alias met). */
  private anchored: Map<unknown, IndexNode> | undefined;
  /** Each mapping's pairs by key (the last occurrence), built when first walked through. */
  private readonly keyed = new Map<IndexNode, Map<string, { key: IndexNode; value: IndexNode | undefined }>>();

  constructor(
    private readonly text: string,
    readonly root: IndexNode | undefined,
  ) {}

  static build(text: string, schema: jsyaml.Schema, maxDepth: number): PositionIndex {
    const t = treeBuilder(text);
    try {
      // json: duplicate keys are positioned by the caller, not thrown here
      jsyaml.load(text, { schema, json: true, listener: t.listener, maxDepth } as jsyaml.LoadOptions);
    } catch {
      // positions of what was read before the error are still good
    }
    return new PositionIndex(text, t.root());
  }

  private deref(n: IndexNode): IndexNode {
    if (n.kind !== 'alias') return n;
    if (!this.anchored) {
      const anchored = new Map<unknown, IndexNode>();
      const stack = this.root ? [this.root] : [];
      while (stack.length > 0) {
        const x = stack.pop()!;
        if ((x.kind === 'map' || x.kind === 'seq') && typeof x.value === 'object' && x.value !== null && !anchored.has(x.value)) anchored.set(x.value, x);
        for (const c of x.children) stack.push(c);
      }
      this.anchored = anchored;
    }
    return this.anchored.get(n.value) ?? n;
  }

  /** Each mapping's pairs by key: the last occurrence wins, as it does for the value. */
  private pairsByKey(node: IndexNode): Map<string, { key: IndexNode; value: IndexNode | undefined }> {
    let byKey = this.keyed.get(node);
    if (!byKey) {
      byKey = new Map();
      for (const p of pairsOf(this.text, node)) byKey.set(keyText(p.key), p);
      this.keyed.set(node, byKey);
    }
    return byKey;
  }

  /** A mapping's merge entry (`<<: *defaults`); a quoted `"<<"` is a plain key. */
  private mergeEntry(node: IndexNode): { key: IndexNode; value: IndexNode } | undefined {
    const mk = this.pairsByKey(node).get('<<');
    if (!mk?.value || this.text[mk.key.start] === '"' || this.text[mk.key.start] === "'") return undefined;
    return { key: mk.key, value: mk.value };
  }

  /** Whether the merge value (`*a`, `[*a, *b]`, or an inline mapping) supplies `key`, through nested merges too. */
  private merges(value: IndexNode, key: string, depth: number): boolean {
    if (depth > 64) return false;
    const m = this.deref(value);
    for (const source of m.kind === 'seq' ? m.children : [m]) {
      const from = this.deref(source);
      if (from.kind !== 'map') continue;
      if (this.pairsByKey(from).has(key)) return true;
      const inner = this.mergeEntry(from);
      if (inner && this.merges(inner.value, key, depth + 1)) return true;
    }
    return false;
  }

  /**
   * Walks `path`. Returns the key's range for target 'key' (or when the value is empty), else the
   * value's range. When the path leaves the document, returns the deepest node reached.
   */
  locate(path: readonly (string | number)[], target: 'key' | 'value'): Range {
    let node = this.root;
    if (!node) return [0, 0];
    let best: Range = [node.start, node.kind === 'empty' ? node.start : node.start + 1];
    for (let i = 0; i < path.length; i++) {
      const seg = path[i]!;
      node = this.deref(node);
      const isLast = i === path.length - 1;
      if (node.kind === 'map') {
        const key = String(seg);
        const found = this.pairsByKey(node).get(key);
        if (!found) {
          // brought in by a merge key: reported at the `<<` entry, wherever it stands in the mapping
          const merge = this.mergeEntry(node);
          return merge && this.merges(merge.value, key, 0) ? [merge.key.start, Math.max(merge.key.end, merge.key.start + 1)] : best;
        }
        const keyRange: Range = [found.key.start, Math.max(found.key.end, found.key.start + 1)];
        const v = found.value;
        if (!v) return keyRange;
        node = v;
        best = isLast && target === 'key' ? keyRange : v.kind === 'empty' ? keyRange : [v.start, Math.max(v.end, v.start + 1)];
      } else if (node.kind === 'seq' && typeof seg === 'number') {
        const item = node.children[seg];
        if (!item) return best;
        node = item;
        best = [item.start, Math.max(item.end, item.start + 1)];
      } else return best;
    }
    return best;
  }

  /**
   * Keys that are collections (`? [a, b]\n: x`, `{[a]: x}`): js-yaml turns them into the text `a,b` or
   * `[object Object]`, a name nobody wrote. A collection inside a mapping followed by `:` is one.
   */
  collectionKeys(): Range[] {
    const out: Range[] = [];
    const stack: IndexNode[] = this.root ? [this.root] : [];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n.kind === 'map') {
        for (const c of n.children) {
          if ((c.kind === 'map' || c.kind === 'seq') && this.text.charCodeAt(contentStart(this.text, c.end)) === 58 /* : */) out.push([c.start, Math.max(c.end, c.start + 1)]);
        }
      }
      for (const c of n.children) stack.push(c);
    }
    return out.sort((a, b) => a[0] - b[0]);
  }

  /** Every repeated key of every mapping, with the first occurrence. */
  duplicates(): { path: (string | number)[]; key: string; at: Range; first: Range }[] {
    const out: { path: (string | number)[]; key: string; at: Range; first: Range }[] = [];
    const stack: { n: IndexNode; path: (string | number)[] }[] = this.root ? [{ n: this.root, path: [] }] : [];
    while (stack.length > 0) {
      const { n, path } = stack.pop()!;
      if (n.kind === 'map') {
        const seen = new Map<string, Range>();
        for (const p of pairsOf(this.text, n)) {
          const k = keyText(p.key);
          const r: Range = [p.key.start, Math.max(p.key.end, p.key.start + 1)];
          const first = seen.get(k);
          if (first) out.push({ path: [...path, k], key: k, at: r, first });
          else seen.set(k, r);
          if (p.value) stack.push({ n: p.value, path: [...path, k] });
        }
      } else if (n.kind === 'seq') {
        n.children.forEach((c, i) => stack.push({ n: c, path: [...path, i] }));
      }
    }
    return out.sort((a, b) => a.at[0] - b.at[0]);
  }
}

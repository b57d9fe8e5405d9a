/**
 * Names a workflow cannot use: `__proto__`. A JavaScript object cannot hold it as an ordinary key
 * (assigning it replaces the object's prototype), so a phase, input, output, agent, type or field
 * of that name would vanish from some record, result or output path. It is refused where it is
 * written, as a key anywhere in the file, or as a segment of an input reference
 * (`upstream.__proto__`, `$trigger.__proto__`). Data from agents and triggers is another matter: a
 * `"__proto__"` key there is kept as an ordinary key (see engine/attempt.ts toJson).
 */
import { isPlainObject } from '../core/json.js';
import type { Path } from '../core/path.js';
import { error, type Diagnostic } from '../diagnostics/diagnostic.js';

export const RESERVED_NAMES: ReadonlySet<string> = new Set(['__proto__']);

/**
 * Whether a document read from `text` may hold a reserved name, as a key or inside a string. YAML
 * writes a name out (a plain or quoted scalar, a block scalar; aliases and merges repeat nodes
 * written elsewhere; folding only adds spaces and line breaks), except through a double-quoted
 * escape (`"\x5f_proto__"`): a text with neither the name nor a backslash holds none.
 */
export function mayHoldReserved(text: string): boolean {
  if (text.includes('\\')) return true;
  for (const name of RESERVED_NAMES) if (text.includes(name)) return true;
  return false;
}

/** Every `__proto__` key of the document, and every input reference with a `__proto__` segment. */
export function checkReservedNames(doc: unknown, out: Diagnostic[]): void {
  // iterative: the document's depth is already bounded (too-deep), but no recursion is needed. Paths are
  // built only for what is reported (a node keeps its parent): a 10,000-phase file has ~10^5 nodes.
  interface Node {
    value: unknown;
    key: string | number | undefined;
    parent: Node | undefined;
    depth: number;
  }
  const pathOf = (n: Node): Path => {
    const p: (string | number)[] = [];
    for (let at: Node | undefined = n; at?.key !== undefined; at = at.parent) p.push(at.key);
    return p.reverse();
  };
  const stack: Node[] = [{ value: doc, key: undefined, parent: undefined, depth: 0 }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const value = node.value;
    // only collections are pushed: a scalar holds no key (an input reference is read where its mapping is)
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) {
        const v: unknown = value[i];
        if (typeof v === 'object' && v !== null) stack.push({ value: v, key: i, parent: node, depth: node.depth + 1 });
      }
      continue;
    }
    if (!isPlainObject(value)) continue;
    const keys = Object.keys(value);
    // an input reference is a string at workflow.<phase>.inputs.<name>
    const inInputs = node.depth === 3 && node.key === 'inputs' && node.parent!.parent!.key === 'workflow';
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i]!;
      const v = value[k];
      if (RESERVED_NAMES.has(k)) {
        const path = pathOf(node);
        out.push(error('reserved-name', [...path, k], `\`${k}\` cannot be used as a name or key in a workflow (${what(path)})`, { target: 'key', hint: 'rename it: JavaScript objects cannot hold this key as an ordinary one' }));
      }
      if (inInputs && typeof v === 'string' && readsReserved(v)) {
        out.push(error('reserved-name', pathOf({ value: v, key: k, parent: node, depth: node.depth + 1 }), `the input reference \`${v}\` reads \`__proto__\`, which no output or trigger key can be`, { hint: 'name the key the value is kept under' }));
        continue;
      }
      if (typeof v === 'object' && v !== null) stack.push({ value: v, key: k, parent: node, depth: node.depth + 1 });
    }
  }
}

/** Whether a reference has a reserved name between its dots (split only when the text holds one). */
function readsReserved(ref: string): boolean {
  for (const name of RESERVED_NAMES) if (ref.includes(name)) return ref.split('.').some((seg) => RESERVED_NAMES.has(seg));
  return false;
}

/** What a key at `path` names, for the message. */
function what(path: Path): string {
  const [top, , field] = path;
  if (path.length === 1 && top === 'workflow') return 'a phase name';
  if (path.length === 1 && top === 'agents') return 'an agent id';
  if (path.length === 1 && top === 'types') return 'a type name';
  if (top === 'types') return 'a field name';
  if (path.length === 3 && top === 'workflow' && field === 'inputs') return 'an input name';
  if (path.length === 3 && top === 'workflow' && field === 'outputs') return 'an output name';
  return 'a key';
}

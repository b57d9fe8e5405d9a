/**
 * YAML source -> plain value, with positions on demand.
 *
 * Speed and positions pull apart: the `yaml` library keeps every node's range but composes a
 * 10,000-phase file in seconds; js-yaml loads it ~20x faster and keeps none. So values come from
 * js-yaml (with a schema matching YAML 1.2 core), and the `yaml` document with ranges is built only
 * when something needs a position (a diagnostic), once per file. If js-yaml rejects the text
 * (syntax error, duplicate key, several documents), the `yaml` library takes over entirely and
 * reports every problem with its position.
 */
import jsyaml from 'js-yaml';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node as YNode } from 'yaml';
import type { Path } from '../core/path.js';
import { error, type Diagnostic, type Range } from '../diagnostics/diagnostic.js';

// YAML 1.2 core schema integers: decimal, 0o octal, 0x hex. (js-yaml's own int type also takes
// 0b binary and `_` separators, which YAML 1.2 reads as strings; this keeps the two parsers in step.)
const coreInt = new jsyaml.Type('tag:yaml.org,2002:int', {
  kind: 'scalar',
  resolve: (data: string | null) => data !== null && /^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/.test(data),
  construct: (data: string) =>
    data.startsWith('0o') ? parseInt(data.slice(2), 8) : data.startsWith('0x') ? parseInt(data.slice(2), 16) : parseInt(data, 10),
  predicate: (v: unknown) => typeof v === 'number' && Number.isInteger(v),
  represent: (v: unknown) => String(v),
});
const coreFloat = new jsyaml.Type('tag:yaml.org,2002:float', {
  kind: 'scalar',
  resolve: (data: string | null) =>
    data !== null && /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/.test(data),
  construct: (data: string) => {
    const lower = data.toLowerCase();
    if (lower.endsWith('.inf')) return data.startsWith('-') ? -Infinity : Infinity;
    if (lower === '.nan') return NaN;
    return parseFloat(data);
  },
  predicate: (v: unknown) => typeof v === 'number',
  represent: (v: unknown) => String(v),
});
const CORE12 = jsyaml.CORE_SCHEMA.extend({ implicit: [coreInt, coreFloat] });

export interface ParsedSource {
  value: unknown;
  diagnostics: Diagnostic[];
  /** The source range of the node at `path` (or of the nearest existing ancestor). */
  locate(path: Path, target?: 'key' | 'value'): Range | undefined;
}

export function parseYamlSource(text: string): ParsedSource {
  let doc: Document.Parsed | undefined;
  const document = (): Document.Parsed => (doc ??= parseDocument(text, { uniqueKeys: false, lineCounter: new LineCounter(), prettyErrors: false }));
  const locate = (path: Path, target: 'key' | 'value' = 'value'): Range | undefined => locateIn(document(), path, target);

  try {
    const value = jsyaml.load(text, { schema: CORE12 });
    return { value, diagnostics: [], locate };
  } catch {
    // fall through to the positioned slow path
  }
  const d = document();
  const diagnostics: Diagnostic[] = [];
  const seen = new Set<number>();
  for (const e of d.errors) {
    if (seen.has(e.pos[0])) continue; // one report per place: the parser often explains one slip twice
    seen.add(e.pos[0]);
    const range: Range = [e.pos[0], Math.max(e.pos[1], e.pos[0] + 1)];
    diagnostics.push(error('yaml-syntax', [], firstLine(e.message), { range }));
  }
  if (d.errors.length === 0) findDuplicateKeys(d.contents, [], diagnostics);
  let value: unknown;
  if (d.errors.length === 0) {
    try {
      value = d.toJS({ maxAliasCount: 10_000 });
    } catch (e) {
      diagnostics.push(error('yaml-syntax', [], firstLine(String((e as Error).message)), { range: [0, 1] }));
    }
  }
  if (diagnostics.length === 0) {
    // js-yaml refused something the yaml library accepts (e.g. a multi-document stream)
    diagnostics.push(error('yaml-syntax', [], 'the file must hold a single YAML document', { range: [0, 1] }));
  }
  return { value, diagnostics, locate };
}

function firstLine(s: string): string {
  return (s.split('\n')[0] ?? s).trim();
}

function keyOf(node: unknown): string | undefined {
  if (isScalar(node)) return String(node.value);
  return undefined;
}

function findDuplicateKeys(node: unknown, path: (string | number)[], out: Diagnostic[]): void {
  if (isMap(node)) {
    const seen = new Map<string, Range | undefined>();
    for (const item of node.items) {
      const k = keyOf(item.key);
      if (k === undefined) continue;
      const keyRange = rangeOf(item.key);
      const first = seen.get(k);
      if (seen.has(k)) {
        out.push(
          error('duplicate-key', [...path, k], `duplicate key \`${k}\``, {
            ...(keyRange ? { range: keyRange } : {}),
            hint: 'each key may appear once in a mapping; remove or rename one of them',
            related: [{ message: `\`${k}\` first defined here`, path: [...path, k], target: 'key', ...(first ? { range: first } : {}) }],
          }),
        );
      } else seen.set(k, keyRange);
      findDuplicateKeys(item.value, [...path, k], out);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => findDuplicateKeys(item, [...path, i], out));
  }
}

function rangeOf(node: unknown): Range | undefined {
  const r = (node as YNode | null)?.range;
  return r ? [r[0], r[1]] : undefined;
}

/**
 * Walks the positioned document along `path`. Returns the key's range for target 'key' (or when the
 * value is empty), else the value's range. When the path leaves the document, returns the deepest
 * node reached (the parent of a missing field points at its key).
 */
function locateIn(doc: Document.Parsed, path: Path, target: 'key' | 'value'): Range | undefined {
  let node: unknown = doc.contents;
  let keyRange: Range | undefined;
  let best: Range | undefined = rangeOf(node) ? [rangeOf(node)![0], rangeOf(node)![0] + 1] : undefined;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    if (isMap(node)) {
      // the last occurrence wins, as it does for the value
      let found: unknown;
      for (const item of node.items) if (isPair(item) && keyOf(item.key) === String(seg)) found = item;
      if (!found || !isPair(found)) return best;
      keyRange = rangeOf(found.key);
      node = found.value;
      const isLast = i === path.length - 1;
      const vr = rangeOf(node);
      best = isLast && target === 'key' ? keyRange : vr && !(isScalar(node) && node.value === null && vr[0] === vr[1]) ? vr : keyRange;
    } else if (isSeq(node) && typeof seg === 'number') {
      const item: unknown = node.items[seg];
      if (item === undefined) return best;
      node = item;
      keyRange = undefined;
      best = rangeOf(node) ?? best;
    } else {
      return best;
    }
  }
  return best;
}

/**
 * JSON Schema -> TypeScript type text, for `baton types`: the subset Baton's type language
 * produces (and common hand-written schemas use): types, enums and consts, objects with required
 * and optional properties, arrays, anyOf/oneOf, allOf, local `$ref`s to `$defs`/`definitions`
 * (emitted once as named types). What TypeScript cannot say (patterns, bounds) is left out; what is
 * not understood becomes `unknown`. Objects are closed in the generated types on purpose: reading a
 * key the workflow does not wire must fail `tsc`.
 */
import { isPlainObject } from '../core/json.js';

export interface TsEmitter {
  /** Named types referenced so far: name -> declaration body. */
  readonly named: Map<string, string>;
  /** The TypeScript type of `schema`; `$defs` names are prefixed with `prefix` (to keep sources apart). */
  typeOf(schema: unknown, prefix?: string): string;
}

const IDENT = /^[A-Za-z_$][\w$]*$/;

export function tsName(raw: string): string {
  const s = raw.replace(/[^\w$]+(.)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''));
  const t = s.charAt(0).toUpperCase() + s.slice(1);
  return IDENT.test(t) ? t : `T${t}`;
}

export function tsKey(k: string): string {
  return IDENT.test(k) ? k : JSON.stringify(k);
}

/** `naming`: the TypeScript name of a named schema, from `typeOf`'s prefix and its `$defs` key (default: tsName of both). */
export function createTsEmitter(naming: (prefix: string, key: string) => string = (prefix, key) => tsName(prefix + key)): TsEmitter {
  const named = new Map<string, string>();
  const typeOf = (schema: unknown, prefix = ''): string => convert(schema, schema, prefix, 0);

  function refName(ref: string, root: unknown, prefix: string, depth: number): string {
    const m = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
    if (!m || !isPlainObject(root)) return 'unknown';
    const defs = root[m[1]!];
    const key = decodeURIComponent(m[2]!).replace(/~1/g, '/').replace(/~0/g, '~');
    const target = isPlainObject(defs) ? defs[key] : undefined;
    if (target === undefined) return 'unknown';
    const name = naming(prefix, key);
    if (!named.has(name)) {
      named.set(name, 'unknown'); // placeholder first: recursive types refer to themselves
      named.set(name, convert(target, root, prefix, depth + 1));
    }
    return name;
  }

  function convert(s: unknown, root: unknown, prefix: string, depth: number): string {
    if (s === true || s === undefined) return 'unknown';
    if (s === false) return 'never';
    if (!isPlainObject(s) || depth > 50) return 'unknown';
    if (typeof s['$ref'] === 'string') return refName(s['$ref'], root, prefix, depth);
    const parts: string[] = [];
    if ('const' in s) return literal(s['const']);
    if (Array.isArray(s['enum'])) return s['enum'].map(literal).join(' | ') || 'never';
    const alts = Array.isArray(s['anyOf']) ? s['anyOf'] : Array.isArray(s['oneOf']) ? s['oneOf'] : undefined;
    if (alts) parts.push(union(alts.map((a) => convert(a, root, prefix, depth + 1))));
    const t = s['type'];
    const types = typeof t === 'string' ? [t] : Array.isArray(t) ? t.filter((x): x is string => typeof x === 'string') : [];
    if (types.length > 0) parts.push(union(types.map((ty) => byType(ty, s, root, prefix, depth))));
    else if (isPlainObject(s['properties'])) parts.push(byType('object', s, root, prefix, depth));
    if (Array.isArray(s['allOf'])) for (const a of s['allOf']) parts.push(convert(a, root, prefix, depth + 1));
    const kept = parts.filter((p) => p !== 'unknown');
    if (kept.length === 0) return 'unknown';
    return kept.length === 1 ? kept[0]! : kept.map((p) => `(${p})`).join(' & ');
  }

  function byType(t: string, s: Record<string, unknown>, root: unknown, prefix: string, depth: number): string {
    switch (t) {
      case 'string':
        return 'string';
      case 'number':
      case 'integer':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array': {
        const items = s['items'];
        if (items === undefined || Array.isArray(items)) return 'unknown[]';
        const el = convert(items, root, prefix, depth + 1);
        return /[|&]/.test(el) ? `(${el})[]` : `${el}[]`;
      }
      case 'object': {
        const props = isPlainObject(s['properties']) ? s['properties'] : undefined;
        if (!props || Object.keys(props).length === 0) return 'Record<string, unknown>';
        const req = new Set(Array.isArray(s['required']) ? s['required'].filter((x): x is string => typeof x === 'string') : []);
        const fields = Object.entries(props).map(([k, v]) => `${tsKey(k)}${req.has(k) ? '' : '?'}: ${convert(v, root, prefix, depth + 1)}`);
        return `{ ${fields.join('; ')} }`;
      }
      default:
        return 'unknown';
    }
  }

  return { named, typeOf };
}

function union(parts: string[]): string {
  const u = [...new Set(parts)];
  if (u.includes('unknown')) return 'unknown';
  return u.join(' | ') || 'never';
}

function literal(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return JSON.stringify(v);
  return 'unknown';
}

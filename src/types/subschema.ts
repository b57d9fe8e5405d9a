/**
 * JSON Schema subtyping, decided for the subset Baton's type language produces (objects, arrays,
 * primitives, enums, unions with null, required/optional properties, local `$ref`s) and honest
 * about the rest: `isSubschema(P, C)` asks "does every value P allows pass C?".
 *
 * The answer is never "compatible" unless it is proven (sound), and keywords it cannot compare
 * (`pattern`, `format`, `if/then`, numeric bounds of C that P does not match, ...) are named in a
 * `not-comparable` finding instead of passing silently. Restrictions on the producer side that are
 * not understood are dropped, which only widens P: still sound for "compatible", and a may-fail
 * verdict on such a node is reported as not-comparable (P's keyword might have made it fit).
 *
 * Findings are graded: `error` when no value of P at that place can pass (disjoint types, a key C
 * requires that P never has, a key P always has that C forbids), `warning` otherwise.
 */
import { isPlainObject, type Json } from '../core/json.js';

export type Verdict = 'compatible' | 'may-fail' | 'incompatible' | 'unknown';

export type FindingKind =
  /** No value of the producer's type at this place has a type the consumer accepts. */
  | 'type'
  /** The consumer requires a key the producer's type does not have. */
  | 'missing'
  /** The consumer requires a key the producer's type has as optional. */
  | 'optional'
  /** A key the producer's type has, which the consumer forbids (`additionalProperties: false`). */
  | 'unknown-key'
  /** The producer's object is open (undeclared keys allowed); the consumer forbids extra keys. */
  | 'extra-keys'
  /** Some values of the producer's type fit, some do not (number vs integer, null, a wider enum). */
  | 'narrower'
  /** The producer is untyped (`any`, `object`, `array` without element type) where the consumer is not. */
  | 'untyped'
  /** Keywords the checker cannot compare: named in `keywords`. */
  | 'not-comparable';

export interface SchemaFinding {
  severity: 'error' | 'warning';
  kind: FindingKind;
  /** Where in the value: property names, `*` for array elements. */
  path: string[];
  message: string;
  keywords?: string[];
}

export interface SubschemaResult {
  verdict: Verdict;
  findings: SchemaFinding[];
}

type Kind = 'null' | 'boolean' | 'integer' | 'number' | 'string' | 'array' | 'object';
const KINDS: readonly Kind[] = ['null', 'boolean', 'integer', 'number', 'string', 'array', 'object'];

/** A schema node and the root its local `$ref`s resolve against. */
interface S {
  node: unknown;
  root: unknown;
}

/** One alternative of a schema: a single JSON type (or any), with what restricts it. */
interface Branch {
  kind: Kind | 'any';
  values?: Json[];
  /** Restricting keywords that are not understood. */
  opaque: string[];
  bounds: Bounds;
  items?: S;
  props?: Map<string, S>;
  required?: Set<string>;
  /** true: any extra key; false: none; S: extra keys must fit it. */
  additional?: boolean | S;
}

type Bounds = Partial<Record<BoundKey, number>>;
type BoundKey = 'minimum' | 'maximum' | 'exclusiveMinimum' | 'exclusiveMaximum' | 'minLength' | 'maxLength' | 'minItems' | 'maxItems' | 'multipleOf';
const LOWER: readonly BoundKey[] = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems'];
const UPPER: readonly BoundKey[] = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems'];
const BOUND_KEYS: readonly BoundKey[] = [...LOWER, ...UPPER, 'multipleOf'];

/** Keywords that only annotate: never change what validates. */
const ANNOTATIONS = new Set([
  '$schema', '$id', '$comment', '$anchor', '$defs', 'definitions', 'title', 'description', 'default', 'examples', 'example',
  'deprecated', 'readOnly', 'writeOnly', 'contentMediaType', 'contentEncoding', 'nullable', '$vocabulary',
]);
// Understood: type, enum, const, properties, required, additionalProperties, items, anyOf, oneOf, $ref and the bounds.
/** Keywords that restrict and are not compared (anything else is an unknown keyword, ignored as ajv does). */
const OPAQUE = new Set([
  'pattern', 'format', 'if', 'then', 'else', 'not', 'allOf', 'uniqueItems', 'contains', 'minContains', 'maxContains', 'minProperties',
  'maxProperties', 'patternProperties', 'propertyNames', 'dependencies', 'dependentRequired', 'dependentSchemas', 'prefixItems',
  'additionalItems', 'unevaluatedProperties', 'unevaluatedItems', '$dynamicRef', '$recursiveRef',
]);

export interface SubschemaOptions {
  /** Max findings kept (the first ones, depth-first). */
  limit?: number | undefined;
}

/**
 * Does every value `producer` allows pass `consumer`? Both are JSON Schemas (draft-07 or 2020-12);
 * each is its own root for `$ref`s. Pure; safe to cache by the two schemas' identities.
 */
export function isSubschema(producer: unknown, consumer: unknown, opts: SubschemaOptions = {}): SubschemaResult {
  const ctx: Ctx = { inProgress: new Map(), limit: opts.limit ?? 50 };
  const findings = sub({ node: producer, root: producer }, { node: consumer, root: consumer }, [], ctx);
  return { verdict: verdictOf(findings), findings: findings.slice(0, ctx.limit) };
}

export function verdictOf(findings: readonly SchemaFinding[]): Verdict {
  if (findings.some((f) => f.severity === 'error')) return 'incompatible';
  if (findings.some((f) => f.kind === 'not-comparable')) return 'unknown';
  return findings.length > 0 ? 'may-fail' : 'compatible';
}

interface Ctx {
  inProgress: Map<unknown, Set<unknown>>;
  limit: number;
}

function sub(p: S, c: S, path: string[], ctx: Ctx): SchemaFinding[] {
  // coinduction: a pair met again while it is being decided holds (recursive types)
  let seen = ctx.inProgress.get(p.node);
  if (seen?.has(c.node)) return [];
  if (!seen) ctx.inProgress.set(p.node, (seen = new Set()));
  seen.add(c.node);
  try {
    const cb = branches(c);
    if (cb.length === 1 && cb[0]!.kind === 'any' && cb[0]!.opaque.length === 0 && Object.keys(cb[0]!.bounds).length === 0) return [];
    const per = expand(branches(p), cb.length).map((pb) => branchInUnion(pb, cb, path, ctx));
    // an error means no value here can fit: when some alternative of P can, the others only narrow it
    const allFail = per.length > 0 && per.every((f) => f.some((x) => x.severity === 'error'));
    const out = per.flat();
    return allFail ? out : out.map((f) => (f.severity === 'error' ? { ...f, severity: 'warning' as const, kind: 'narrower' as const } : f));
  } finally {
    seen.delete(c.node);
  }
}

/** Splits enumerations (and booleans) into one branch per value when the consumer is a union. */
function expand(bs: Branch[], consumerBranches: number): Branch[] {
  if (consumerBranches < 2) return bs;
  return bs.flatMap((b) => {
    if (b.values && b.values.length > 1) return b.values.map((v) => ({ ...b, values: [v] }));
    if (b.kind === 'boolean' && !b.values) return [true, false].map((v) => ({ ...b, values: [v] }));
    return [b];
  });
}

function branchInUnion(pb: Branch, cbs: Branch[], path: string[], ctx: Ctx): SchemaFinding[] {
  let best: SchemaFinding[] | undefined;
  let bestScore = Infinity;
  for (const cb of cbs) {
    const f = branchIn(pb, cb, path, ctx);
    if (f.length === 0) return [];
    // prefer a candidate of the same JSON type, then the mildest findings
    const score = (f.some((x) => x.severity === 'error') ? 1000 : 0) + (f.some((x) => x.kind === 'type' && x.path.length === path.length) ? 10_000 : 0) + f.length;
    if (score < bestScore) {
      best = f;
      bestScore = score;
    }
  }
  return best ?? [finding('error', 'type', path, `${describe(pb)} never fits: the schema allows nothing here`)];
}

function finding(severity: 'error' | 'warning', kind: FindingKind, path: string[], message: string, keywords?: string[]): SchemaFinding {
  return { severity, kind, path, message, ...(keywords ? { keywords } : {}) };
}

function kindFits(p: Kind, c: Kind): boolean {
  return p === c || (p === 'integer' && c === 'number');
}

function branchIn(pb: Branch, cb: Branch, path: string[], ctx: Ctx): SchemaFinding[] {
  const out: SchemaFinding[] = [];
  const notComparable = (kw: string[]): void => {
    out.push(finding('warning', 'not-comparable', path, `cannot compare ${kw.map((k) => `\`${k}\``).join(', ')}: not checked before running`, kw));
  };
  if (cb.kind === 'any') {
    // bounds without a type apply to the values of their kind: not compared here
    const kw = [...cb.opaque, ...Object.keys(cb.bounds)];
    if (kw.length > 0) notComparable(kw);
    return out;
  }
  if (pb.kind === 'any') {
    out.push(finding('warning', 'untyped', path, `the value is untyped (any); the schema wants ${describe(cb)}`));
    return out;
  }
  // values first: concrete values are compared exactly
  if (pb.values) {
    const fits = pb.values.filter((v) => valueFitsBranch(v, cb));
    if (fits.length === 0) return [finding('error', 'type', path, `${describe(pb)} never fits ${describe(cb)}`)];
    if (fits.length < pb.values.length) {
      const bad = pb.values.filter((v) => !fits.includes(v));
      out.push(finding('warning', 'narrower', path, `${bad.map((v) => JSON.stringify(v)).join(', ')} ${bad.length === 1 ? 'is' : 'are'} not allowed by ${describe(cb)}`));
    }
    if (cb.opaque.length > 0 && !(pb.kind === 'string' || pb.kind === 'number' || pb.kind === 'integer' || pb.kind === 'boolean' || pb.kind === 'null')) notComparable(cb.opaque);
    else if (cb.opaque.length > 0) notComparable(cb.opaque);
    return out;
  }
  if (!kindFits(pb.kind, cb.kind)) {
    if (pb.kind === 'number' && cb.kind === 'integer') {
      out.push(finding('warning', 'narrower', path, 'a number may have a fraction; the schema wants an integer'));
    } else return [finding('error', 'type', path, `${describe(pb)} never fits ${describe(cb)}`)];
  }
  if (cb.values) {
    if (pb.kind === 'null' && cb.values.includes(null)) return out;
    out.push(finding('warning', 'narrower', path, `any ${pb.kind} may come; the schema allows only ${cb.values.map((v) => JSON.stringify(v)).join(', ')}`));
  }
  const loose = boundsNotImplied(pb.bounds, cb.bounds);
  if (loose.length > 0) notComparable(loose);
  if (cb.opaque.length > 0) notComparable(cb.opaque);
  if (pb.kind === 'array' && cb.kind === 'array') {
    if (cb.items) {
      if (!pb.items) out.push(finding('warning', 'untyped', [...path, '*'], `the elements are untyped (any); the schema wants ${describeS(cb.items)}`));
      else out.push(...sub(pb.items, cb.items, [...path, '*'], ctx));
    }
  }
  if (pb.kind === 'object' && cb.kind === 'object') out.push(...objectIn(pb, cb, path, ctx));
  // the producer's own restrictions (a pattern, ...) might be what makes a may-fail fit
  if (pb.opaque.length > 0 && out.length > 0 && out.every((f) => f.severity === 'warning' && f.kind === 'narrower')) {
    return [finding('warning', 'not-comparable', path, `cannot compare the producer's ${pb.opaque.map((k) => `\`${k}\``).join(', ')}`, pb.opaque)];
  }
  return out;
}

function objectIn(pb: Branch, cb: Branch, path: string[], ctx: Ctx): SchemaFinding[] {
  const out: SchemaFinding[] = [];
  const pProps = pb.props ?? new Map<string, S>();
  const pReq = pb.required ?? new Set<string>();
  const pAdd = pb.additional ?? true;
  const cProps = cb.props ?? new Map<string, S>();
  const cAdd = cb.additional ?? true;
  for (const k of cb.required ?? []) {
    if (pReq.has(k)) continue;
    if (pProps.has(k)) out.push(finding('warning', 'optional', [...path, k], `\`${k}\` is required by the schema but optional here`));
    else if (pAdd === false) out.push(finding('error', 'missing', [...path, k], `\`${k}\` is required by the schema and never provided`));
    else out.push(finding('warning', 'missing', [...path, k], `\`${k}\` is required by the schema and not declared here`));
  }
  for (const [k, ps] of pProps) {
    const cs: S | boolean = cProps.get(k) ?? cAdd;
    if (cs === true) continue;
    if (cs === false) {
      out.push(finding(pReq.has(k) ? 'error' : 'warning', 'unknown-key', [...path, k], `\`${k}\` is not allowed by the schema (additionalProperties: false)`));
      continue;
    }
    out.push(...sub(ps, cs, [...path, k], ctx));
  }
  if (pAdd !== false) {
    // an open producer may carry a key it does not declare, with any value: it must fit the consumer's property
    const extra: S = pAdd === true ? { node: true, root: true } : pAdd;
    for (const [k, cs] of cProps) if (!pProps.has(k)) out.push(...sub(extra, cs, [...path, k], ctx));
  }
  if (pAdd !== false && cAdd !== true) {
    if (cAdd === false) out.push(finding('warning', 'extra-keys', path, 'undeclared keys may come; the schema forbids them (additionalProperties: false)'));
    else if (pAdd === true) out.push(finding('warning', 'untyped', path, `undeclared keys may come untyped; the schema wants them to be ${describeS(cAdd)}`));
    else out.push(...sub(pAdd, cAdd, [...path, '*'], ctx));
  }
  return out;
}

/** Consumer bounds the producer's bounds do not imply: named, never silently passed. */
function boundsNotImplied(p: Bounds, c: Bounds): string[] {
  const out: string[] = [];
  for (const k of BOUND_KEYS) {
    const cv = c[k];
    if (cv === undefined) continue;
    const pv = p[k];
    if (k === 'multipleOf') {
      if (pv === undefined || pv % cv !== 0) out.push(k);
    } else if (LOWER.includes(k)) {
      const pl = lowerOf(p, k);
      if (pl === undefined || pl < cv || (k === 'exclusiveMinimum' && pl === cv && p.exclusiveMinimum === undefined)) out.push(k);
    } else {
      const pu = upperOf(p, k);
      if (pu === undefined || pu > cv || (k === 'exclusiveMaximum' && pu === cv && p.exclusiveMaximum === undefined)) out.push(k);
    }
  }
  return out;
}

function lowerOf(b: Bounds, k: BoundKey): number | undefined {
  if (k === 'minLength' || k === 'minItems') return b[k];
  const vals = [b.minimum, b.exclusiveMinimum].filter((x): x is number => x !== undefined);
  return vals.length > 0 ? Math.max(...vals) : undefined;
}

function upperOf(b: Bounds, k: BoundKey): number | undefined {
  if (k === 'maxLength' || k === 'maxItems') return b[k];
  const vals = [b.maximum, b.exclusiveMaximum].filter((x): x is number => x !== undefined);
  return vals.length > 0 ? Math.min(...vals) : undefined;
}

function valueFitsBranch(v: Json, cb: Branch): boolean {
  if (cb.kind !== 'any' && !kindFits(kindOfValue(v), cb.kind)) return false;
  if (cb.values && !cb.values.some((x) => jsonEqual(x, v))) return false;
  const b = cb.bounds;
  if (typeof v === 'number') {
    if (b.minimum !== undefined && v < b.minimum) return false;
    if (b.maximum !== undefined && v > b.maximum) return false;
    if (b.exclusiveMinimum !== undefined && v <= b.exclusiveMinimum) return false;
    if (b.exclusiveMaximum !== undefined && v >= b.exclusiveMaximum) return false;
  }
  if (typeof v === 'string') {
    const n = [...v].length;
    if (b.minLength !== undefined && n < b.minLength) return false;
    if (b.maxLength !== undefined && n > b.maxLength) return false;
  }
  // object and array constants against structure: accept only when the branch has no structure
  if (v !== null && typeof v === 'object') return !cb.items && !cb.props && !cb.required && cb.additional === undefined;
  return true;
}

function kindOfValue(v: Json): Kind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v as 'string' | 'boolean' | 'object';
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

// ---- normalisation ----------------------------------------------------------------------------

const cache = new WeakMap<object, Branch[]>();

/** A schema as a union of single-type branches. `true`/`{}` is one `any` branch; `false`, none. */
function branches(s: S): Branch[] {
  const resolved = deref(s);
  if (resolved === undefined) return [{ kind: 'any', opaque: ['$ref'], bounds: {} }];
  const { node, root } = resolved;
  if (node === true || node === undefined) return [{ kind: 'any', opaque: [], bounds: {} }];
  if (node === false) return [];
  if (!isPlainObject(node)) return [{ kind: 'any', opaque: [], bounds: {} }];
  const hit = cache.get(node);
  if (hit) return hit;
  const result = build(node, root);
  cache.set(node, result);
  return result;
}

function deref(s: S): S | undefined {
  let cur = s;
  for (let i = 0; i < 100; i++) {
    if (!isPlainObject(cur.node) || typeof cur.node['$ref'] !== 'string') return cur;
    const ref = cur.node['$ref'];
    // a $ref beside other keywords (2020-12) is an intersection: only the plain form is followed
    if (Object.keys(cur.node).some((k) => k !== '$ref' && !ANNOTATIONS.has(k))) return undefined;
    const target = resolvePointer(cur.root, ref);
    if (target === undefined) return undefined;
    cur = { node: target, root: cur.root };
  }
  return undefined;
}

function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  const pointer = decodeURIComponent(ref.slice(1));
  if (pointer === '') return root;
  if (!pointer.startsWith('/')) return undefined;
  let v: unknown = root;
  for (const raw of pointer.slice(1).split('/')) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isPlainObject(v) && !Array.isArray(v)) return undefined;
    if (!Object.prototype.hasOwnProperty.call(v, seg)) return undefined;
    v = (v as Record<string, unknown>)[seg];
  }
  return v;
}

function build(node: Record<string, unknown>, root: unknown): Branch[] {
  const opaque: string[] = [];
  for (const k of Object.keys(node)) if (OPAQUE.has(k)) opaque.push(k);
  if (Array.isArray(node['items'])) opaque.push('items');
  if (typeof node['$ref'] === 'string') opaque.push('$ref'); // a $ref beside other keywords
  const bounds: Bounds = {};
  for (const k of BOUND_KEYS) {
    const v = node[k];
    if (typeof v === 'number') bounds[k] = v;
    else if (typeof v === 'boolean' && (k === 'exclusiveMinimum' || k === 'exclusiveMaximum')) opaque.push(k); // draft-04 form
  }
  // the JSON types this node allows
  let kinds: Set<Kind> | undefined;
  const t = node['type'];
  if (typeof t === 'string') kinds = new Set(expandKind(t));
  else if (Array.isArray(t)) kinds = new Set(t.flatMap((x) => (typeof x === 'string' ? expandKind(x) : [])));
  let values: Json[] | undefined;
  if (Array.isArray(node['enum'])) values = node['enum'] as Json[];
  if ('const' in node) values = values ? values.filter((v) => jsonEqual(v, node['const'])) : [node['const'] as Json];

  const base: Branch[] = [];
  const props = isPlainObject(node['properties']) ? new Map(Object.entries(node['properties']).map(([k, v]) => [k, { node: v, root }] as const)) : undefined;
  const required = Array.isArray(node['required']) ? new Set(node['required'].filter((x): x is string => typeof x === 'string')) : undefined;
  const ap = node['additionalProperties'];
  const additional = ap === undefined || ap === true ? undefined : ap === false ? false : { node: ap, root };
  const items = node['items'] !== undefined && !Array.isArray(node['items']) ? { node: node['items'], root } : undefined;
  const shared = { opaque, bounds };
  if (values) {
    const byKind = new Map<Kind, Json[]>();
    for (const v of values) {
      const k = kindOfValue(v);
      const kk: Kind = k === 'integer' ? 'number' : k;
      if (kinds && !kinds.has(k) && !(k === 'integer' && kinds.has('number'))) continue;
      byKind.set(kk, [...(byKind.get(kk) ?? []), v]);
    }
    for (const [kind, vs] of byKind) base.push({ kind, values: vs, ...shared });
  } else if (kinds) {
    for (const kind of KINDS) {
      if (!kinds.has(kind) || (kind === 'integer' && kinds.has('number'))) continue;
      const b: Branch = { kind, ...shared };
      if (kind === 'array' && items) b.items = items;
      if (kind === 'object') {
        if (props) b.props = props;
        if (required) b.required = required;
        if (additional !== undefined) b.additional = additional;
      }
      base.push(b);
    }
  } else if (props || required || additional !== undefined || items) {
    // structure without `type`: non-objects (non-arrays) pass untouched, so the node allows anything else too
    base.push({ kind: 'object', ...shared, ...(props ? { props } : {}), ...(required ? { required } : {}), ...(additional !== undefined ? { additional } : {}) });
    if (items) base.push({ kind: 'array', ...shared, items });
    for (const kind of KINDS) if (kind !== 'object' && kind !== 'array' && kind !== 'integer') base.push({ kind, ...shared });
    if (!items && !base.some((b) => b.kind === 'array')) base.push({ kind: 'array', ...shared });
  } else base.push({ kind: 'any', ...shared });

  const alts = Array.isArray(node['anyOf']) ? node['anyOf'] : Array.isArray(node['oneOf']) ? node['oneOf'] : undefined;
  if (!alts) return base;
  const altBranches = alts.flatMap((a) => branches({ node: a, root }).map((b) => ({ ...b })));
  if (Array.isArray(node['oneOf'])) {
    // oneOf is anyOf when no value can match two alternatives: decided here by disjoint JSON types
    const ks = altBranches.map((b) => (b.kind === 'integer' ? 'number' : b.kind));
    if (ks.includes('any') || new Set(ks).size !== ks.length) for (const b of altBranches) b.opaque = [...b.opaque, 'oneOf'];
  }
  if (base.length === 1 && base[0]!.kind === 'any' && !base[0]!.values) {
    return altBranches.map((b) => ({ ...b, opaque: [...b.opaque, ...opaque], bounds: { ...bounds, ...b.bounds } }));
  }
  // both a type and alternatives: keep alternatives whose type the base allows (a simple intersection)
  const out: Branch[] = [];
  for (const a of altBranches) {
    const match = base.find((b) => a.kind === 'any' || b.kind === 'any' || kindFits(a.kind, b.kind) || kindFits(b.kind, a.kind));
    if (!match) continue;
    if (a.kind === 'any') out.push({ ...match, opaque: [...match.opaque, ...a.opaque] });
    else if (match.props || match.items || match.values) out.push({ ...match, opaque: [...match.opaque, 'anyOf'] });
    else out.push({ ...a, opaque: [...a.opaque, ...opaque], bounds: { ...bounds, ...a.bounds } });
  }
  return out;
}

function expandKind(t: string): Kind[] {
  return (KINDS as readonly string[]).includes(t) ? [t as Kind] : [];
}

function describe(b: Branch): string {
  if (b.values) return b.values.map((v) => JSON.stringify(v)).join(' | ');
  if (b.kind === 'any') return 'any value';
  if (b.kind === 'integer') return 'an integer';
  if (b.kind === 'object') return 'an object';
  if (b.kind === 'array') return 'an array';
  return b.kind === 'null' ? 'null' : `a ${b.kind}`;
}

function describeS(s: S): string {
  const bs = branches(s);
  return bs.length === 0 ? 'nothing' : bs.map(describe).join(' or ');
}

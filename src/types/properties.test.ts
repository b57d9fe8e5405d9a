/**
 * Property tests of the type language against an oracle of our own. Random `types` blocks are generated
 * as a small AST (records, enums, aliases, arrays in all three syntaxes, nullables in both syntaxes,
 * optional fields, inline records, named types that refer to each other and to themselves), written out
 * as declarations and compiled by the registry. Then:
 *
 *   (a) a value built from the AST to fit always validates (check true, issues empty);
 *   (b) a mutated value (a leaf of a kind the type does not accept, a required field deleted, a NaN
 *       replacing or added to something, an enum value swapped for a non-member) never validates, and
 *       every issue points at or above the mutation;
 *   (c) check and issues agree on arbitrary values, JSON or not.
 *
 * Recursion is generated so that every type has finite values: a declaration refers to itself or to a
 * later one only below a guard (an array, a nullable, an optional field), so every cycle can be cut.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { CompiledType } from './api.js';
import { compileTypes } from './registry.js';

type Prim = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'any';
type Scalar = string | number | boolean;
type T =
  | { k: 'prim'; name: Prim }
  | { k: 'ref'; i: number }
  | { k: 'array'; el: T; syntax: 'suffix' | 'generic' | 'items' }
  | { k: 'nullable'; t: T; syntax: 'pipe' | 'flag' }
  | { k: 'enum'; values: Scalar[] }
  | { k: 'record'; fields: Field[] };
interface Field {
  name: string;
  t: T;
  optional: boolean;
}
interface Case {
  /** N0..Nn-1, then Root (always a record) at index n. */
  decls: T[];
}

// ---------------------------------------------------------------- types

const PRIMS: Prim[] = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'any'];
/** Field names: prototype names, characters that JSON Pointer escapes, the empty name. */
const FIELD_NAMES = ['a', 'b', 'source', 'constructor', 'toString', 'valueOf', '__proto__', 'a/b', 'm~n', 'x y', ''];
/** A declaration's mapping is always a record, so it may have a field named `type`; an inline record may not. */
const DECL_FIELD_NAMES = [...FIELD_NAMES, 'type'];

const stringable = (t: T): boolean =>
  t.k === 'prim' || t.k === 'ref' || (t.k === 'array' && t.syntax !== 'items' && stringable(t.el)) || (t.k === 'nullable' && t.syntax === 'pipe' && stringable(t.t));

const scalar: fc.Arbitrary<Scalar> = fc.oneof(fc.string({ maxLength: 4 }), fc.integer({ min: -3, max: 3 }), fc.double({ min: -2, max: 2, noNaN: true }), fc.boolean());
const enumArb: fc.Arbitrary<T> = fc.uniqueArray(scalar, { minLength: 1, maxLength: 4, comparator: 'SameValueZero' }).map((values): T => ({ k: 'enum', values }));

interface Scope {
  /** This declaration's index: names below it may be used anywhere. */
  i: number;
  /** Number of declarations: every name may be used below a guard. */
  n: number;
}

/** A leaf: a primitive, or a name that may be used here. */
function leaf(s: Scope, guarded: boolean): fc.Arbitrary<T> {
  const max = guarded ? s.n - 1 : s.i - 1;
  const prim = fc.constantFrom(...PRIMS).map((name): T => ({ k: 'prim', name }));
  return max >= 0 ? fc.oneof(prim, fc.nat(max).map((i): T => ({ k: 'ref', i }))) : prim;
}

/** A type string: names, `T[]`, `array<T>`, `T | null`. `top` marks a declaration's own body (a nullable there is an alias, no guard). */
function stringType(s: Scope, guarded: boolean, depth: number, top = false): fc.Arbitrary<T> {
  if (depth >= 3) return leaf(s, guarded);
  return fc.oneof(
    { weight: 3, arbitrary: leaf(s, guarded) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constant(null).chain(() => stringType(s, true, depth + 1)),
          fc.constantFrom('suffix' as const, 'generic' as const),
        )
        .map(([el, syntax]): T => ({ k: 'array', el, syntax: el.k === 'nullable' ? 'generic' : syntax })),
    },
    {
      weight: 1,
      arbitrary: fc
        .constant(null)
        .chain(() => stringType(s, guarded || !top, depth + 1).filter((t) => t.k !== 'nullable'))
        .map((t): T => ({ k: 'nullable', t, syntax: 'pipe' })),
    },
  );
}

/** Any type in a field or element position. */
function anyType(s: Scope, guarded: boolean, depth: number, opts: { record: boolean; top?: boolean } = { record: true }): fc.Arbitrary<T> {
  const top = opts.top ?? false;
  const choices: fc.WeightedArbitrary<T>[] = [
    { weight: 4, arbitrary: stringType(s, guarded, depth, top) },
    { weight: 1, arbitrary: enumArb },
  ];
  if (depth < 3) {
    // `{type: array, items: T}`: the element may be anything, an inline record included
    choices.push({ weight: 1, arbitrary: fc.constant(null).chain(() => anyType(s, true, depth + 1)).map((el): T => ({ k: 'array', el, syntax: 'items' })) });
    // `{type: T, nullable: true}`
    choices.push({
      weight: 1,
      arbitrary: fc
        .constant(null)
        .chain(() => stringType(s, guarded || !top, depth + 1).filter((t) => t.k !== 'nullable'))
        .map((t): T => ({ k: 'nullable', t, syntax: 'flag' })),
    });
    if (opts.record) choices.push({ weight: 1, arbitrary: fc.constant(null).chain(() => recordType(s, guarded, depth + 1, FIELD_NAMES)) });
  }
  return fc.oneof(...choices);
}

function recordType(s: Scope, guarded: boolean, depth: number, names: string[]): fc.Arbitrary<T> {
  const field = fc
    .tuple(fc.constantFrom(...names), fc.boolean())
    // an optional field is a guard; it is written `{type: T, required: false}`, so it is not an inline record
    .chain(([name, optional]) => anyType(s, guarded || optional, depth, { record: !optional }).map((t): Field => ({ name, t, optional })));
  return fc.uniqueArray(field, { minLength: 0, maxLength: 4, selector: (f) => f.name }).map((fields): T => ({ k: 'record', fields }));
}

function declaration(s: Scope): fc.Arbitrary<T> {
  return fc.oneof(
    { weight: 3, arbitrary: recordType(s, false, 0, DECL_FIELD_NAMES) },
    { weight: 1, arbitrary: enumArb },
    { weight: 2, arbitrary: anyType(s, false, 0, { record: false, top: true }) },
  );
}

const cases: fc.Arbitrary<Case> = fc.integer({ min: 0, max: 4 }).chain((n) =>
  fc
    // Root (index n) may use every name anywhere: they all come before it
    .tuple(...Array.from({ length: n }, (_, i) => declaration({ i, n })), recordType({ i: n, n }, false, 0, DECL_FIELD_NAMES))
    .map((decls): Case => ({ decls })),
);

// ---------------------------------------------------------------- writing declarations

const name = (i: number, c: Case) => (i === c.decls.length - 1 ? 'Root' : `N${i}`);

function text(t: T, c: Case): string {
  switch (t.k) {
    case 'prim':
      return t.name;
    case 'ref':
      return name(t.i, c);
    case 'array':
      return t.syntax === 'suffix' ? `${text(t.el, c)}[]` : `array<${text(t.el, c)}>`;
    case 'nullable':
      return `${text(t.t, c)} | null`;
    default:
      throw new Error(`not a type string: ${t.k}`);
  }
}

function raw(t: T, c: Case): unknown {
  if (stringable(t)) return text(t, c);
  switch (t.k) {
    case 'enum':
      return { enum: t.values };
    case 'record':
      return Object.fromEntries(t.fields.map((f) => [f.name, f.optional ? optionalRaw(f.t, c) : raw(f.t, c)]));
    case 'array':
      return { type: 'array', items: raw(t.el, c) };
    case 'nullable':
      return { type: text(t.t, c), nullable: true };
    default:
      throw new Error('unreachable');
  }
}

function optionalRaw(t: T, c: Case): unknown {
  const r = raw(t, c);
  if (typeof r === 'string') return { type: r, required: false };
  return { ...(r as object), required: false };
}

function block(c: Case): Record<string, unknown> {
  return Object.fromEntries(c.decls.map((d, i) => [name(i, c), raw(d, c)]));
}

function compile(c: Case): CompiledType {
  const { registry, diagnostics } = compileTypes(block(c), ['types']);
  expect(diagnostics).toEqual([]);
  const r = registry.compile('Root', ['x']);
  expect(r.diagnostics).toEqual([]);
  return r.type!;
}

// ---------------------------------------------------------------- values that fit

/** Below this depth every guard takes its smallest value: recursion ends. */
const LIMIT = 4;
const ABSENT = Symbol('absent');

/** `o[k] = v`, as an own property even for `__proto__` (as JSON.parse does). */
function setOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

function fit(t: T, c: Case, depth: number): fc.Arbitrary<unknown> {
  switch (t.k) {
    case 'prim':
      switch (t.name) {
        case 'string':
          return fc.string({ maxLength: 5 });
        case 'number':
          return fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constantFrom(-0, 1e21, Number.MAX_VALUE));
        case 'integer':
          return fc.oneof(fc.integer(), fc.constantFrom(-0, 2 ** 53, -(2 ** 60), 1e21));
        case 'boolean':
          return fc.boolean();
        case 'object':
          return fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 });
        case 'array':
          return fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 });
        case 'any':
          return fc.jsonValue({ maxDepth: 2 });
      }
      throw new Error('unreachable');
    case 'ref':
      return fc.constant(null).chain(() => fit(c.decls[t.i]!, c, depth + 1));
    case 'array':
      return depth > LIMIT ? fc.constant([]) : fc.array(fit(t.el, c, depth + 1), { maxLength: 3 });
    case 'nullable':
      return depth > LIMIT ? fc.constant(null) : fc.oneof(fc.constant(null), fit(t.t, c, depth + 1));
    case 'enum':
      return fc.constantFrom(...t.values);
    case 'record': {
      const parts = t.fields.map((f) => {
        const v = fit(f.t, c, depth + 1);
        return f.optional ? (depth > LIMIT ? fc.constant<unknown>(ABSENT) : fc.option(v, { nil: ABSENT })) : v;
      });
      return fc.tuple(...parts).map((vs) => {
        const o: Record<string, unknown> = {};
        t.fields.forEach((f, k) => {
          if (vs[k] !== ABSENT) setOwn(o, f.name, vs[k]);
        });
        return o;
      });
    }
  }
}

const fitting = cases.chain((c) => fit(c.decls[c.decls.length - 1]!, c, 0).map((v) => ({ c, v })));

// ---------------------------------------------------------------- the oracle for mutations

type Kind = 'string' | 'number' | 'boolean' | 'null' | 'object' | 'array';
const KINDS: Kind[] = ['string', 'number', 'boolean', 'null', 'object', 'array'];
const SAMPLE_OF_KIND: Record<Kind, unknown> = { string: 'mutant', number: 2.5, boolean: false, null: null, object: {}, array: [] };

function kindOf(v: unknown): Kind {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : (typeof v as Kind);
}

/** The JSON kinds a type can accept at all. */
function kinds(t: T, c: Case): Set<Kind> {
  switch (t.k) {
    case 'prim':
      if (t.name === 'any') return new Set(KINDS);
      return new Set([t.name === 'integer' ? 'number' : t.name]);
    case 'ref':
      return kinds(c.decls[t.i]!, c); // aliases are acyclic: this ends
    case 'array':
      return new Set(['array']);
    case 'nullable':
      return new Set([...kinds(t.t, c), 'null']);
    case 'enum':
      return new Set(t.values.map(kindOf));
    case 'record':
      return new Set(['object']);
  }
}

/** Follows names and (for non-null values) nullables to the structure that describes a value. */
function structure(t: T, v: unknown, c: Case): T {
  let s = t;
  for (;;) {
    if (s.k === 'ref') s = c.decls[s.i]!;
    else if (s.k === 'nullable' && v !== null) s = s.t;
    else return s;
  }
}

type Key = string | number;
interface Site {
  path: Key[];
  t: T;
  v: unknown;
}

const ANY: T = { k: 'prim', name: 'any' };

function sites(t: T, v: unknown, c: Case, path: Key[] = [], out: Site[] = []): Site[] {
  out.push({ path, t, v });
  const s = structure(t, v, c);
  if (s.k === 'record' && kindOf(v) === 'object') {
    const o = v as Record<string, unknown>;
    for (const f of s.fields) if (Object.prototype.hasOwnProperty.call(o, f.name)) sites(f.t, o[f.name], c, [...path, f.name], out);
  } else if (s.k === 'array' && Array.isArray(v)) {
    v.forEach((e, i) => sites(s.el, e, c, [...path, i], out));
  } else if (s.k === 'prim' && (s.name === 'any' || s.name === 'object' || s.name === 'array') && v !== null && typeof v === 'object') {
    for (const [k, e] of Object.entries(v)) sites(ANY, e, c, [...path, Array.isArray(v) ? Number(k) : k], out);
  }
  return out;
}

const pointer = (path: Key[]) => path.map((k) => `/${String(k).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

function clone(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clone);
  if (v !== null && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v)) setOwn(o, k, clone((v as Record<string, unknown>)[k]));
    return o;
  }
  return v;
}

/** A copy of `root` with the value at `path` replaced by `f(old)` (or deleted when f returns ABSENT). */
function update(root: unknown, path: Key[], f: (old: unknown) => unknown): unknown {
  const copy = clone(root);
  if (path.length === 0) return f(copy);
  let parent = copy as Record<Key, unknown>;
  for (const k of path.slice(0, -1)) parent = parent[k] as Record<Key, unknown>;
  const last = path[path.length - 1]!;
  const nv = f(parent[last]);
  if (nv === ABSENT) delete parent[last];
  else if (Array.isArray(parent)) parent[last as number] = nv;
  else setOwn(parent, String(last), nv);
  return copy;
}

interface Mutation {
  what: string;
  value: unknown;
  at: string;
}

const NOT_JSON: unknown[] = [NaN, Infinity, -Infinity, new Date(0), () => 1, 10n];

/** Every mutation that must make a fitting value fail, for one site. */
function mutationsAt(site: Site, root: unknown, c: Case): Mutation[] {
  const out: Mutation[] = [];
  const at = pointer(site.path);
  const accepted = kinds(site.t, c);
  // a leaf of a kind the type does not accept
  for (const k of KINDS) if (!accepted.has(k)) out.push({ what: `kind ${k}`, value: update(root, site.path, () => SAMPLE_OF_KIND[k]), at });
  // a NaN (or another non-JSON value) in its place
  for (const bad of NOT_JSON) out.push({ what: `not JSON ${String(bad)}`, value: update(root, site.path, () => bad), at });
  const s = structure(site.t, site.v, c);
  // a fraction where an integer is expected
  if (s.k === 'prim' && s.name === 'integer') out.push({ what: 'fraction', value: update(root, site.path, () => 0.5), at });
  if (site.v !== null && typeof site.v === 'object') {
    if (Array.isArray(site.v)) {
      // a NaN pushed onto an array
      const len = site.v.length;
      out.push({ what: 'push NaN', value: update(root, site.path, (a) => [...(a as unknown[]), NaN]), at: `${at}/${len}` });
    } else {
      // a NaN in an extra member (records are open, but only to JSON)
      const key = 'zz_extra';
      if (!Object.prototype.hasOwnProperty.call(site.v, key))
        out.push({ what: 'extra NaN', value: update(root, site.path, (o) => Object.assign(clone(o) as object, { [key]: NaN })), at: `${at}/${key}` });
      // a required field deleted
      if (s.k === 'record')
        for (const f of s.fields)
          if (!f.optional && Object.prototype.hasOwnProperty.call(site.v, f.name)) out.push({ what: `delete ${f.name}`, value: update(root, [...site.path, f.name], () => ABSENT), at: pointer([...site.path, f.name]) });
    }
  }
  // an enum value swapped for a non-member of the same kind
  if (s.k === 'enum') {
    const values = s.values;
    const candidates: unknown[] = [`${String(site.v)}☃`, 1234.5, -999, !site.v, true, false, 'zz'];
    const swap = candidates.find((x) => kindOf(x) === kindOf(site.v) && !values.some((m) => Object.is(m, x) || m === x));
    if (swap !== undefined) out.push({ what: `enum ${JSON.stringify(swap)}`, value: update(root, site.path, () => swap), at });
  }
  return out;
}

const isPrefix = (p: string, of: string) => of === p || of.startsWith(`${p}/`);

/** `BATON_PROP_SCALE=50 npx vitest run src/types/properties.test.ts` for a long hunt. */
const SCALE = Number(process.env['BATON_PROP_SCALE'] ?? '1');
const runs = (n: number) => ({ numRuns: Math.max(1, Math.round(n * SCALE)) });

// ---------------------------------------------------------------- properties

describe('type language properties', () => {
  test('(a) a value built to fit always validates; so does sample(); the schema is valid 2020-12', () => {
    const meta = new Ajv2020({ strict: true });
    fc.assert(
      fc.property(fitting, ({ c, v }) => {
        const type = compile(c);
        expect(type.issues(v)).toEqual([]);
        expect(type.check(v)).toBe(true);
        const s = type.sample();
        expect(type.issues(s)).toEqual([]);
        expect(type.check(s)).toBe(true);
        expect(meta.validateSchema(type.jsonSchema())).toBe(true);
      }),
      runs(200),
    );
  });

  test('(b) a mutated value never validates, and every issue points at or above the mutation', () => {
    const arb = fitting.chain(({ c, v }) => {
      const all = sites(c.decls[c.decls.length - 1]!, v, c).flatMap((s) => mutationsAt(s, v, c));
      return fc.constantFrom(...all).map((m) => ({ c, v, m }));
    });
    fc.assert(
      fc.property(arb, ({ c, m }) => {
        const type = compile(c);
        const issues = type.issues(m.value);
        expect(type.check(m.value), m.what).toBe(false);
        expect(issues.length, m.what).toBeGreaterThan(0);
        for (const i of issues) expect(isPrefix(i.pointer, m.at), `${m.what}: issue at ${i.pointer}, mutation at ${m.at}`).toBe(true);
      }),
      runs(300),
    );
  });

  test('(b) each kind of mutation, at every site of one value', () => {
    // exhaustive over the sites of a few values: every mutation of every site must fail
    fc.assert(
      fc.property(fitting, ({ c, v }) => {
        const type = compile(c);
        for (const s of sites(c.decls[c.decls.length - 1]!, v, c)) {
          for (const m of mutationsAt(s, v, c)) {
            expect(type.check(m.value), m.what).toBe(false);
            const issues = type.issues(m.value);
            expect(issues.length, m.what).toBeGreaterThan(0);
            expect(issues.every((i) => isPrefix(i.pointer, m.at)), `${m.what} at ${m.at}: ${JSON.stringify(issues.map((i) => i.pointer))}`).toBe(true);
          }
        }
      }),
      runs(40),
    );
  });

  const anything = fc.anything({
    maxDepth: 3,
    withBoxedValues: true,
    withMap: true,
    withSet: true,
    withObjectString: true,
    withNullPrototype: true,
    withBigInt: true,
    withDate: true,
    withTypedArray: true,
    withSparseArray: true,
    withUnicodeString: true,
  });

  test('(c) check and issues agree on arbitrary JSON and non-JSON values', () => {
    fc.assert(
      fc.property(cases, fc.oneof(fc.jsonValue({ maxDepth: 3 }), anything), (c, v) => {
        const type = compile(c);
        expect(type.check(v)).toBe(type.issues(v).length === 0);
      }),
      runs(200),
    );
  });

  test('(c) check and issues agree on fitting values with one subtree replaced by anything', () => {
    const arb = fitting.chain(({ c, v }) => fc.tuple(fc.constantFrom(...sites(c.decls[c.decls.length - 1]!, v, c)), fc.oneof(fc.jsonValue({ maxDepth: 2 }), anything)).map(([s, x]) => ({ c, v: update(v, s.path, () => x) })));
    fc.assert(
      fc.property(arb, ({ c, v }) => {
        const type = compile(c);
        expect(type.check(v)).toBe(type.issues(v).length === 0);
      }),
      runs(250),
    );
  });
});

/**
 * Property tests of the type language, against an independent oracle: types are generated as a small
 * AST of our own, written out as `types` declarations, compiled by the registry; values are built
 * from the AST to fit (they must always validate) and then mutated at a known place (they must never
 * validate, and the issues must point at or above the mutation).
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { Json } from '../core/json.js';
import { compileTypes } from './registry.js';

type T =
  | { k: 'prim'; name: 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'any' }
  | { k: 'named'; i: number }
  | { k: 'array'; el: T; syntax: 'suffix' | 'generic' }
  | { k: 'nullable'; t: T }
  | { k: 'enum'; values: (string | number | boolean)[] }
  | { k: 'record'; fields: { name: string; t: T; optional: boolean }[] };

/** A type expression that can be written as a string (records and enums only as named types). */
const stringable = (names: number): fc.Arbitrary<T> =>
  fc.letrec<{ t: T }>((tie) => ({
    t: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom('string', 'number', 'integer', 'boolean', 'object', 'array', 'any').map((name): T => ({ k: 'prim', name })),
      ...(names > 0 ? [fc.nat(names - 1).map((i): T => ({ k: 'named', i }))] : []),
      fc.record({ el: tie('t'), syntax: fc.constantFrom('suffix' as const, 'generic' as const) }).map(({ el, syntax }): T => ({ k: 'array', el, syntax })),
    ),
  })).t;

function text(t: T): string {
  switch (t.k) {
    case 'prim':
      return t.name;
    case 'named':
      return `N${t.i}`;
    case 'array':
      return t.syntax === 'suffix' && t.el.k !== 'nullable' ? `${text(t.el)}[]` : `array<${text(t.el)}>`;
    case 'nullable':
      return `${text(t.t)} | null`;
    default:
      throw new Error('not stringable');
  }
}

// `type` is a field name here on purpose (a declaration's mapping is a record); `items`/`nullable` next to
// `type` would make a wrapper (documented), so they are left out
const fieldName = fc.constantFrom('a', 'b', 'source', 'confidence', 'notes', 'type', 'level', 'x_1');

const fieldType = (names: number): fc.Arbitrary<T> =>
  fc.oneof(
    stringable(names),
    stringable(names).map((t): T => ({ k: 'nullable', t })),
    fc.uniqueArray(fc.oneof(fc.string({ minLength: 1, maxLength: 5 }), fc.integer({ min: -5, max: 5 }), fc.boolean()), { minLength: 1, maxLength: 4 }).map((values): T => ({ k: 'enum', values })),
  );

const recordOf = (names: number): fc.Arbitrary<T> =>
  fc.uniqueArray(fc.record({ name: fieldName, t: fieldType(names), optional: fc.boolean() }), { minLength: 1, maxLength: 4, selector: (f) => f.name }).map((fields): T => ({ k: 'record', fields }));

/** Named declarations N0..Nn-1; Ni may use Nj for j < i (recursion through records is tested elsewhere). */
const declarations: fc.Arbitrary<T[]> = fc.integer({ min: 1, max: 4 }).chain((n) =>
  fc.tuple(...Array.from({ length: n }, (_, i) => fc.oneof(recordOf(i), i > 0 ? stringable(i) : recordOf(0), fieldType(i).filter((t) => t.k === 'enum')))),
);

function raw(t: T): unknown {
  switch (t.k) {
    case 'enum':
      return { enum: t.values };
    case 'record':
      return Object.fromEntries(
        t.fields.map((f) => [f.name, !f.optional ? raw(f.t) : f.t.k === 'enum' ? { enum: f.t.values, required: false } : { type: rawString(f.t), required: false }]),
      );
    case 'nullable':
      return `${text(t.t)} | null`;
    default:
      return text(t);
  }
}

/** Optional fields use the wrapper form, whose `type` must be a string: enums go through `enum:` instead. */
function rawString(t: T): string {
  if (t.k === 'enum' || t.k === 'record') throw new Error('unreachable');
  return t.k === 'nullable' ? `${text(t.t)} | null` : text(t);
}

function fit(t: T, decls: T[], depth = 0): fc.Arbitrary<Json> {
  switch (t.k) {
    case 'prim':
      switch (t.name) {
        case 'string':
          return fc.string({ maxLength: 6 });
        case 'number':
          return fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer());
        case 'integer':
          return fc.integer();
        case 'boolean':
          return fc.boolean();
        case 'object':
          return fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }) as fc.Arbitrary<Json>;
        case 'array':
          return fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }) as fc.Arbitrary<Json>;
        case 'any':
          return fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>;
      }
      break;
    case 'named':
      return fit(decls[t.i]!, decls, depth + 1);
    case 'array':
      return fc.array(fit(t.el, decls, depth + 1), { maxLength: depth > 3 ? 0 : 3 });
    case 'nullable':
      return fc.oneof(fc.constant(null), fit(t.t, decls, depth + 1));
    case 'enum':
      return fc.constantFrom(...t.values);
    case 'record': {
      const shape: Record<string, fc.Arbitrary<Json>> = {};
      for (const f of t.fields) shape[f.name] = fit(f.t, decls, depth + 1);
      const required = t.fields.filter((f) => !f.optional).map((f) => f.name);
      const rec: fc.Arbitrary<Json> = fc.record(shape, { requiredKeys: required });
      return rec;
    }
  }
  throw new Error('unreachable');
}

/** A value of the wrong kind for t (never fits), or undefined when t accepts everything. */
function wrong(t: T, decls: T[]): fc.Arbitrary<unknown> | undefined {
  switch (t.k) {
    case 'prim':
      switch (t.name) {
        case 'string':
          return fc.constantFrom(1, true, null, [], {}, NaN);
        case 'number':
          return fc.constantFrom('5', true, null, [], {}, NaN, Infinity);
        case 'integer':
          return fc.constantFrom(1.5, '1', true, null, NaN);
        case 'boolean':
          return fc.constantFrom(1, 0, 'true', null, []);
        case 'object':
          return fc.constantFrom([], 'x', 1, null, new Date(0));
        case 'array':
          return fc.constantFrom({}, 'x', 1, null);
        case 'any':
          return fc.constantFrom(NaN, Infinity, () => 1, new Date(0), Symbol('s'));
      }
      break;
    case 'named':
      return wrong(decls[t.i]!, decls);
    case 'array':
      return fc.oneof(fc.constantFrom({}, 'x', 1, null), ...[wrong(t.el, decls)].filter((a) => a !== undefined).map((a) => a.map((v) => [v])));
    case 'nullable': {
      const w = wrong(t.t, decls);
      return w?.filter((v) => v !== null);
    }
    case 'enum':
      return fc.constantFrom('not-a-member-☃', 3.25, null, []);
    case 'record': {
      const req = t.fields.filter((f) => !f.optional);
      if (req.length > 0) return fc.constantFrom('x', 1, null, []);
      return fc.constantFrom('x', 1, [], null);
    }
  }
  return undefined;
}

interface Case {
  decls: T[];
  root: T; // a record
}

const cases: fc.Arbitrary<Case> = declarations.chain((decls) => recordOf(decls.length).map((root) => ({ decls, root })));

function compile(c: Case) {
  const block: Record<string, unknown> = {};
  c.decls.forEach((d, i) => (block[`N${i}`] = raw(d)));
  block['Root'] = raw(c.root);
  const { registry, diagnostics } = compileTypes(block, ['types']);
  expect(diagnostics).toEqual([]);
  const r = registry.compile('Root', ['x']);
  expect(r.diagnostics).toEqual([]);
  return r.type!;
}

describe('type language properties', () => {
  test('a value built to fit always validates (check and issues agree)', () => {
    fc.assert(
      fc.property(
        cases.chain((c) => fit(c.root, c.decls).map((v) => ({ c, v }))),
        ({ c, v }) => {
          const type = compile(c);
          expect(type.issues(v)).toEqual([]);
          expect(type.check(v)).toBe(true);
          expect(type.check(type.sample())).toBe(true);
        },
      ),
      { numRuns: 250 },
    );
  });

  test('a value mutated at one field never validates, and the issue points at or above the mutation', () => {
    const arb = cases.chain((c) => {
      const f = c.root.k === 'record' ? c.root.fields : [];
      return fc.nat(f.length - 1).chain((k) => {
        const field = f[k]!;
        const bad = wrong(field.t, c.decls);
        return fc.tuple(fit(c.root, c.decls), bad ?? fc.constant(NaN)).map(([v, w]) => ({ c, v: { ...(v as object), [field.name]: w }, at: `/${field.name}` }));
      });
    });
    fc.assert(
      fc.property(arb, ({ c, v, at }) => {
        const type = compile(c);
        expect(type.check(v)).toBe(false);
        const issues = type.issues(v);
        expect(issues.length).toBeGreaterThan(0);
        expect(issues.some((i) => at === i.pointer || at.startsWith(`${i.pointer}/`) || i.pointer.startsWith(`${at}/`))).toBe(true);
      }),
      { numRuns: 250 },
    );
  });

  test('deleting a required field never validates and is reported as required at its pointer', () => {
    const arb = cases
      .filter((c) => c.root.k === 'record' && c.root.fields.some((f) => !f.optional))
      .chain((c) => fit(c.root, c.decls).map((v) => ({ c, v })));
    fc.assert(
      fc.property(arb, ({ c, v }) => {
        const field = (c.root as Extract<T, { k: 'record' }>).fields.find((f) => !f.optional)!;
        const copy = { ...(v as Record<string, Json>) };
        delete copy[field.name];
        const type = compile(c);
        expect(type.check(copy)).toBe(false);
        expect(type.issues(copy)).toContainEqual(expect.objectContaining({ pointer: `/${field.name}`, kind: 'required' }));
      }),
      { numRuns: 150 },
    );
  });

  test('check and issues agree on arbitrary values', () => {
    fc.assert(
      fc.property(cases, fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.anything({ maxDepth: 2 })), (c, v) => {
        const type = compile(c);
        expect(type.check(v)).toBe(type.issues(v).length === 0);
      }),
      { numRuns: 300 },
    );
  });
});

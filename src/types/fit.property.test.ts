/**
 * Property tests of the type language, against an independent oracle: types are generated as a small
 * AST of our own, written out as `types` declarations, compiled by the registry; values are built
 * from the AST to fit (they must always validate) and then mutated at a known place (they must never
 * validate, and the issues must point at or above the mutation).
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { Json } from '../core/json.js';
import { ajv2020 } from '../core/ajv.js';
import { isJsonValue } from './compiled.js';
import { compileTypes } from './registry.js';
import { declarations, fit, raw, recordOf, type T } from '../../test/helpers/type-arbitraries.js';

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

  // the fast check was ajv, compiled from the type's JSON Schema; the checker that replaced it must answer
  // as ajv did (on JSON values, where ajv's answer is defined) for fitting, mutated and arbitrary values
  test('check answers as ajv does on the type\'s JSON Schema', () => {
    const ajv = new (ajv2020())({ strict: true, allErrors: false, validateSchema: false, strictNumbers: true, addUsedSchema: false, ownProperties: true });
    const near = cases.chain((c) => {
      const f = c.root.k === 'record' ? c.root.fields : [];
      return fc.tuple(fit(c.root, c.decls), fc.nat(Math.max(0, f.length - 1)), fc.jsonValue({ maxDepth: 2 }), fc.boolean()).map(([v, k, w, mutate]) => {
        const field = f[k];
        return { c, v: mutate && field ? { ...(v as object), [field.name]: w } : v };
      });
    });
    const anyValue = cases.chain((c) => fc.jsonValue({ maxDepth: 3 }).map((v) => ({ c, v: v })));
    fc.assert(
      fc.property(fc.oneof(near, anyValue), ({ c, v }) => {
        const type = compile(c);
        const byAjv = ajv.compile(type.jsonSchema())(v) && isJsonValue(v);
        expect(type.check(v)).toBe(byAjv);
      }),
      { numRuns: 400 },
    );
  });
});

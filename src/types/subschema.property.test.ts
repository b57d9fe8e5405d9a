/**
 * The subtyping check is sound: for generated pairs of types (P, C) of the type language, when
 * `isSubschema(P, C)` says "compatible", no value generated to fit P fails C's validator. Pairs are
 * drawn both independently and related (C = P, P | null, a record with fields made optional or
 * dropped, `any`), so that "compatible" is said often enough to mean something.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { declarations, fieldType, fit, raw, recordOf, type T } from '../../test/helpers/type-arbitraries.js';
import { compileTypes } from './registry.js';
import { isSubschema } from './subschema.js';

const widen = (t: T, names: number): fc.Arbitrary<T> =>
  fc.oneof(
    fc.constant(t),
    fc.constant<T>({ k: 'prim', name: 'any' }),
    t.k === 'nullable' || t.k === 'enum' || t.k === 'record' ? fc.constant(t) : fc.constant<T>({ k: 'nullable', t }),
    t.k === 'record'
      ? fc.array(fc.boolean(), { minLength: t.fields.length, maxLength: t.fields.length }).map((flags): T => ({
          k: 'record',
          fields: t.fields.filter((_, i) => flags[i] !== true || i % 2 === 0).map((f, i) => ({ ...f, optional: f.optional || flags[i] === true })),
        }))
      : fc.constant(t),
    t.k === 'prim' && t.name === 'integer' ? fc.constant<T>({ k: 'prim', name: 'number' }) : fc.constant(t),
    fieldType(names),
  );

interface Pair {
  decls: T[];
  p: T;
  c: T;
}

const pairs: fc.Arbitrary<Pair> = declarations.chain((decls) =>
  fc
    .oneof(recordOf(decls.length), fieldType(decls.length))
    .chain((p) => fc.oneof(widen(p, decls.length), recordOf(decls.length), fieldType(decls.length)).map((c) => ({ decls, p, c }))),
);

function compile(pair: Pair) {
  const block: Record<string, unknown> = {};
  pair.decls.forEach((d, i) => (block[`N${i}`] = raw(d)));
  block['P'] = raw(pair.p);
  block['C'] = raw(pair.c);
  const { registry, diagnostics } = compileTypes(block, ['types']);
  expect(diagnostics).toEqual([]);
  return { p: registry.compile('P', ['x']).type!, c: registry.compile('C', ['x']).type! };
}

describe('JSON Schema subtyping (property)', () => {
  test('"compatible" is never said of a pair where a value fitting the producer fails the consumer', () => {
    let compatible = 0;
    fc.assert(
      fc.property(
        pairs.chain((pair) => fc.array(fit(pair.p, pair.decls), { minLength: 1, maxLength: 8 }).map((values) => ({ pair, values }))),
        ({ pair, values }) => {
          const { p, c } = compile(pair);
          const r = isSubschema(p.jsonSchema(), c.jsonSchema());
          if (r.verdict !== 'compatible') return;
          compatible++;
          for (const v of values) {
            expect(p.check(v)).toBe(true);
            expect({ p: p.text, c: c.text, v, fits: c.check(v) }).toEqual({ p: p.text, c: c.text, v, fits: true });
          }
        },
      ),
      { numRuns: 600 },
    );
    expect(compatible).toBeGreaterThan(50);
  });

  test('"incompatible" (an error) is said only when a value fitting the producer fails the consumer', () => {
    fc.assert(
      fc.property(
        pairs.chain((pair) => fc.array(fit(pair.p, pair.decls), { minLength: 4, maxLength: 8 }).map((values) => ({ pair, values }))),
        ({ pair, values }) => {
          const { p, c } = compile(pair);
          const r = isSubschema(p.jsonSchema(), c.jsonSchema());
          if (r.verdict !== 'incompatible') return;
          // (an error deeper down means: fails whenever that place is reached; an empty array never reaches it)
          if (r.findings.every((f) => f.severity === 'error' && f.path.length === 0)) for (const v of values) expect(c.check(v)).toBe(false);
        },
      ),
      { numRuns: 300 },
    );
  });
});

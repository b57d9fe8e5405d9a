/**
 * Generators of the type language for property tests (src/types/fit.property.test.ts and
 * subschema.property.test.ts): a small AST of our own, written out as `types` declarations, and values
 * built from the AST to fit (an `object` value draws its keys from the record field names too).
 */
import fc from 'fast-check';
import type { Json } from '../../src/core/json.js';

export type T =
  | { k: 'prim'; name: 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'any' }
  | { k: 'named'; i: number }
  | { k: 'array'; el: T; syntax: 'suffix' | 'generic' }
  | { k: 'nullable'; t: T }
  | { k: 'enum'; values: (string | number | boolean)[] }
  | { k: 'record'; fields: { name: string; t: T; optional: boolean }[] };

/** A type expression that can be written as a string (records and enums only as named types). */
export const stringable = (names: number): fc.Arbitrary<T> =>
  fc.letrec<{ t: T }>((tie) => ({
    t: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constantFrom('string', 'number', 'integer', 'boolean', 'object', 'array', 'any').map((name): T => ({ k: 'prim', name })),
      ...(names > 0 ? [fc.nat(names - 1).map((i): T => ({ k: 'named', i }))] : []),
      fc.record({ el: tie('t'), syntax: fc.constantFrom('suffix' as const, 'generic' as const) }).map(({ el, syntax }): T => ({ k: 'array', el, syntax })),
    ),
  })).t;

export function text(t: T): string {
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

export const fieldType = (names: number): fc.Arbitrary<T> =>
  fc.oneof(
    stringable(names),
    stringable(names).map((t): T => ({ k: 'nullable', t })),
    fc.uniqueArray(fc.oneof(fc.string({ minLength: 1, maxLength: 5 }), fc.integer({ min: -5, max: 5 }), fc.boolean()), { minLength: 1, maxLength: 4 }).map((values): T => ({ k: 'enum', values })),
  );

export const recordOf = (names: number): fc.Arbitrary<T> =>
  fc.uniqueArray(fc.record({ name: fieldName, t: fieldType(names), optional: fc.boolean() }), { minLength: 1, maxLength: 4, selector: (f) => f.name }).map((fields): T => ({ k: 'record', fields }));

/** Named declarations N0..Nn-1; Ni may use Nj for j < i (recursion through records is tested elsewhere). */
export const declarations: fc.Arbitrary<T[]> = fc.integer({ min: 1, max: 4 }).chain((n) =>
  fc.tuple(...Array.from({ length: n }, (_, i) => fc.oneof(recordOf(i), i > 0 ? stringable(i) : recordOf(0), fieldType(i).filter((t) => t.k === 'enum')))),
);

export function raw(t: T): unknown {
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

export function fit(t: T, decls: T[], depth = 0): fc.Arbitrary<Json> {
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
          // keys from the field names too: an untyped object may carry a key a record declares
          return fc.dictionary(fc.oneof(fc.string({ maxLength: 4 }), fieldName), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }) as fc.Arbitrary<Json>;
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


import { describe, expect, test } from 'vitest';
import { isSubschema } from './subschema.js';

const kinds = (p: unknown, c: unknown): string[] => isSubschema(p, c).findings.map((f) => `${f.severity} ${f.kind} ${f.path.join('.')}`);

describe('isSubschema', () => {
  test('primitives: equal, integer into number, disjoint', () => {
    expect(isSubschema({ type: 'string' }, { type: 'string' }).verdict).toBe('compatible');
    expect(isSubschema({ type: 'integer' }, { type: 'number' }).verdict).toBe('compatible');
    expect(kinds({ type: 'number' }, { type: 'integer' })).toEqual(['warning narrower ']);
    expect(isSubschema({ type: 'string' }, { type: 'number' }).verdict).toBe('incompatible');
    expect(isSubschema({ type: 'string' }, {}).verdict).toBe('compatible');
    expect(kinds({}, { type: 'string' })).toEqual(['warning untyped ']);
  });

  test('unions with null: a nullable producer narrows; null accepted by anyOf or enum', () => {
    const nullable = { anyOf: [{ type: 'string' }, { type: 'null' }] };
    expect(kinds(nullable, { type: 'string' })).toEqual(['warning narrower ']);
    expect(isSubschema(nullable, { type: ['string', 'null'] }).verdict).toBe('compatible');
    expect(isSubschema({ type: 'null' }, { enum: ['a', null] }).verdict).toBe('compatible');
  });

  test('enums: subset, partial overlap, disjoint; booleans against two constants', () => {
    expect(isSubschema({ enum: ['low', 'high'] }, { enum: ['low', 'medium', 'high'] }).verdict).toBe('compatible');
    expect(kinds({ enum: ['low', 'critical'] }, { enum: ['low', 'high'] })).toEqual(['warning narrower ']);
    expect(isSubschema({ enum: ['x'] }, { enum: ['low'] }).verdict).toBe('incompatible');
    expect(kinds({ type: 'string' }, { enum: ['a'] })).toEqual(['warning narrower ']);
    expect(isSubschema({ type: 'boolean' }, { anyOf: [{ const: true }, { const: false }] }).verdict).toBe('compatible');
  });

  test('objects: required, optional, closed producer, additionalProperties: false', () => {
    const closed = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };
    expect(kinds(closed, { type: 'object', required: ['b'] })).toEqual(['error missing b']);
    expect(kinds({ type: 'object', properties: { a: { type: 'string' } } }, { type: 'object', required: ['a'] })).toEqual(['warning optional a']);
    expect(kinds({ type: 'object', properties: { a: { type: 'string' } } }, { type: 'object', required: ['b'] })).toEqual(['warning missing b']);
    expect(kinds(closed, { type: 'object', properties: {}, additionalProperties: false })).toEqual(['error unknown-key a']);
    expect(kinds({ type: 'object' }, { type: 'object', additionalProperties: false })).toEqual(['warning extra-keys ']);
    expect(kinds(closed, { type: 'object', properties: { a: { type: 'number' } } })).toEqual(['error type a']);
  });

  test('arrays and recursive $refs', () => {
    const tree = { $defs: { Node: { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#/$defs/Node' } } }, required: ['kids'] } }, $ref: '#/$defs/Node' };
    expect(isSubschema(tree, tree).verdict).toBe('compatible');
    expect(kinds({ type: 'array', items: { type: 'string' } }, { type: 'array', items: { type: 'integer' } })).toEqual(['error type *']);
    expect(kinds({ type: 'array' }, { type: 'array', items: { type: 'string' } })).toEqual(['warning untyped *']);
  });

  test('keywords it cannot compare are named, never passed silently', () => {
    const r = isSubschema({ type: 'string' }, { type: 'string', pattern: '^a', format: 'email' });
    expect(r.verdict).toBe('unknown');
    expect(r.findings[0]?.keywords).toEqual(['pattern', 'format']);
    expect(isSubschema({ type: 'object' }, { type: 'object', if: {}, then: {} }).findings[0]?.keywords).toEqual(['if', 'then']);
    expect(isSubschema({ type: 'number' }, { type: 'number', minimum: 0 }).findings[0]?.keywords).toEqual(['minimum']);
    expect(isSubschema({ type: 'number' }, { minimum: 0 }).findings[0]?.keywords).toEqual(['minimum']);
  });

  test('numeric bounds the producer implies pass; wider ones are named', () => {
    expect(isSubschema({ type: 'number', minimum: 1, maximum: 5 }, { type: 'number', minimum: 0, maximum: 10 }).verdict).toBe('compatible');
    expect(isSubschema({ type: 'number', minimum: -1 }, { type: 'number', minimum: 0 }).findings[0]?.keywords).toEqual(['minimum']);
    expect(isSubschema({ enum: [3, 4] }, { type: 'integer', maximum: 4 }).verdict).toBe('compatible');
  });

  test('oneOf is compared as anyOf only when its alternatives are disjoint', () => {
    expect(isSubschema({ type: 'string' }, { oneOf: [{ type: 'string' }, { type: 'number' }] }).verdict).toBe('compatible');
    expect(isSubschema({ type: 'string' }, { oneOf: [{ type: 'string' }, { type: 'string', maxLength: 3 }] }).verdict).toBe('unknown');
  });
});

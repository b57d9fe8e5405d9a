import { describe, expect, test } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { compileTypes } from './registry.js';
import { parseTypeExpr } from './parse.js';

const TYPES = {
  Finding: { source: 'string', content: 'string', confidence: 'number' },
  Level: { enum: ['low', 'medium', 'high'] },
  Money: 'number',
  Cash: 'Money',
  Report: { title: 'string', findings: 'Finding[]', level: 'Level', note: { type: 'string', required: false }, tags: { type: 'array', items: 'string', required: false }, owner: 'string | null' },
  Tree: { name: 'string', children: 'Tree[]' },
  Event: { type: 'string', at: 'integer' },
};

function registry(block: unknown = TYPES) {
  const r = compileTypes(block, ['types']);
  return r;
}

function type(expr: unknown) {
  const { registry: reg } = registry();
  const r = reg.compile(expr, ['x']);
  expect(r.diagnostics).toEqual([]);
  return r.type!;
}

describe('primitives: deep, no coercion', () => {
  const cases: [string, unknown[], unknown[]][] = [
    ['string', ['', 'x'], [1, true, null, [], {}, undefined]],
    ['number', [0, 1.5, -3, 1e300], ['5', true, null, NaN, Infinity, -Infinity, [], {}]],
    ['integer', [0, 7, -2], [1.5, '1', true, null, NaN]],
    ['boolean', [true, false], [1, 0, 'true', null]],
    ['object', [{}, { a: [1] }], [[], 'x', null, new Date(0), new Map()]],
    ['array', [[], [1, 'a']], [{}, 'x', null]],
    ['any', [null, 1, 'x', [], {}], [NaN, undefined, () => 1, new Date(0)]],
  ];
  test.each(cases)('%s', (t, good, bad) => {
    const ct = type(t);
    for (const v of good) {
      expect(ct.check(v), JSON.stringify(v)).toBe(true);
      expect(ct.issues(v)).toEqual([]);
    }
    for (const v of bad) {
      expect(ct.check(v), String(v)).toBe(false);
      expect(ct.issues(v).length).toBeGreaterThan(0);
    }
  });

  test('issues name the expected type and the actual JSON type', () => {
    expect(type('number').issues('5')).toEqual([expect.objectContaining({ pointer: '', kind: 'type', expected: 'number', actual: 'string' })]);
    expect(type('number').issues(NaN)).toEqual([expect.objectContaining({ kind: 'not-json', actual: 'non-finite number' })]);
    expect(type('boolean').issues(null)).toEqual([expect.objectContaining({ actual: 'null' })]);
  });
});

describe('named types, arrays, enums, optional and nullable', () => {
  const good = { title: 't', findings: [{ source: 's', content: 'c', confidence: 1 }], level: 'low', owner: null };

  test('a record validates every field deeply, with pointers', () => {
    const r = type('Report');
    expect(r.check(good)).toBe(true);
    expect(r.check({ ...good, extra: 1 })).toBe(true); // records are open
    const bad = { ...good, findings: [{ source: 's', content: 'c', confidence: '0.9' }, { source: 1, content: 'c' }], level: 'urgent', owner: 3 };
    expect(r.check(bad)).toBe(false);
    expect(r.issues(bad).map((i) => [i.pointer, i.kind, i.expected, i.actual])).toEqual([
      ['/findings/0/confidence', 'type', 'number', 'string'],
      ['/findings/1/source', 'type', 'string', 'number'],
      ['/findings/1/confidence', 'required', 'number', 'undefined'],
      ['/level', 'enum', 'Level', 'string'],
      ['/owner', 'type', 'string | null', 'number'],
    ]);
  });

  test('optional fields may be absent but not null; nullable fields may be null but not absent', () => {
    const r = type('Report');
    expect(r.check({ ...good, note: 'n', tags: ['a'] })).toBe(true);
    expect(r.check({ ...good, note: null })).toBe(false);
    const { owner: _o, ...noOwner } = good;
    expect(r.issues(noOwner)).toEqual([expect.objectContaining({ pointer: '/owner', kind: 'required' })]);
    expect(r.check({ ...good, tags: [1] })).toBe(false);
  });

  test('both array syntaxes, nested', () => {
    expect(type('array<Finding>').text).toBe('Finding[]');
    expect(type('Finding[][]').check([[{ source: 's', content: 'c', confidence: 2 }], []])).toBe(true);
    expect(type('array<array<integer>>').issues([[1, 2.5]])).toEqual([expect.objectContaining({ pointer: '/0/1', expected: 'integer' })]);
  });

  test('aliases resolve; a record may be recursive; a field may be named `type`', () => {
    expect(type('Cash').check(3)).toBe(true);
    expect(type('Cash').check('3')).toBe(false);
    const tree = type('Tree');
    expect(tree.check({ name: 'a', children: [{ name: 'b', children: [] }] })).toBe(true);
    expect(tree.issues({ name: 'a', children: [{ name: 'b' }] })).toEqual([expect.objectContaining({ pointer: '/children/0/children', kind: 'required' })]);
    expect(type('Event').check({ type: 'x', at: 1 })).toBe(true);
    expect(type('Event').check({ type: 'x' })).toBe(false);
  });

  test('inline forms in output positions: {type, required}, {enum}, inline records', () => {
    const { registry: reg } = registry();
    expect(reg.compile({ type: 'string', required: false }, ['x'])).toMatchObject({ required: false });
    expect(reg.compile({ enum: [1, 2] }, ['x']).type!.check(3)).toBe(false);
    expect(reg.compile({ title: 'string', words: 'integer' }, ['x']).type!.check({ title: 't', words: 1 })).toBe(true);
  });

  test('JSON Schema 2020-12 with $defs, accepted by ajv, and samples that fit', () => {
    const r = type('Report');
    const schema = r.jsonSchema();
    expect(schema['$schema']).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(Object.keys(schema['$defs'] as object)).toEqual(['Finding', 'Level', 'Report']);
    const validate = new Ajv2020({ strict: true }).compile(schema);
    expect(validate(good)).toBe(true);
    for (const t of ['Report', 'Tree', 'Cash', 'Level', 'Finding[]', 'any', 'string | null']) expect(type(t).check(type(t).sample()), t).toBe(true);
  });

  test('lookup follows paths into records and arrays, with hints', () => {
    const { registry: reg } = registry();
    const r = type('Report');
    const ok = reg.lookup(r, ['findings', '0', 'confidence']);
    expect(ok.ok && ok.type.text).toBe('number');
    expect(reg.lookup(r, ['titel'])).toMatchObject({ ok: false, hint: 'did you mean `title`?', at: 0 });
    expect(reg.lookup(r, ['title', 'x'])).toMatchObject({ ok: false, at: 1 });
    expect(reg.lookup(r, ['findings', 'first'])).toMatchObject({ ok: false, at: 1 });
    expect(reg.lookup(type('object'), ['anything', 'deep']).ok).toBe(true);
  });
});

describe('declaration errors', () => {
  test('unknown names, with did-you-mean and the offset inside the string', () => {
    const { registry: reg } = registry();
    const r = reg.compile('array<Findng>', ['workflow', 'a', 'outputs', 'f']);
    expect(r.diagnostics).toEqual([expect.objectContaining({ code: 'unknown-type', path: ['workflow', 'a', 'outputs', 'f'], hint: 'did you mean `Finding`?', data: { offset: 6, length: 6 } })]);
  });

  test('alias cycles are errors at each member; recursive records are not', () => {
    const { diagnostics } = registry({ A: 'B', B: 'A', C: 'C | null', Tree: { kids: 'Tree[]' } });
    expect(diagnostics.map((d) => [d.code, d.path])).toEqual([
      ['recursive-type', ['types', 'A']],
      ['recursive-type', ['types', 'B']],
      ['recursive-type', ['types', 'C']],
    ]);
  });

  test('malformed declarations are positioned errors, all reported', () => {
    const { diagnostics } = registry({ L: { enum: [] }, M: { enum: ['a', 'a'] }, N: 42, string: 'number', O: 'Finding<x>', P: { a: 'string[' }, 'bad name': 'string', Q: { type: 'string', required: 'no' } });
    expect(diagnostics.map((d) => [d.code, d.path.join('.')])).toEqual([
      ['invalid-type', 'types.string'],
      ['invalid-type', 'types.bad name'],
      ['invalid-type', 'types.L.enum'],
      ['invalid-type', 'types.M.enum.1'],
      ['invalid-type', 'types.N'],
      ['invalid-type', 'types.O'],
      ['invalid-type', 'types.P.a'],
      ['unknown-type', 'types.Q.required'], // in a declaration a mapping is a record: `required` is a field of type `no`
    ]);
    const { registry: reg } = registry({});
    expect(reg.compile({ type: 'string', required: 'no' }, ['o']).diagnostics.map((d) => [d.code, d.path.join('.')])).toEqual([['wrong-type', 'o.required']]);
  });

  test('the expression grammar', () => {
    expect(parseTypeExpr('Finding[]').ok).toBe(true);
    expect(parseTypeExpr(' array< string > ').ok).toBe(true);
    expect(parseTypeExpr('string | null').ok).toBe(true);
    expect(parseTypeExpr('string | number')).toMatchObject({ ok: false });
    expect(parseTypeExpr('')).toMatchObject({ ok: false, offset: 0 });
    expect(parseTypeExpr('a b')).toMatchObject({ ok: false, offset: 2 });
  });
});

import { describe, expect, test } from 'vitest';
import { parseExpression } from './expr.js';

describe('parseExpression', () => {
  test('collects top-level names, not macro variables', () => {
    const r = parseExpression("a.b.c == 'x' && has(d.e) && [1,2].exists(v, v > f) && g[0] == 1");
    expect(r.ok && [...r.expression.names].sort()).toEqual(['a', 'd', 'f', 'g']);
  });
  test('collects each whole chain of fields read from a top-level name, with its span and whether has() tests it', () => {
    const src = "a.b.c == 'x' && has(d.e.f) && [1].exists(v, v.w > g.h) && a.b.size() > 1";
    const r = parseExpression(src);
    if (!r.ok) throw new Error('parse failed');
    const paths = r.expression.paths.map((p) => ({ ...p, text: src.slice(p.offset, p.offset + p.length) }));
    expect(paths.map((p) => [p.name, p.path.join('.'), p.text, p.tested])).toEqual([
      ['a', 'b.c', 'a.b.c', false],
      ['d', 'e.f', 'd.e.f', true],
      ['g', 'h', 'g.h', false],
      ['a', 'b', 'a.b', false],
    ]);
  });
  test('evaluates against JSON data, ints and doubles compare numerically', () => {
    const r = parseExpression("risk.category == 'HIGH' && score > 3");
    if (!r.ok) throw new Error('parse failed');
    expect(r.expression.evaluate({ risk: { category: 'HIGH' }, score: 4.5 })).toBe(true);
    expect(r.expression.evaluate({ risk: { category: 'LOW' }, score: 4 })).toBe(false);
  });
  test('syntax errors carry the offset', () => {
    const r = parseExpression('risk.category == && 3');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.offset).toBe(17);
  });
  test('refuses prototype access', () => {
    const r = parseExpression('x.constructor');
    if (!r.ok) throw new Error('parse failed');
    expect(() => r.expression.evaluate({ x: {} })).toThrow(/constructor/);
  });
  test('data holding a `constructor` key is a map like any other (it was "Unsupported type: object")', () => {
    const r = parseExpression("has(_item.name) && _item.name == 'intro' && _item.constructor == 'c' && size(_item) == 2 && size(doc.parts) == 1");
    if (!r.ok) throw new Error('parse failed');
    const item = JSON.parse('{"name": "intro", "constructor": "c"}') as Record<string, unknown>;
    const doc = { parts: [{ constructor: { x: 1 } }] };
    expect(r.expression.evaluate({ _item: item, doc })).toBe(true);
    expect(r.expression.evaluate({ _item: { ...item, name: 'end' }, doc })).toBe(false);
    // still no prototype access on data without it, and other errors are what they were
    const proto = parseExpression('x.constructor');
    if (!proto.ok) throw new Error('parse failed');
    expect(() => proto.expression.evaluate({ x: {} })).toThrow(/constructor/);
  });
  test('numbers from JSON (doubles) mix with integer literals in arithmetic, as users write it', () => {
    const ev = (src: string, ctx: Record<string, unknown>): unknown => {
      const r = parseExpression(src);
      if (!r.ok) throw new Error(`parse failed: ${r.message}`);
      return r.expression.evaluate(ctx);
    };
    // each was "no such overload: dyn<double> % int" (or + - * /) before
    expect(ev('_index % 2 == 1', { _index: 3 })).toBe(true);
    expect(ev('_index % 2 == 1', { _index: 4 })).toBe(false);
    expect(ev('x.words * 2 > 100', { x: { words: 60 } })).toBe(true);
    expect(ev('count + 1 == 3', { count: 2 })).toBe(true);
    expect(ev('size(items) - n == 1', { items: [1, 2, 3], n: 2 })).toBe(true);
    expect(ev('total / 4 == 2.5', { total: 10 })).toBe(true);
    expect(ev('1 - score < 0.5', { score: 0.75 })).toBe(true);
    expect(ev('items.exists(i, i % 10 == 3)', { items: [1, 13] })).toBe(true);
    // what CEL defines stays as it was: integer literals are ints, strings concatenate
    expect(ev('7 / 2 == 3', {})).toBe(true);
    expect(ev("'a' + 'b' == 'ab'", {})).toBe(true);
    // a remainder by zero is an error, not NaN
    expect(() => ev('x % 0 == 1', { x: 5 })).toThrow(/modulus by zero/);
  });
});

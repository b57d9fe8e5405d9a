import { describe, expect, test } from 'vitest';
import { parseExpression } from './expr.js';

describe('parseExpression', () => {
  test('collects top-level names, not macro variables', () => {
    const r = parseExpression("a.b.c == 'x' && has(d.e) && [1,2].exists(v, v > f) && g[0] == 1");
    expect(r.ok && [...r.expression.names].sort()).toEqual(['a', 'd', 'f', 'g']);
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
});

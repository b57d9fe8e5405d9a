/** toJson: the copy of whatever an agent returns, fast for plain JSON, exact about what is not. */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { toJson } from './attempt.js';

describe('toJson', () => {
  test('plain JSON of any shape is copied exactly (as a JSON round trip would)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const r = toJson(v);
        expect(r.ok).toBe(true);
        if (r.ok) expect(r.value).toEqual(JSON.parse(JSON.stringify(v)));
        if (r.ok && v !== null && typeof v === 'object') expect(r.value).not.toBe(v);
      }),
      { numRuns: 300 },
    );
  });

  test('nesting past the fast copy (and up to the limit) converts the same', () => {
    let deep: unknown = { leaf: [1, 'x'] };
    for (let i = 0; i < 100; i++) deep = i % 2 === 0 ? [deep] : { d: deep };
    const r = toJson(deep);
    expect(r).toEqual({ ok: true, value: JSON.parse(JSON.stringify(deep)) as unknown });
  });

  test('JSON rules: undefined members dropped, holes and undefined items null, -0 as 0, __proto__ kept as data', () => {
    const r = toJson({ a: undefined, b: [1, , undefined, -0], c: JSON.parse('{"__proto__": {"x": 1}}') as unknown });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(JSON.stringify(r.value)).toBe('{"b":[1,null,null,0],"c":{"__proto__":{"x":1}}}');
    expect(Object.getPrototypeOf((r.value as { c: object }).c)).toBe(Object.prototype);
  });

  test('what is not JSON is named, with where it is', () => {
    const cycle: Record<string, unknown> = { a: { b: {} } };
    (cycle['a'] as { b: Record<string, unknown> }).b['back'] = cycle;
    const why = (v: unknown): string => {
      const r = toJson(v);
      return r.ok ? 'ok' : r.message;
    };
    expect(why(cycle)).toMatch(/circular at \/a\/b\/back/);
    expect(why({ f: () => 1 })).toMatch(/function at \/f/);
    expect(why({ n: [1, Number.NaN] })).toMatch(/NaN at \/n\/1/);
    expect(why({ d: new Date(0) })).toMatch(/Date object at \/d/);
    const getter = Object.defineProperty({}, 'x', { enumerable: true, get: () => { throw new Error('no'); } });
    expect(why(getter)).toMatch(/could not be read/);
  });
});

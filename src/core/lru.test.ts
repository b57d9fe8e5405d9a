import { expect, test } from 'vitest';
import { BoundedMap, Lru } from './lru.js';

test('keeps at most max entries, dropping the least recently used', () => {
  const c = new Lru<string, number>(2);
  c.set('a', 1);
  c.set('b', 2);
  expect(c.get('a')).toBe(1); // a is now the most recent
  c.set('c', 3);
  expect(c.get('b')).toBeUndefined();
  expect(c.get('a')).toBe(1);
  expect(c.get('c')).toBe(3);
  expect(c.size).toBe(2);
  c.set('c', 4);
  expect(c.size).toBe(2);
  expect(c.get('c')).toBe(4);
});

test('a large Lru drops its least recently used in batches and never holds more than max', () => {
  const c = new Lru<number, number>(1000);
  for (let i = 0; i < 1000; i++) c.set(i, i);
  c.get(0); // the most recent now
  c.set(1000, 1000);
  // a sixteenth dropped at once, the least recently used first: 1..62 (62 of them), 0 kept
  expect(c.size).toBe(1001 - 62);
  expect(c.get(0)).toBe(0);
  expect(c.get(1)).toBeUndefined();
  expect(c.get(62)).toBeUndefined();
  expect(c.get(63)).toBe(63);
  for (let i = 2000; i < 10_000; i++) {
    c.set(i, i);
    expect(c.size).toBeLessThanOrEqual(1000);
  }
  expect(c.get(9999)).toBe(9999);
});

test('a BoundedMap forgets its oldest entries past max, and works as a Map otherwise', () => {
  const m = new BoundedMap<string, number>(3);
  m.set('a', 1).set('b', 2).set('c', 3);
  m.set('a', 10); // an update keeps its place
  m.set('d', 4);
  expect([...m.keys()]).toEqual(['b', 'c', 'd']);
  expect(m.delete('c')).toBe(true);
  m.set('e', 5);
  expect([...m.entries()]).toEqual([['b', 2], ['d', 4], ['e', 5]]);
  const big = new BoundedMap<number, number>(10_000);
  for (let i = 0; i < 100_000; i++) {
    big.set(i, i);
    if (big.size > 10_000) throw new Error(`size ${big.size} at ${i}`);
  }
  expect(big.has(99_999)).toBe(true);
  expect(big.has(90_000 - 1000)).toBe(false);
  expect(big.size).toBeGreaterThan(10_000 - 10_000 / 16 - 1);
});

import { expect, test } from 'vitest';
import { Lru } from './lru.js';

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

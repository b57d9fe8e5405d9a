import { expect, test } from 'vitest';
import { DueTimes } from './due-times.js';

test('DueTimes keeps the earliest time first, drops what is due, and holds at most max', () => {
  const d = new DueTimes(5);
  expect(d.peek()).toBe(Infinity);
  for (const t of [50, 10, 40, 30, Infinity, NaN, 20, 60]) d.add(t);
  // non-finite times are not kept; past max, a time is dropped (60)
  expect(d.size).toBe(5);
  expect(d.peek()).toBe(10);
  d.dropUntil(25);
  expect(d.peek()).toBe(30);
  d.dropUntil(40);
  expect(d.peek()).toBe(50);
  d.dropUntil(100);
  expect(d.size).toBe(0);
  expect(d.peek()).toBe(Infinity);
  const many = new DueTimes(1000);
  const xs = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 1000);
  for (const x of xs) many.add(x);
  const out: number[] = [];
  while (many.size > 0) {
    out.push(many.peek());
    many.dropUntil(many.peek());
  }
  expect(out).toEqual([...new Set(xs)].sort((a, b) => a - b));
});

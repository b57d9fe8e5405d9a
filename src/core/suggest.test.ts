import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { closest, editDistance, editDistanceWithin } from './suggest.js';

describe('suggestions', () => {
  test('editDistanceWithin is editDistance up to the bound, bound + 1 past it', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), fc.nat(5), (a, b, max) => {
        const d = editDistance(a, b);
        expect(editDistanceWithin(a, b, max)).toBe(d <= max ? d : max + 1);
      }),
      { numRuns: 2000 },
    );
  });

  test('closest picks the nearest, ties by name, nothing past the limit', () => {
    expect(closest('reserch', ['research', 'analysis'])).toBe('research');
    expect(closest('ab', ['ac', 'aa'])).toBe('aa');
    expect(closest('zzzzzz', ['research'])).toBeUndefined();
  });

  test('thousands of unknown names against thousands of candidates stay fast', () => {
    const names = Array.from({ length: 3000 }, (_, i) => `phase_${i}`);
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) closest(`nope${i}`, names);
    expect(performance.now() - t0).toBeLessThan(5000); // 3 million pairs: ~0.2 s here; with an allocating table per pair it was ~2 s
  });
});

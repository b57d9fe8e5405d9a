import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { shareSlots } from './slot-share.js';

describe('shareSlots', () => {
  test('a small run beside a wide one that holds the slots gets the slot that frees', () => {
    expect(shareSlots(1, [{ held: 3, want: Infinity }, { held: 0, want: 1 }])).toEqual([0, 1]);
  });

  test('runs of one ready task each: oldest first, one each', () => {
    const runs = Array.from({ length: 500 }, () => ({ held: 0, want: 1 }));
    const caps = shareSlots(8, runs);
    expect(caps.slice(0, 8)).toEqual([1, 1, 1, 1, 1, 1, 1, 1]);
    expect(caps.slice(8).every((c) => c === 0)).toBe(true);
  });

  test('two wide runs even out; the odd slot goes to the older', () => {
    expect(shareSlots(5, [{ held: 0, want: Infinity }, { held: 0, want: Infinity }])).toEqual([3, 2]);
    expect(shareSlots(4, [{ held: 6, want: 100 }, { held: 0, want: 100 }])).toEqual([0, 4]);
    expect(shareSlots(10, [{ held: 6, want: 100 }, { held: 0, want: 100 }])).toEqual([2, 8]);
  });

  test('a run wants no more than its ready set: the rest goes to the others', () => {
    expect(shareSlots(6, [{ held: 0, want: 1 }, { held: 0, want: 2 }, { held: 5, want: Infinity }])).toEqual([1, 2, 3]);
    expect(shareSlots(6, [{ held: 0, want: 0 }, { held: 0, want: 2 }])).toEqual([0, 2]);
  });

  test('one run takes what it wants of the free slots, whatever it holds', () => {
    expect(shareSlots(1, [{ held: 0, want: Infinity }])).toEqual([1]);
    expect(shareSlots(5, [{ held: 7, want: 3 }])).toEqual([3]);
    expect(shareSlots(0, [{ held: 0, want: Infinity }])).toEqual([0]);
    expect(shareSlots(4, [{ held: 0, want: 0 }])).toEqual([0]);
  });

  test('a huge number of free slots is shared in a few steps, not a pass per slot (--concurrency 4294967296)', () => {
    // one slot a pass took seconds for this one (and never ended for 2 ** 32)
    const t0 = performance.now();
    expect(shareSlots(2 ** 28, [{ held: 0, want: Infinity }])).toEqual([2 ** 28]);
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(shareSlots(2 ** 32, [{ held: 0, want: Infinity }])).toEqual([2 ** 32]);
    expect(shareSlots(2 ** 32 + 1, [{ held: 0, want: Infinity }, { held: 0, want: Infinity }])).toEqual([2 ** 31 + 1, 2 ** 31]);
    expect(shareSlots(2 ** 32, [{ held: 3, want: Infinity }, { held: 0, want: 5 }, { held: 1, want: Infinity }])).toEqual([2 ** 31 - 3, 5, 2 ** 31 - 2]);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  test('property: the same shares as one slot a pass', () => {
    // the algorithm before whole passes were made at once
    const slow = (free: number, runs: readonly { held: number; want: number }[]): number[] => {
      const caps = runs.map(() => 0);
      for (; free > 0; free--) {
        let best = -1;
        runs.forEach((r, i) => {
          if (caps[i]! < r.want && (best < 0 || r.held + caps[i]! < runs[best]!.held + caps[best]!)) best = i;
        });
        if (best < 0) break;
        caps[best]!++;
      }
      return caps;
    };
    const run = fc.record({ held: fc.nat(20), want: fc.oneof(fc.nat(30), fc.constant(Infinity)) });
    fc.assert(
      fc.property(fc.nat(200), fc.array(run, { maxLength: 8 }), (free, runs) => {
        expect(shareSlots(free, runs)).toEqual(slow(free, runs));
      }),
      { numRuns: 2000 },
    );
  });

  test('property: work-conserving, within wants, max-min fair with ties to the older', () => {
    const run = fc.record({ held: fc.nat(20), want: fc.oneof(fc.nat(12), fc.constant(Infinity)) });
    fc.assert(
      fc.property(fc.nat(40), fc.array(run, { maxLength: 30 }), (free, runs) => {
        const caps = shareSlots(free, runs);
        expect(caps).toHaveLength(runs.length);
        const total = caps.reduce((s, c) => s + c, 0);
        const wanted = runs.reduce((s, r) => s + r.want, 0);
        // every slot is given while some run wants one
        expect(total).toBe(Math.min(free, wanted));
        runs.forEach((r, i) => {
          expect(caps[i]).toBeGreaterThanOrEqual(0);
          expect(caps[i]).toBeLessThanOrEqual(r.want);
        });
        // no run left wanting sits lower than one that was given a slot, save by one for a tie it lost to an older run
        for (let i = 0; i < runs.length; i++) {
          if (caps[i]! >= runs[i]!.want) continue;
          const mine = runs[i]!.held + caps[i]!;
          for (let j = 0; j < runs.length; j++) {
            if (j === i || caps[j] === 0) continue;
            const theirs = runs[j]!.held + caps[j]!;
            expect(mine).toBeGreaterThanOrEqual(j < i ? theirs - 1 : theirs);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});

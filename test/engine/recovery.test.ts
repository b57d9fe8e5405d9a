import { describe, expect, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { ENDINGS, FAULT_POINTS, costReportedThenCrashed, crashEverywhere, crashEverywhereGated, crashMatchesReference, lateCompletionAfterTakeover, leaseExpiryTakeover } from './scenarios.js';

const memory = () => new MemoryStore();

describe('crash at every fault point, every hit, then resume on a second engine (memory store)', () => {
  for (const at of FAULT_POINTS) {
    test(at, async () => {
      const n = await crashEverywhere(memory, at);
      // the fault point is reached at least once per run (run.created exactly once)
      expect(n).toBeGreaterThanOrEqual(1);
      if (at === 'run.created') expect(n).toBe(1);
      else expect(n).toBeGreaterThanOrEqual(3);
    });
  }
});

describe('the same with one attempt at a time (other commit batches)', () => {
  for (const at of FAULT_POINTS) test(at, async () => expect(await crashEverywhere(memory, at, 1)).toBeGreaterThanOrEqual(1));
});

describe('leases (memory store)', () => {
  test('a crashed worker is taken over when its lease expires (no isOwnerDead)', () => leaseExpiryTakeover(memory));
  test('a late completion after a takeover is a task.stale_outcome and never overwrites the newer attempt', () => lateCompletionAfterTakeover(memory));
});

describe('crash at every fault point of a run with a run gate, an input gate and a phase gate (memory store)', () => {
  for (const at of FAULT_POINTS) {
    test(at, async () => {
      const n = await crashEverywhereGated(memory, at);
      expect(n).toBeGreaterThanOrEqual(1);
    });
  }
});

describe('a crashed and resumed run ends exactly as the run that never crashed (memory store)', () => {
  for (const ending of Object.keys(ENDINGS)) test(ending, async () => expect(await crashMatchesReference(memory, ending)).toBeGreaterThanOrEqual(5));
});

test('a cost committed before its attempt was lost in a crash counts, and so does the new attempt’s (memory store)', () => costReportedThenCrashed(memory));

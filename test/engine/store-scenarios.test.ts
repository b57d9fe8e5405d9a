/** The whole scenario set against the memory store, as a store's own suite would run it (a guard that STORE_SCENARIOS stays complete). */
import { describe, expect, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { FAULT_POINTS, STORE_SCENARIOS } from './scenarios.js';

describe('STORE_SCENARIOS', () => {
  test('lists every scenario family', () => {
    const names = Object.keys(STORE_SCENARIOS);
    for (const at of FAULT_POINTS) expect(names).toContain(`crash at ${at}, every hit`);
    expect(names).toEqual(expect.arrayContaining(['runGateApprove', 'resumeAfterRestartInput', 'leaseExpiryTakeover', 'lateCompletionAfterTakeover', 'rerunFromPhase', 'twoDriversOneRun']));
  });
  test('a store factory is all they need', async () => {
    let made = 0;
    await STORE_SCENARIOS['runGateApprove']!(() => (made++, new MemoryStore()));
    expect(made).toBe(1);
  });
});

/**
 * The chaos test, small (harness.ts; the large configuration is `npm run bench -- chaos`): worker
 * processes on the real PostgreSQL behind a TCP proxy, SIGKILLs and restarts, connection cuts, a worker
 * with a skewed clock, approvals from other processes, retries of 0-2 ms. It fails with the codes of
 * the invariants broken (invariants.ts), and prints the report.
 *
 * Off unless BATON_CHAOS=1 (the engine before issue 13's rewrite died on a cut and ran attempts twice
 * under skew; the rewritten one passes): the lead removes the `skipIf` once it is known to be stable. A
 * worker restarted during a cut that exits 2 at start-up fails it as `worker-exited`.
 */
import { describe, expect, test } from 'vitest';
import { formatReport, runChaos } from './harness.js';

describe.skipIf(!process.env['BATON_CHAOS'])('chaos on PostgreSQL (BATON_CHAOS=1)', () => {
  test('kills, cuts, skew and approvals: every run ends, every phase completes once, no attempt runs twice, no completion is lost', async () => {
    const report = await runChaos({
      runs: 16,
      gatedRuns: 4,
      workers: 3,
      concurrency: 4,
      leaseSeconds: 3,
      skewMs: 2_500,
      chaosMs: 8_000,
      killEveryMs: 3_000,
      restartMs: 300,
      cutEveryMs: 4_000,
      cutMs: 1_000,
      slowPercent: 10,
      slowMs: 1_200,
      settleMs: 40_000,
      seed: Number(process.env['CHAOS_SEED'] ?? Date.now() % 1_000_000),
      ...(process.env['CHAOS_VERBOSE'] ? { log: (l: string) => console.log(l) } : {}),
    });
    console.log(formatReport(report));
    expect(report.kills).toBeGreaterThan(0);
    expect(report.cuts).toBeGreaterThan(0);
    expect(report.violations.map((v) => v.code)).toEqual([]);
  }, 90_000);
});

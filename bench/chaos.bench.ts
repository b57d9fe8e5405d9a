/**
 * The chaos test's large configuration (test/chaos/harness.ts; the small one runs in `npm test` as
 * test/chaos/chaos.pg.test.ts): 6 `baton worker` processes behind a TCP proxy, one 2.5 s ahead, 300
 * runs (40 of them gated) of a diamond with retries of 0-2 ms, SIGKILLs every ~3 s, cuts of 1.5 s every
 * ~8 s, for 40 s, then up to 2 minutes to finish. BENCH_SCALE scales the runs and the chaos time;
 * CHAOS_SEED replays a configuration. Prints the report; exits 1 when an invariant was broken (a
 * correctness failure, not a timing).
 */
import { formatReport, runChaos } from '../test/chaos/harness.js';
import { SCALE, scaled } from './queue.js';

const seed = Number(process.env['CHAOS_SEED'] ?? Date.now() % 1_000_000);
const report = await runChaos({
  runs: scaled(260, 12),
  gatedRuns: scaled(40, 4),
  workers: 6,
  concurrency: 8,
  leaseSeconds: 3,
  skewMs: 2_500,
  chaosMs: Math.max(8_000, 40_000 * Math.min(1, SCALE)),
  killEveryMs: 3_000,
  restartMs: 500,
  cutEveryMs: 8_000,
  cutMs: 1_500,
  slowPercent: 5,
  slowMs: 1_200,
  settleMs: 120_000,
  seed,
  log: (l) => console.log(`  ${l}`),
});
console.log(`\nBENCH_SCALE=${SCALE}, seed ${seed}`);
console.log(formatReport(report));
if (report.violations.length > 0) process.exitCode = 1;

/**
 * Engine scenarios as functions of a store factory, so that the same scenarios run against every
 * store (memory here; SQLite and PostgreSQL in their own suites): `scenario(() => new MemoryStore())`.
 * Each builds its engines on ONE store from the factory; recovery scenarios crash the first engine
 * at a fault point and finish the run with a second engine on the same store. A scenario may call
 * the factory several times (one fresh store per case) and never closes a store: the factory's
 * owner does (a SQLite file, a PostgreSQL schema). Time is a ManualClock throughout: no real sleeps,
 * except the serving-worker scenarios' store polls (pollMs: 10).
 */
export * from './scenarios/common.js';
export * from './scenarios/contracts.js';
export * from './scenarios/fanout.js';
export * from './scenarios/files.js';
export * from './scenarios/gates.js';
export * from './scenarios/in-doubt.js';
export * from './scenarios/recovery.js';
export * from './scenarios/rerun.js';
export * from './scenarios/timing.js';
export * from './scenarios/workers.js';
import { FAULT_POINTS } from '../../src/engine/worker.js';
import { type StoreFactory } from './scenarios/common.js';
import { CONTRACT_SCENARIOS } from './scenarios/contracts.js';
import { FANOUT_SCENARIOS } from './scenarios/fanout.js';
import { FILE_SCENARIOS } from './scenarios/files.js';
import { GATE_SCENARIOS, MORE_GATE_SCENARIOS } from './scenarios/gates.js';
import { IN_DOUBT_SCENARIOS } from './scenarios/in-doubt.js';
import { ENDINGS, costReportedThenCrashed, crashEverywhere, crashEverywhereGated, crashMatchesReference, lateCompletionAfterTakeover, leaseExpiryTakeover } from './scenarios/recovery.js';
import { rerunFromPhase, rerunRefusals } from './scenarios/rerun.js';
import { TIMING_SCENARIOS } from './scenarios/timing.js';
import { WORKER_SCENARIOS } from './scenarios/workers.js';
export { FAULT_POINTS, type FaultPoint } from '../../src/engine/worker.js';

/**
 * Every scenario above by name, for a store's own suite:
 * `for (const [name, s] of Object.entries(STORE_SCENARIOS)) test(name, () => s(factory))`.
 */
export const STORE_SCENARIOS: Record<string, (makeStore: StoreFactory) => Promise<unknown>> = {
  ...GATE_SCENARIOS,
  ...MORE_GATE_SCENARIOS,
  ...WORKER_SCENARIOS,
  ...CONTRACT_SCENARIOS,
  ...TIMING_SCENARIOS,
  ...FANOUT_SCENARIOS,
  ...FILE_SCENARIOS,
  ...IN_DOUBT_SCENARIOS,
  leaseExpiryTakeover,
  lateCompletionAfterTakeover,
  costReportedThenCrashed,
  rerunFromPhase,
  rerunRefusals,
  ...Object.fromEntries(FAULT_POINTS.map((at) => [`crash at ${at}, every hit`, (m: StoreFactory) => crashEverywhere(m, at)])),
  ...Object.fromEntries(FAULT_POINTS.map((at) => [`crash at ${at}, every hit, gated run`, (m: StoreFactory) => crashEverywhereGated(m, at)])),
  ...Object.fromEntries(Object.keys(ENDINGS).map((ending) => [`crash anywhere, ends as without: ${ending}`, (m: StoreFactory) => crashMatchesReference(m, ending)])),
};

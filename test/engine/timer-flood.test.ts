/**
 * A serving worker with hundreds of gated runs whose gates' escalations come due at the same moment, and
 * a plain run started then: the plain run is not held up by them. It used to wait seconds: findWork's
 * answer (the oldest hints, 100) was all older runs' due timers, so the new run was not even offered
 * until they had all fired, and then each of its phases waited for a turn that committed every due timer
 * held (one transaction each). Real time, a real SQLite file and the real PostgreSQL server.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import type { RunStore } from '../../src/engine/ports.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { testDatabase } from '../helpers/pg.js';
import { header, until, wf } from './helpers.js';

const db = testDatabase('baton_test_timer_flood');
beforeAll(db.create);
afterAll(db.drop);

/** The gates' escalation: 2.88 s after they open (at each run's start). */
const ESCALATE_MS = 0.0008 * 3_600_000;

const gated = wf(`${header()}workflow:
  g: {assign: fast, outputs: {n: number}, x-require_approval: {timeout_hours: 0.0008, on_timeout: escalate}}
`);
const plain = wf(`${header()}workflow:
  p1: {assign: fast, outputs: {n: number}}
  p2: {assign: fast, depends_on: [p1], outputs: {n: number}}
  p3: {assign: fast, depends_on: [p2], outputs: {n: number}}
  p4: {assign: fast, depends_on: [p3], outputs: {n: number}}
  p5: {assign: fast, depends_on: [p4], outputs: {n: number}}
`);

/** Each store with as many gated runs as make the old code's wait plain (SQLite commits them faster). */
const STORES: [string, () => Promise<RunStore> | RunStore, number][] = [
  ['sqlite', () => openSqliteStore(join(mkdtempSync(join(tmpdir(), 'baton-timer-flood-')), 'f.db')), 1000],
  ['postgres', () => openPostgresStore(db.url), 600],
];

for (const [kind, open, GATED] of STORES) {
  test(`${kind}: a run started while ${GATED} gate escalations come due is not held up by them`, async () => {
    const store = await open();
    const engine = createEngine({ store, concurrency: 8, agents: { fast: (ctx) => ({ n: ctx.attempt }) } });
    const stop = new AbortController();
    const serving = engine.serve(stop.signal);
    try {
      const t0 = performance.now();
      await Promise.all(Array.from({ length: GATED }, () => engine.start(gated, { detach: true })));
      // just after the escalations come due: the worker is firing them
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + ESCALATE_MS + 150 - performance.now())));
      const { id } = await engine.start(plain, { detach: true });
      await until(async () => (await store.run(id))?.status === 'completed', 'the plain run completes', 60_000);
      const run = (await store.run(id))!;
      // every escalation fires, and some fired after the plain run started: it ran in the middle of them
      const gatedRuns = (await store.runs({ status: ['waiting'], limit: 2000 })).map((r) => r.runId);
      expect(gatedRuns).toHaveLength(GATED);
      const times: number[] = [];
      await until(async () => {
        times.length = 0;
        for (const r of gatedRuns) for (const e of await store.events(r)) if (e.type === 'gate.escalated') times.push(e.at);
        return times.length === GATED;
      }, 'every escalation', 60_000);
      expect(times.filter((t) => t > run.createdAt).length).toBeGreaterThan(0);
      // alone, this run takes 50-200 ms; behind the escalations it took 0.8-2.5 s (7 s behind 1,000 on PostgreSQL)
      expect(run.endedAt! - run.createdAt, 'the plain run, start to end (ms)').toBeLessThan(1_200);
    } finally {
      stop.abort();
      await serving;
      await engine.close();
      await store.close();
    }
  }, 60_000);
}

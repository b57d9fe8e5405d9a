/**
 * One trace per run across processes: an engine crashes in the middle of a run (a fault point after a
 * commit), a second engine with telemetry of its own resumes it from the store, and the spans both
 * emitted make one trace: every attempt span under the one run span, whichever process emitted it.
 * Over SQLite and PostgreSQL (the stores several processes share).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createEngine, openStore } from '@baton-run/baton';
import { runSpanIdOf, traceIdOf } from '../../src/engine/telemetry.js';
import { parseWorkflow } from '../../src/workflow/compile.js';
import { testDatabase } from '../helpers/pg.js';
import { byName, parentOf, traced } from './helpers.js';

const r = parseWorkflow(`
openintent: "1.0"
info: {name: chain}
workflow:
  a: {assign: x, outputs: {n: number}}
  b: {assign: x, depends_on: [a], outputs: {n: number}}
  c: {assign: x, depends_on: [b], outputs: {n: number}}
`);
const CHAIN = r.model!;
const agents = { x: () => ({ n: 1 }) };

describe.each(['sqlite', 'postgres'])('a run resumed by another engine (%s): one trace', (kind) => {
  test('the first engine emits the spans of what it committed, the second the rest and the run span, all in the trace derived from the run id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-otel-durable-'));
    const db = kind === 'postgres' ? testDatabase('baton_otel') : undefined;
    await db?.create();
    const store = await openStore(db ? db.url : join(dir, 'baton.db'), { cwd: dir });
    try {
      const first = traced();
      // the crash: right after the third commit (1: claim a; 2: a completed, claim b; 3: b completed, claim c),
      // before this process saw what it committed: b's span is lost with it (docs/telemetry.md, what is not seen)
      const e1 = createEngine({ store, agents, telemetry: first.telemetry, faults: { at: 'flush.after-commit', hit: 3 }, workerId: 'one' });
      await expect(e1.run(CHAIN, { runId: 'run-durable' })).rejects.toMatchObject({ code: 'fault-injected' });
      await e1.close();
      const second = traced();
      const e2 = createEngine({ store, agents, telemetry: second.telemetry, workerId: 'two', isOwnerDead: (o) => o === 'one' });
      const result = await e2.resume('run-durable');
      await e2.close();
      expect(result.status).toBe('completed');

      const one = await first.spans();
      const two = await second.spans();
      expect(one.map((s) => s.name)).toEqual(['baton.attempt a']);
      expect(byName(two, 'invoke_workflow chain')).toHaveLength(1);
      const all = [...one, ...two];
      expect(new Set(all.map((s) => s.spanContext().traceId))).toEqual(new Set([traceIdOf('run-durable', undefined)]));
      const run = byName(two, 'invoke_workflow chain')[0]!;
      expect(run.spanContext().spanId).toBe(runSpanIdOf('run-durable'));
      for (const s of all) if (s !== run) expect(parentOf(s)).toBe(run.spanContext().spanId);
            // c was claimed in engine one's last commit: its attempt 1 ends as the lease taken over (an error), attempt 2 completes
      const cs = byName(two, 'baton.attempt c').sort((x, y) => Number(x.attributes['baton.attempt']) - Number(y.attributes['baton.attempt']));
      expect(cs.map((s) => [s.attributes['baton.attempt'], s.attributes['baton.outcome'], s.attributes['error.type']])).toEqual([
        [1, 'lease_expired', 'LeaseExpired'],
        [2, 'completed', undefined],
      ]);
      expect(two).toHaveLength(3);
      // the run span covers the whole run, from its start in engine one
      const a = byName(one, 'baton.attempt a')[0]!;
      expect(run.startTime[0] * 1e3 + run.startTime[1] / 1e6).toBeLessThanOrEqual(a.startTime[0] * 1e3 + a.startTime[1] / 1e6);
    } finally {
      await store.close();
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

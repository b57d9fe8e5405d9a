/**
 * A serving worker whose slots are all taken waits: it neither spins nor asks the store for work it could
 * not take. Real time and a real SQLite file (the worker's own commits wake it there), no injected clock:
 * what is checked is CPU and store calls while an attempt holds the only slot.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import type { RunStore } from '../../src/engine/ports.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { deferred, header, until, wf } from './helpers.js';

test('a serving worker with every slot busy uses almost no CPU and does not query for work', async () => {
  const store = openSqliteStore(join(mkdtempSync(join(tmpdir(), 'baton-serve-idle-')), 'idle.db'));
  let finds = 0;
  const counted = new Proxy(store, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (key === 'findWork') return (...a: Parameters<RunStore['findWork']>) => (finds++, target.findWork(...a));
      return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
    },
  }) as RunStore;
  const model = wf(`${header()}workflow:
  quick: {assign: fast}
  slow: {assign: hold, depends_on: [quick]}
  also: {assign: fast}`);
  const gated = wf(`${header('governance:\n  require_approval: {when: "true", approvers: [alice]}')}workflow:\n  waits: {assign: fast}`);
  const gates: ReturnType<typeof deferred>[] = [];
  const started: number[] = [];
  const engine = createEngine({
    store: counted,
    concurrency: 1,
    agents: {
      fast: () => ({}),
      hold: () => {
        started.push(Date.now());
        const d = deferred();
        gates.push(d);
        return d.promise.then(() => ({}));
      },
    },
  });
  const stop = new AbortController();
  const serving = engine.serve(stop.signal);
  try {
    for (let round = 0; round < 12; round++) {
      // commits that leave nothing to do (a run that waits for an approval) wake the worker around the time
      // the slot fills, so its looks for work (made, put off or dropped) happen on either side of it
      for (let k = 0; k < 3; k++) {
        await engine.start(gated, { detach: true });
        await new Promise((r) => setTimeout(r, 2 + ((round * 3 + k) % 9)));
      }
      const { id: runId } = await engine.start(model, { detach: true });
      await until(() => gates.length === round + 1, `round ${round}: the slow phase holds the slot`, 100_000);
      // the only slot is held: for 300 ms the worker has nothing it may do
      const cpu0 = process.cpuUsage();
      const finds0 = finds;
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 300));
      const cpu = process.cpuUsage(cpu0);
      const ms = performance.now() - t0;
      expect((cpu.user + cpu.system) / 1000 / ms, `round ${round}: CPU share while every slot is busy`).toBeLessThan(0.3);
      expect(finds - finds0, `round ${round}: looks for work while every slot is busy`).toBeLessThanOrEqual(1);
      gates[round]!.resolve({});
      await until(async () => (await store.run(runId))?.status === 'completed', `round ${round}: the run completes`, 100_000);
    }
  } finally {
    stop.abort();
    await serving;
    await engine.close();
    await store.close();
  }
}, 60_000);

/** A fan of 10,000 items on a SQLite file completes, its outputs gathered whole and in order, one task row per item. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { header, wf } from './helpers.js';

test('10,000 items on SQLite', async () => {
  const model = wf(`${header()}workflow:
  list: {assign: l, inputs: {n: $trigger.n}, outputs: {xs: "integer[]"}}
  each: {assign: e, depends_on: [list], for_each: list.xs, inputs: {x: $item, i: $index}, outputs: {y: integer}}
  sum: {assign: s, depends_on: [each], inputs: {ys: each.y}, outputs: {total: integer, ordered: boolean}}`);
  const store = openSqliteStore(join(mkdtempSync(join(tmpdir(), 'baton-fan-large-')), 'fan.db'), { sync: 'normal' });
  const engine = createEngine({
    store,
    concurrency: 16,
    agents: {
      l: (c) => ({ xs: Array.from({ length: c.input['n'] as number }, (_, i) => i) }),
      e: (c) => ({ y: (c.input['x'] as number) * 2 + (c.input['i'] === c.item!.index ? 0 : 1) }),
      s: (c) => {
        const ys = c.input['ys'] as number[];
        return { total: ys.reduce((a, b) => a + b, 0), ordered: ys.every((y, i) => y === 2 * i) };
      },
    },
  });
  const n = 10_000;
  const r = await engine.run(model, { trigger: { n } });
  expect(r.status).toBe('completed');
  expect(r.phases['sum']!.output).toEqual({ total: n * (n - 1), ordered: true });
  const rows = await store.tasks(r.runId);
  expect(rows.filter((t) => t.phase.startsWith('each[') && t.status === 'completed')).toHaveLength(n);
  await engine.close();
  await store.close();
}, 120_000);

import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createEngine } from '../src/api/engine.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import { parseWorkflow } from '../src/workflow/compile.js';
const model = parseWorkflow(`openintent: "1.0"
info: {name: fan}
workflow:
  list: {assign: l, inputs: {n: $trigger.n}, outputs: {xs: "integer[]"}}
  each: {assign: e, depends_on: [list], for_each: list.xs, inputs: {x: $item}, outputs: {y: integer}}
  sum: {assign: s, depends_on: [each], inputs: {ys: each.y}, outputs: {total: integer}}
`).model!;
const agents = {
  l: (c: { input: Record<string, unknown> }) => ({ xs: Array.from({ length: c.input['n'] as number }, (_, i) => i) }),
  e: (c: { input: Record<string, unknown> }) => ({ y: (c.input['x'] as number) * 2 }),
  s: (c: { input: Record<string, unknown> }) => ({ total: (c.input['ys'] as number[]).reduce((a, b) => a + b, 0) }),
};
const dir = mkdtempSync(join(tmpdir(), 'heap-'));
const s = openSqliteStore(join(dir, 'h.db'), { sync: 'normal' });
const engine = createEngine({ store: s, concurrency: 16, agents, snapshotEvery: Number(process.env.SE ?? 1000) });
const peak = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
let last = 0; const t0 = performance.now(); const t = setInterval(() => { const m = process.memoryUsage(); if (process.env.TRACE && performance.now() - last > 200) { last = performance.now(); console.log(Math.round(last - t0), Math.round(m.rss / 1e6), Math.round(m.heapUsed / 1e6)); } for (const k of Object.keys(peak) as (keyof typeof peak)[]) peak[k] = Math.max(peak[k], m[k]); }, 10);
const r = await engine.run(model, { trigger: { n: Number(process.argv[2] ?? 50000) } });
clearInterval(t);
console.log(r.status, Object.fromEntries(Object.entries(peak).map(([k, v]) => [k, Math.round(v / 1e6)])));
await engine.close();

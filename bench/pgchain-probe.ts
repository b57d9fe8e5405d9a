/** A probe (not part of `npm run bench`): one N-phase chain on PostgreSQL in this process, with the statements it sent per phase. `npx tsx bench/pgchain-probe.ts N` */
import pg from 'pg';
import { createEngine } from '../src/api/engine.js';
import { openStore } from '../src/api/store.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import { generateWorkflow } from './gen.js';
import { withDatabase } from './queue.js';

const n = Number(process.argv[2] ?? 500);
const counts = new Map<string, number>();
const orig = pg.Client.prototype.query as (...a: unknown[]) => unknown;
(pg.Client.prototype as unknown as { query: unknown }).query = function (this: unknown, ...a: unknown[]) {
  const q = a[0] as string | { text?: string; name?: string };
  const k = (typeof q === 'string' ? q : (q?.name ?? q?.text ?? '?')).replace(/\s+/g, ' ').slice(0, 70);
  counts.set(k, (counts.get(k) ?? 0) + 1);
  return orig.apply(this, a);
};
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const agents: Record<string, () => unknown> = {};
for (let i = 0; i < 10; i++) agents[`agent-${i}`] = () => OUT;
const m = parseWorkflow(generateWorkflow(n, 'chain')).model!;
await withDatabase('pgchain', async (url) => {
  const store = await openStore(url, { cwd: process.cwd() });
  let cmN = 0, cmMs = 0;
  const cm = store.commitMany!.bind(store);
  store.commitMany = async (items) => { const t = performance.now(); try { return await cm(items); } finally { cmN++; cmMs += performance.now() - t; } };
  for (let r = 0; r < 3; r++) {
    counts.clear();
    const engine = createEngine({ store, agents, concurrency: 1 });
    const t0 = performance.now();
    const res = await engine.run(m, { trigger: { topic: 't' } });
    const ms = performance.now() - t0;
    await engine.close();
    console.log(`pg chain ${n}: ${res.status} ${ms.toFixed(0)} ms ${(ms * 1000 / n).toFixed(0)} µs/phase; commitMany ${cmN} calls, ${(cmMs * 1000 / Math.max(1, cmN)).toFixed(0)} µs each`);
    cmN = 0; cmMs = 0;
  }
  for (const [k, v] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(String(v).padStart(7), (v / n).toFixed(2), k);
  await store.close();
});

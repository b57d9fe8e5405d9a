/** A probe (not part of `npm run bench`): K runs of a P-phase chain started at once on one engine. `npx tsx bench/many-probe.ts memory|sqlite|pg K [P]` */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, openStore } from '../src/index.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import { generateWorkflow } from './gen.js';

const [kind = 'memory', kS = '2000', pS = '3'] = process.argv.slice(2);
const k = Number(kS);
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const agents: Record<string, () => unknown> = {};
for (let i = 0; i < 10; i++) agents[`agent-${i}`] = () => OUT;
const m = parseWorkflow(generateWorkflow(Number(pS), 'chain')).model!;
const dir = mkdtempSync(join(tmpdir(), 'many-'));
const spec = kind === 'memory' ? 'memory' : kind === 'sqlite' ? join(dir, 'x.db') : process.env['PG'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const store = await openStore(spec, { cwd: dir, ...(kind === 'pg' ? { schema: `many_${process.pid}` } : {}) } as never);
const engine = createEngine({ store, agents });
const t0 = performance.now();
const handles = await Promise.all(Array.from({ length: k }, () => engine.start(m, { trigger: { topic: 't' } })));
const t1 = performance.now();
const results = await Promise.all(handles.map((h) => h.result()));
const t2 = performance.now();
const bad = results.filter((r) => r.status !== 'completed').length;
console.log(`${kind}: ${k} runs x ${pS} phases: start ${(t1 - t0).toFixed(0)} ms, all done ${(t2 - t0).toFixed(0)} ms, ${Math.round((k * Number(pS)) / ((t2 - t0) / 1000))} phases/s, not completed: ${bad}, rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`);
await engine.close();
await store.close();

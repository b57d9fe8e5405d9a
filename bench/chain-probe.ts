/** A probe (not part of `npm run bench`): one chain (or fan) run of N phases on a store, R times. `node --import tsx --import ./bench/dist-hooks.mjs bench/chain-probe.ts memory|full|normal N R [chain|fan|lattice]` */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/api/engine.js';
import type { RunStore } from '../src/engine/ports.js';
import { MemoryStore } from '../src/store/memory.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import { generateWorkflow, type Shape } from './gen.js';

const [kind = 'memory', nS = '2000', rS = '5', shape = 'chain'] = process.argv.slice(2);
const n = Number(nS);
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const agents: Record<string, () => unknown> = {};
for (let i = 0; i < 10; i++) agents[`agent-${i}`] = () => OUT;
const m = parseWorkflow(generateWorkflow(n, shape as Shape)).model!;
const dir = mkdtempSync(join(tmpdir(), 'probe-'));
for (let r = 0; r < Number(rS); r++) {
  const store: RunStore = kind === 'memory' ? new MemoryStore() : openSqliteStore(join(dir, `x${r}.db`), { sync: kind === 'full' ? 'full' : 'normal' });
  const engine = createEngine({ store, agents, concurrency: shape === 'chain' ? 1 : 64 });
  const t0 = performance.now();
  const res = await engine.run(m, { trigger: { topic: 't' } });
  const ms = performance.now() - t0;
  await engine.close();
  await store.close();
  console.log(`${kind} ${shape} ${n}: ${res.status} ${ms.toFixed(0)} ms, ${((ms * 1000) / n).toFixed(1)} µs/phase, ${Math.round((n / ms) * 1000)}/s`);
}

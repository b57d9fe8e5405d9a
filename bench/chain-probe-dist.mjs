// Probe on the built package (no tsx): node bench/chain-probe-dist.mjs N REPS [shape]
import { createEngine, MemoryStore, parseWorkflow } from '../dist/index.js';
import { generateWorkflow } from '/tmp/gen-dist.mjs';
const [nS = '2000', rS = '30', shape = 'chain'] = process.argv.slice(2);
const n = Number(nS);
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const agents = {};
for (let i = 0; i < 10; i++) agents[`agent-${i}`] = () => OUT;
const m = parseWorkflow(generateWorkflow(n, shape)).model;
let best = Infinity;
for (let r = 0; r < Number(rS); r++) {
  const store = new MemoryStore();
  const engine = createEngine({ store, agents, concurrency: shape === 'chain' ? 1 : 64 });
  const t0 = performance.now();
  const res = await engine.run(m, { trigger: { topic: 't' } });
  const ms = performance.now() - t0;
  await engine.close();
  if (res.status !== 'completed') throw new Error(res.status);
  best = Math.min(best, ms);
}
console.log(`memory ${shape} ${n}: best ${best.toFixed(1)} ms, ${((best * 1000) / n).toFixed(1)} µs/phase`);

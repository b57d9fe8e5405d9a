/**
 * Executor overhead: no-op agents over generated DAGs of 1,000 and 10,000 phases in three shapes
 * (a chain, a wide fan-out/fan-in, a layered lattice with typed wiring). Reports microseconds per
 * phase (compile excluded; wiring, claim and completion validation, events and store included),
 * the 10k/1k ratio (linear = 10) and memory. Target on the 2-core reference machine: at most
 * 20 µs per phase in memory, linear growth.
 */
import { runWorkflow } from '../src/api/run.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import { generateWorkflow, type Shape } from './gen.js';

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const noop = (): unknown => OUT;

async function measure(shape: Shape, n: number): Promise<{ ms: number; heapMb: number; events: number }> {
  const compiled = parseWorkflow(generateWorkflow(n, shape));
  if (!compiled.model) throw new Error(`generated ${shape} workflow is invalid: ${compiled.diagnostics[0]?.message}`);
  const model = compiled.model;
  const agents: Record<string, () => unknown> = {};
  for (let i = 0; i < 10; i++) agents[`agent-${i}`] = noop;
  // warm-up run, then the best of several (small runs are noisy)
  await runWorkflow(model, { agents, trigger: { topic: 't' }, concurrency: 64 });
  let best = Infinity;
  let heapMb = 0;
  let events = 0;
  for (let r = 0; r < (n <= 1_000 ? 15 : 4); r++) {
    gc();
    const before = process.memoryUsage().heapUsed;
    const t0 = performance.now();
    const result = await runWorkflow(model, { agents, trigger: { topic: 't' }, concurrency: 64 });
    const ms = performance.now() - t0;
    if (result.status !== 'completed') throw new Error(`run ${result.status}: ${result.error?.message}`);
    heapMb = Math.max(heapMb, (process.memoryUsage().heapUsed - before) / 1e6);
    events = result.events.length;
    best = Math.min(best, ms);
  }
  return { ms: best, heapMb, events };
}

const rows: string[][] = [['shape', 'phases', 'run time', 'per phase', 'events', 'heap held by the run']];
for (const shape of ['chain', 'fan', 'lattice'] as Shape[]) {
  const t: Record<number, number> = {};
  for (const n of [1_000, 10_000, 20_000]) {
    const m = await measure(shape, n);
    t[n] = m.ms;
    rows.push([shape, n.toLocaleString(), `${m.ms.toFixed(1)} ms`, `${((m.ms * 1000) / n).toFixed(1)} µs`, m.events.toLocaleString(), `${m.heapMb.toFixed(1)} MB`]);
  }
  rows.push([shape, '10k / 1k', (t[10_000]! / t[1_000]!).toFixed(2), '(linear = 10)', '', '']);
  rows.push([shape, '20k / 10k', (t[20_000]! / t[10_000]!).toFixed(2), '(linear = 2)', '', '']);
}
rows.push(['process peak RSS', '', `${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`, '', '', '']);

const w = rows[0]!.map(() => 0);
for (const r of rows) r.forEach((c, i) => (w[i] = Math.max(w[i]!, c.length)));
for (const r of rows) console.log(r.map((c, i) => c.padEnd(w[i]!)).join('  '));

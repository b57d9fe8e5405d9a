/**
 * What tracing costs: no-op agents over generated 1,000-phase workflows (a chain and a wide fan),
 * in memory, with telemetry off, and on with an in-memory exporter behind a batch processor, as the
 * OTLP exporter is (every span built and exported, the flush at the end included: the SDK's work, not a
 * collector's network). Reports µs per phase, the on/off ratio and the spans
 * made per phase. Figures only: a bench never fails on timing.
 */
import { loadavg } from 'node:os';
import { BatchSpanProcessor, InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { runWorkflow } from '../src/api/run.js';
import { createOtelTelemetry } from '../src/telemetry/otel.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import { generateWorkflow, type Shape } from './gen.js';

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const noop = (): unknown => OUT;
const N = 1_000;

/** Off and on alternate, round after round (a loaded machine slows both alike), best of each kept. */
async function measure(shape: Shape): Promise<{ off: number; on: number; spans: number }> {
  const compiled = parseWorkflow(generateWorkflow(N, shape));
  if (!compiled.model) throw new Error(`generated ${shape} workflow is invalid`);
  const agents: Record<string, () => unknown> = {};
  for (let i = 0; i < 10; i++) agents[`agent-${i}`] = noop;
  const best = { off: Infinity, on: Infinity };
  let spans = 0;
  for (let r = 0; r < 16; r++) {
    for (const traced of [false, true]) {
      const exporter = new InMemorySpanExporter();
      const telemetry = traced ? await createOtelTelemetry({ spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 10_000, maxExportBatchSize: 512 })], env: {} }) : undefined;
      gc();
      const t0 = performance.now();
      // runWorkflow closes its engine, which flushes the telemetry: the export is inside the time
      const result = await runWorkflow(compiled.model, { agents, trigger: { topic: 't' }, concurrency: 64, ...(telemetry ? { telemetry } : {}) });
      const ms = performance.now() - t0;
      if (result.status !== 'completed') throw new Error(`run ${result.status}`);
      // the first round warms up
      if (r === 0) continue;
      if (traced) {
        best.on = Math.min(best.on, ms);
        spans = exporter.getFinishedSpans().length;
      } else best.off = Math.min(best.off, ms);
    }
  }
  return { ...best, spans };
}

const rows: string[][] = [['shape', 'phases', 'tracing', 'run time', 'per phase', 'spans', 'on / off']];
for (const shape of ['chain', 'fan'] as Shape[]) {
  const m = await measure(shape);
  rows.push([shape, N.toLocaleString(), 'off', `${m.off.toFixed(1)} ms`, `${((m.off * 1000) / N).toFixed(1)} µs`, '0', '']);
  rows.push([shape, N.toLocaleString(), 'on (in-memory exporter)', `${m.on.toFixed(1)} ms`, `${((m.on * 1000) / N).toFixed(1)} µs`, m.spans.toLocaleString(), (m.on / m.off).toFixed(2)]);
  rows.push([shape, '', 'tracing cost', '', `${(((m.on - m.off) * 1000) / N).toFixed(1)} µs / phase`, '', '']);
}
rows.push(['load average (1 min)', '', '', loadavg()[0]!.toFixed(2), '', '', '']);

const w = rows[0]!.map(() => 0);
for (const r of rows) r.forEach((c, i) => (w[i] = Math.max(w[i]!, c.length)));
for (const r of rows) console.log(r.map((c, i) => c.padEnd(w[i]!)).join('  '));

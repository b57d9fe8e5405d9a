import { describe, expect, test } from 'vitest';
import { createEngine } from '../api/engine.js';
import { AgentError } from '../engine/agent.js';
import { MemoryStore } from '../store/memory.js';
import { parseWorkflow } from '../workflow/compile.js';
import type { WorkflowModel } from '../workflow/model.js';
import { ServerMetrics } from './metrics.js';

function wf(text: string): WorkflowModel {
  const r = parseWorkflow(text);
  if (!r.model) throw new Error(JSON.stringify(r.diagnostics));
  return r.model;
}

const CHAIN = wf(`
openintent: "1.0"
info: {name: chain}
workflow:
  a: {assign: x, outputs: {n: number}}
  b: {assign: y, depends_on: [a], outputs: {n: number}, retry: {max_attempts: 2, initial_delay_ms: 0}}
  c: {assign: x, depends_on: [b], outputs: {n: number}}
`);
const GATED = wf(`
openintent: "1.0"
info: {name: gated}
governance:
  require_approval: {approvers: [alice]}
workflow:
  a: {assign: x, outputs: {n: number}}
`);

/** `name{labels} value` lines of one series, as a map from the label text to the value. */
function series(text: string, name: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    const r = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (r) m.set(r[1] ?? '', Number(r[2]));
  }
  return m;
}

describe('/metrics after runs', () => {
  test('phases completed and per second, attempts started and failed, the latency histogram, queue depth by agent and open gates', async () => {
    let now = 1_000_000;
    const clock = { now: () => now, sleep: (ms: number, signal?: AbortSignal) => new Promise<void>((resolve, reject) => { if (signal?.aborted) return reject(signal.reason as Error); const t = setTimeout(resolve, 0); signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason as Error); }, { once: true }); }) };
    const metrics = new ServerMetrics(() => now);
    const store = new MemoryStore();
    let fails = 1;
    const engine = createEngine({
      store,
      clock,
      onEvent: metrics.onEvent,
      agents: {
        x: () => {
          now += 20; // each attempt of x takes 20 ms of the engine's clock
          return { n: 1 };
        },
        y: () => {
          now += 300;
          if (fails-- > 0) throw new AgentError('Flaky', 'once');
          return { n: 2 };
        },
      },
    });
    const r = await engine.run(CHAIN);
    expect(r.status).toBe('completed');
    // a run stored and not driven: its first task waits in the queue; a gated one waits on its gate
    await engine.start(CHAIN, { detach: true });
    await engine.start(GATED, { detach: true });
    const text = await metrics.render(store);
    await engine.close();

    expect(series(text, 'baton_phases_completed_total')).toEqual(new Map([['{agent="x"}', 2], ['{agent="y"}', 1]]));
    // three completions within the last minute of the engine's clock
    expect(series(text, 'baton_phases_per_second').get('')).toBeCloseTo(3 / 60, 3);
    expect(series(text, 'baton_attempts_started_total')).toEqual(new Map([['{agent="x"}', 2], ['{agent="y"}', 2]]));
    expect(series(text, 'baton_attempts_failed_total')).toEqual(new Map([['{agent="y"}', 1]]));
    const count = series(text, 'baton_attempt_duration_seconds_count');
    expect(count.get('{agent="x",outcome="completed"}')).toBe(2);
    expect(count.get('{agent="y",outcome="failed"}')).toBe(1);
    expect(count.get('{agent="y",outcome="completed"}')).toBe(1);
    const buckets = series(text, 'baton_attempt_duration_seconds_bucket');
    // x's attempts took 20 ms: not in the 10 ms bucket, in the 25 ms one; y's 300 ms ones beyond 0.25 s
    expect(buckets.get('{agent="x",outcome="completed",le="0.01"}')).toBe(0);
    expect(buckets.get('{agent="x",outcome="completed",le="0.025"}')).toBe(2);
    expect(buckets.get('{agent="y",outcome="completed",le="0.25"}')).toBe(0);
    expect(buckets.get('{agent="y",outcome="completed",le="0.5"}')).toBe(1);
    expect(series(text, 'baton_attempt_duration_seconds_sum').get('{agent="x",outcome="completed"}')).toBeCloseTo(0.04, 6);
    expect(series(text, 'baton_queue_depth')).toEqual(new Map([['{agent="x"}', 1]]));
    expect(series(text, 'baton_gates_open').get('{kind="run"}')).toBe(1);
    expect(series(text, 'baton_runs_active')).toEqual(new Map([['{status="running"}', 1], ['{status="waiting"}', 1]]));
    // every series has its HELP and TYPE
    for (const name of ['baton_phases_per_second', 'baton_attempts_started_total', 'baton_queue_depth', 'baton_gates_open', 'baton_attempt_duration_seconds']) expect(text).toContain(`# TYPE ${name} `);

    // a minute later with nothing completed, the rate is 0
    now += 61_000;
    expect(series(await metrics.render(store), 'baton_phases_per_second').get('')).toBe(0);
  });

  test('a fan-out phase and a phase that failed before any attempt count under their agent, not `unknown`', async () => {
    const metrics = new ServerMetrics();
    const store = new MemoryStore();
    const engine = createEngine({ store, onEvent: metrics.onEvent, agents: { x: () => ({ n: 1 }), y: () => ({ n: 2 }) } });
    const fan = wf(`
openintent: "1.0"
info: {name: fan}
workflow:
  each: {assign: x, for_each: $trigger.items, outputs: {n: number}}
  after: {assign: y, depends_on: [each], inputs: {m: $trigger.missing}, outputs: {n: number}}
`);
    const r = await engine.run(fan, { trigger: { items: [1, 2] } });
    expect(r.status).toBe('failed');
    const text = await metrics.render(store);
    await engine.close();
    // two items and the phase that gathers them (it settles without an attempt); `after` failed at claim time
    expect(series(text, 'baton_phases_completed_total')).toEqual(new Map([['{agent="x"}', 3]]));
    expect(series(text, 'baton_phases_failed_total')).toEqual(new Map([['{agent="y"}', 1]]));
  });

  test('the gauges count every active run, not the newest 1,000; a plain run costs no state read', async () => {
    const metrics = new ServerMetrics();
    const store = new MemoryStore();
    const engine = createEngine({ store, agents: { x: () => ({ n: 1 }), y: () => ({ n: 2 }) } });
    // 1,500 runs stored and not driven (each first task waits for a worker), and one gated
    for (let i = 0; i < 1_500; i += 100) await Promise.all(Array.from({ length: 100 }, () => engine.start(CHAIN, { detach: true })));
    await engine.start(GATED, { detach: true });
    let reads = 0;
    const events = store.events.bind(store);
    store.events = (...args: Parameters<MemoryStore['events']>) => ((reads++), events(...args));
    const readState = store.readState.bind(store);
    store.readState = (...args: Parameters<MemoryStore['readState']>) => ((reads++), readState(...args));
    const text = await metrics.render(store);
    await engine.close();
    expect(series(text, 'baton_queue_depth')).toEqual(new Map([['{agent="x"}', 1_500]]));
    expect(series(text, 'baton_runs_active')).toEqual(new Map([['{status="running"}', 1_500], ['{status="waiting"}', 1]]));
    expect(series(text, 'baton_gates_open').get('{kind="run"}')).toBe(1);
    // the gated run's state only
    expect(reads).toBe(1);
  });
});

/** The run handle: result, status, cancel, and events as an async iterator resumable from a seq. */
import { describe, expect, test } from 'vitest';
import type { RunEvent } from '../engine/events.js';
import { MemoryStore } from '../store/memory.js';
import { createEngine } from './engine.js';
import { WorkflowSpec } from './spec.js';

const spec = WorkflowSpec.fromString(`openintent: "1.0"
info: {name: "Handle"}
workflow:
  a: {assign: w, inputs: {n: $trigger.n}, outputs: {n: number}}
  b: {assign: w, depends_on: [a], inputs: {n: a.n}, outputs: {n: number}}
`);
const agents = { w: (ctx: { input: unknown }) => ({ n: (ctx.input as { n: number }).n + 1 }) };

async function collect(it: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

describe('engine.start() returns a run handle', () => {
  test('result() resolves at the end; events() yields every event in order and ends with the run', async () => {
    await using engine = createEngine({ store: new MemoryStore(), agents });
    const run = await engine.start(spec, { trigger: { n: 1 } });
    const [events, result] = await Promise.all([collect(run.events()), run.result()]);
    expect(result.status).toBe('completed');
    expect(result.phases['b']?.output).toEqual({ n: 3 });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)?.type).toBe('run.completed');
    expect(await run.status()).toBe('completed');
    expect(run.result()).toBe(run.result());
  });

  test('events({ after }) resumes after a seq; after the end it yields nothing and ends', async () => {
    await using engine = createEngine({ store: new MemoryStore(), agents });
    const run = await engine.start(spec, { trigger: { n: 1 } });
    await run.result();
    const all = await collect(run.events());
    const rest = await collect(run.events({ after: 3 }));
    expect(rest).toEqual(all.slice(3));
    expect(await collect(run.events({ after: all.at(-1)!.seq }))).toEqual([]);
  });

  test('a detached run is observed while another engine on the same store drives it', async () => {
    const store = new MemoryStore();
    await using starter = createEngine({ store, agents });
    await using worker = createEngine({ store, agents });
    const run = await starter.start(spec, { trigger: { n: 5 }, detach: true });
    expect(await run.status()).toBe('running');
    const seen = collect(run.events());
    const result = await worker.handle(run.id).result();
    expect(result.status).toBe('completed');
    expect((await seen).at(-1)?.type).toBe('run.completed');
  });

  test('cancel() ends the run as cancelled; the iterator ends on run.cancelled', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await using engine = createEngine({
      store: new MemoryStore(),
      agents: { w: async (ctx) => { await Promise.race([held, new Promise((r) => ctx.signal.addEventListener('abort', r))]); return { n: 0 }; } },
    });
    const run = await engine.start(spec, { trigger: { n: 1 } });
    const seen = collect(run.events());
    await run.cancel('enough');
    const result = await run.result();
    release();
    expect(result.status).toBe('cancelled');
    const events = await seen;
    expect(events.at(-1)).toMatchObject({ type: 'run.cancelled', reason: 'enough' });
  });

  test('an AbortSignal ends the iteration quietly; a bad seq and an unknown run are faults with codes', async () => {
    const store = new MemoryStore();
    await using engine = createEngine({ store, agents });
    const run = await engine.start(spec, { trigger: { n: 1 }, detach: true });
    const ctl = new AbortController();
    const got: RunEvent[] = [];
    for await (const e of run.events({ signal: ctl.signal })) {
      got.push(e);
      ctl.abort();
    }
    expect(got.map((e) => e.type)).toEqual(['run.started']);
    await expect(collect(run.events({ after: -1 }))).rejects.toMatchObject({ code: 'usage' });
    await expect(collect(engine.handle('run_nope').events())).rejects.toMatchObject({ code: 'unknown-run' });
    await expect(engine.handle('run_nope').status()).rejects.toMatchObject({ code: 'unknown-run' });
  });

  test('a workflow with x-trigger refuses a trigger that does not fit it before anything is stored', async () => {
    const store = new MemoryStore();
    await using engine = createEngine({ store, agents });
    const typed = WorkflowSpec.fromString('openintent: "1.0"\ninfo: {name: T}\nx-trigger: {n: number}\nworkflow:\n  a: {assign: w, inputs: {n: $trigger.n}, outputs: {n: number}}\n');
    await expect(engine.start(typed, { trigger: { n: 'one' } })).rejects.toMatchObject({ code: 'usage', message: expect.stringMatching(/x-trigger.*\/n/) as unknown });
    await expect(engine.start(typed)).rejects.toMatchObject({ code: 'usage', message: expect.stringMatching(/^no trigger was given/) as unknown });
    expect(await store.runs()).toEqual([]);
    expect((await (await engine.start(typed, { trigger: { n: 1 } })).result()).status).toBe('completed');
  });

  test('engines and stores are AsyncDisposable', async () => {
    const store = new MemoryStore();
    let closed = 0;
    const engine = createEngine({ store, agents });
    const close = engine.close.bind(engine);
    engine.close = () => (closed++, close());
    {
      await using _e = engine;
    }
    expect(closed).toBe(1);
    expect(typeof store[Symbol.asyncDispose]).toBe('function');
  });
});

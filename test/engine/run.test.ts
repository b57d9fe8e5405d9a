import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { MemoryStore } from '../../src/store/memory.js';
import { parseWorkflow } from '../../src/workflow/compile.js';
import type { WorkflowModel } from '../../src/workflow/model.js';
import { AgentError, type AgentContext, type AgentHandler } from '../../src/engine/agent.js';
import type { RunEvent } from '../../src/engine/events.js';
import { runWorkflow, type RunOptions } from '../../src/api/run.js';
import { subprocessAgent } from '../../src/agents/subprocess.js';
import { replay } from '../../src/engine/state.js';
import { toResult } from '../../src/engine/result.js';
import { createEngine } from '../../src/api/engine.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function wf(yaml: string): WorkflowModel {
  const r = parseWorkflow(yaml);
  if (!r.ok) throw new Error(r.diagnostics.map((d) => `${d.code}: ${d.message}`).join('\n'));
  return r.model;
}

function header(extra = ''): string {
  return `openintent: "1.0"\ninfo: {name: "T"}\n${extra}\n`;
}

async function run(model: WorkflowModel, agents: Record<string, AgentHandler>, opts: Partial<RunOptions> = {}) {
  const store = new MemoryStore();
  const result = await runWorkflow(model, { ...opts, agents, store });
  return { result, store, types: result.events.map((e) => `${e.type}${'phase' in e ? ` ${e.phase}` : ''}`) };
}

function deferred<T = unknown>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Runs with a manual clock, advancing time until the run ends (no real sleeps). */
async function runWithClock(model: WorkflowModel, agents: Record<string, AgentHandler>, clock: ManualClock, opts: Partial<RunOptions> = {}) {
  let done = false;
  // a long lease: heartbeats would otherwise be most of the clock's sleepers
  const p = runWorkflow(model, { agents, store: new MemoryStore(), clock, leaseMs: 86_400_000, ...opts }).finally(() => (done = true));
  for (let i = 0; i < 1000 && !done; i++) if (!(await clock.tick())) await new Promise((r) => setImmediate(r));
  return p;
}

const PIPELINE = wf(`${header()}
types:
  Finding: {source: string, confidence: number}
workflow:
  research:
    assign: researcher
    inputs: {topic: $trigger.topic, depth: $initial_state.depth}
    initial_state: {depth: 2}
    outputs: {findings: "Finding[]", summary: string}
  analysis:
    assign: analyst
    depends_on: [research]
    inputs: {items: research.findings}
    outputs: {score: number}
  report:
    assign: writer
    depends_on: [analysis, research]
    inputs: {score: analysis.score, summary: research.summary}
  audit:
    assign: writer
`);

describe('wiring (RFC-0024 §3.2)', () => {
  test('each agent receives exactly its declared inputs; no inputs means {}', async () => {
    const seen: Record<string, unknown> = {};
    const agents: Record<string, AgentHandler> = {
      researcher: (ctx) => {
        seen['research'] = ctx.input;
        return { findings: [{ source: 'a', confidence: 0.9 }], summary: 's', extra: 1 };
      },
      analyst: (ctx) => {
        seen['analysis'] = ctx.input;
        return { score: 3 };
      },
      writer: (ctx) => {
        seen[ctx.phase] = ctx.input;
        return {};
      },
    };
    const { result } = await run(PIPELINE, agents, { trigger: { topic: 'solar', other: 1 } });
    expect(result.status).toBe('completed');
    expect(seen['research']).toEqual({ topic: 'solar', depth: 2 });
    expect(seen['analysis']).toEqual({ items: [{ source: 'a', confidence: 0.9 }] });
    expect(seen['report']).toEqual({ score: 3, summary: 's' });
    expect(seen['audit']).toEqual({});
    expect(result.phases['research']!.output).toEqual({ findings: [{ source: 'a', confidence: 0.9 }], summary: 's', extra: 1 });
    const completed = result.events.find((e) => e.type === 'task.completed' && e.phase === 'research');
    expect(completed).toMatchObject({ extra_keys: ['extra'] });
    expect(result.phases['analysis']).toMatchObject({ status: 'completed', attempts: 1, input: { items: [{ source: 'a', confidence: 0.9 }] } });
  });

  test('a mutated ctx.input cannot corrupt the recorded upstream output', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {list: array}}
  b: {assign: y, depends_on: [a], inputs: {list: a.list}}
  c: {assign: z, depends_on: [b, a], inputs: {list: a.list}}`);
    let cSaw: unknown;
    const { result } = await run(model, {
      x: () => ({ list: [1] }),
      y: (ctx) => {
        (ctx.input['list'] as number[]).push(2);
        return {};
      },
      z: (ctx) => {
        cSaw = ctx.input['list'];
        return {};
      },
    });
    expect(result.status).toBe('completed');
    expect(cSaw).toEqual([1]);
    expect(result.phases['a']!.output).toEqual({ list: [1] });
  });

  test('events are ordered and the state replays from them', async () => {
    const { result, store } = await run(PIPELINE, {
      researcher: () => ({ findings: [], summary: 's' }),
      analyst: () => ({ score: 1 }),
      writer: () => ({}),
    }, { trigger: { topic: 't' } });
    expect(result.events.map((e) => e.seq)).toEqual(result.events.map((_, i) => i + 1));
    const stored = await store.events(result.runId);
    expect(stored).toEqual(result.events);
    const again = toResult(replay(result.runId, stored), [...stored]);
    expect(again).toEqual(result);
    expect(result.events[0]!.type).toBe('run.started');
    expect(result.events.at(-1)!.type).toBe('run.completed');
  });

  test('keepEvents: false leaves the log in the store only; the result is otherwise the same', async () => {
    const agents = { researcher: () => ({ findings: [], summary: 's' }), analyst: () => ({ score: 1 }), writer: () => ({}) };
    for (const store of [new MemoryStore(), openSqliteStore(join(mkdtempSync(join(tmpdir(), 'baton-keep-')), 'r.db'))]) {
      const e = createEngine({ store, agents });
      const kept = await e.run(PIPELINE, { trigger: { topic: 't' } });
      const lean = await e.run(PIPELINE, { trigger: { topic: 't' }, keepEvents: false });
      expect(kept.events.length).toBeGreaterThan(5);
      expect(lean.events).toEqual([]);
      expect(lean.status).toBe('completed');
      expect(Object.keys(lean.phases)).toEqual(Object.keys(kept.phases));
      const stored = await store.events(lean.runId);
      expect(toResult(replay(lean.runId, stored), [])).toEqual(lean);
      // resume() and drive() take the same option; a run already ended answers at once
      expect((await e.resume(lean.runId, undefined, { keepEvents: false })).events).toEqual([]);
      expect((await e.resume(lean.runId)).events).toEqual(stored);
      await e.close();
      await store.close();
    }
    // the one-call form passes it on
    const one = await runWorkflow(PIPELINE, { agents, trigger: { topic: 't' }, keepEvents: false });
    expect(one.status).toBe('completed');
    expect(one.events).toEqual([]);
  });
});

describe('scheduling', () => {
  const FAN = wf(`${header()}workflow:
  a: {assign: x}
  b: {assign: x}
  c: {assign: x}
  join: {assign: y, depends_on: [a, b, c]}`);

  test('independent phases run at the same time', async () => {
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof deferred>>();
    let joinSaw: string[] = [];
    const p = run(FAN, {
      x: async (ctx) => {
        started.push(ctx.phase);
        const g = deferred();
        gates.set(ctx.phase, g);
        await g.promise;
        return {};
      },
      y: () => {
        joinSaw = [...started];
        return {};
      },
    });
    await new Promise((r) => setImmediate(r));
    expect(started.sort()).toEqual(['a', 'b', 'c']); // all three in flight before any finished
    for (const g of gates.values()) g.resolve(undefined);
    const { result } = await p;
    expect(result.status).toBe('completed');
    expect(joinSaw.length).toBe(3);
  });

  test('concurrency bounds the attempts in flight', async () => {
    let inFlight = 0;
    let peak = 0;
    const { result } = await run(
      FAN,
      {
        x: async () => {
          inFlight++;
          peak = Math.max(peak, inFlight);
          await new Promise((r) => setImmediate(r));
          inFlight--;
          return {};
        },
        y: () => ({}),
      },
      { concurrency: 1 },
    );
    expect(result.status).toBe('completed');
    expect(peak).toBe(1);
  });

  test('a long chain of cascading skips does not overflow the stack', async () => {
    const n = 5000;
    const phases = [`  p0: {assign: x, skip_when: "true", outputs: {v: number}}`];
    for (let i = 1; i < n; i++) phases.push(`  p${i}: {assign: x, depends_on: [p${i - 1}], inputs: {v: p${i - 1}.v}, outputs: {v: number}}`);
    const model = wf(`${header()}workflow:\n${phases.join('\n')}`);
    const { result } = await run(model, { x: () => ({ v: 1 }) });
    expect(result.status).toBe('completed');
    expect(result.phases[`p${n - 1}`]).toMatchObject({ status: 'skipped', skipped_reason: 'upstream_skipped' });
  });
});

describe('completion-time validation (§3.3)', () => {
  const M = wf(`${header()}
types:
  Finding: {source: string, confidence: number}
workflow:
  research: {assign: r, outputs: {findings: "Finding[]", summary: string}}
  next: {assign: n, depends_on: [research], inputs: {f: research.findings}}
  free: {assign: f}`);

  test('a missing key is a task.rejected MissingOutputError; the phase fails after one attempt; dependents fail', async () => {
    const { result } = await run(M, { r: () => ({ findings: [] }), n: () => ({}), f: () => 'anything goes?' });
    const rejected = result.events.find((e) => e.type === 'task.rejected');
    expect(rejected).toMatchObject({
      type: 'task.rejected',
      phase: 'research',
      attempt: 1,
      error: { error: 'MissingOutputError', task_id: result.phases['research']!.task_id, phase_name: 'research', missing_keys: ['summary'] },
    });
    expect(Object.keys((rejected as { error: object }).error)).toEqual(['error', 'task_id', 'phase_name', 'missing_keys', 'issues', 'message']);
    expect(result.phases['research']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'MissingOutputError' } });
    expect(result.phases['next']).toMatchObject({ status: 'failed', error: { code: 'UpstreamFailed' } });
    expect(result.phases['free']).toMatchObject({ status: 'failed', error: { code: 'OutputTypeMismatchError' } });
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('MissingOutputError');
  });

  test('a deep type mismatch names the key, the types and the pointer', async () => {
    const { result } = await run(M, { r: () => ({ findings: [{ source: 'a', confidence: '0.9' }], summary: 's' }), n: () => ({}), f: () => ({}) });
    const rejected = result.events.find((e) => e.type === 'task.rejected') as Extract<RunEvent, { type: 'task.rejected' }>;
    expect(rejected.error).toMatchObject({ error: 'OutputTypeMismatchError', phase_name: 'research', key: 'findings', expected_type: 'Finding[]' });
    expect(rejected.error['issues']).toEqual([expect.objectContaining({ pointer: '/findings/0/confidence', expected: 'number', actual: 'string' })]);
  });

  test('an agent may return nothing (§9): accepted without outputs declared, MissingOutputError with required ones', async () => {
    const N = wf(`${header()}workflow:
  free: {assign: x}
  optional: {assign: x, outputs: {k: {type: string, required: false}}}
  declared: {assign: x, outputs: {k: string, n: number}}`);
    const { result } = await run(N, { x: () => undefined });
    expect(result.phases['free']).toMatchObject({ status: 'completed', output: {} });
    expect(result.phases['optional']).toMatchObject({ status: 'completed', output: {} });
    expect(result.phases['declared']).toMatchObject({ status: 'failed', error: { code: 'MissingOutputError', details: { missing_keys: ['k', 'n'] } } });
    const async = await run(N, { x: () => Promise.resolve(undefined) });
    expect(async.result.phases['free']!.status).toBe('completed');
    // a subprocess that prints nothing, likewise
    const silent = subprocessAgent({ command: [process.execPath, '-e', ''] });
    try {
      const sub = await run(N, { x: silent.handler });
      expect(sub.result.phases['free']).toMatchObject({ status: 'completed', output: {} });
      expect(sub.result.phases['declared']).toMatchObject({ status: 'failed', error: { code: 'MissingOutputError' } });
    } finally {
      await silent.close();
    }
  });

  test('no coercion: a boolean is not a number, NaN is not JSON', async () => {
    const N = wf(`${header()}workflow:\n  a: {assign: x, outputs: {n: number}}`);
    for (const bad of [true, '5', NaN, Infinity, null]) {
      const { result } = await run(N, { x: () => ({ n: bad }) });
      expect(result.phases['a']!.status).toBe('failed');
    }
    const { result } = await run(N, { x: () => ({ n: 5 }) });
    expect(result.phases['a']!.status).toBe('completed');
  });
});

describe('retry, fallback, timeouts (injected clock)', () => {
  test('exponential backoff retries with the policy delays, then succeeds', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {ok: boolean}, retry: {max_attempts: 3, backoff: exponential, initial_delay_ms: 1000}}`);
    const clock = new ManualClock(0);
    let calls = 0;
    const result = await runWithClock(model, { x: () => (++calls < 3 ? {} : { ok: true }) }, clock);
    expect(result.status).toBe('completed');
    expect(result.phases['a']!.attempts).toBe(3);
    const retries = result.events.filter((e) => e.type === 'task.retrying');
    expect(retries.map((e) => (e as { delay_ms: number }).delay_ms)).toEqual([1000, 2000]);
    expect(clock.now()).toBe(3000);
  });

  test('linear and constant backoff, capped by max_delay_ms', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, retry: {max_attempts: 4, backoff: linear, initial_delay_ms: 100, max_delay_ms: 250}}
  b: {assign: x, retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 50}}`);
    const clock = new ManualClock(0);
    const result = await runWithClock(model, { x: () => { throw new Error('boom'); } }, clock);
    const delays = (p: string) => result.events.filter((e) => e.type === 'task.retrying' && e.phase === p).map((e) => (e as { delay_ms: number }).delay_ms);
    expect(delays('a')).toEqual([100, 200, 250]);
    expect(delays('b')).toEqual([50, 50]);
    expect(result.phases['a']).toMatchObject({ status: 'failed', attempts: 4, error: { code: 'Error', message: 'boom' } });
  });

  test('retryable_errors: an unlisted code is not retried; a listed one is', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, retry: {max_attempts: 3, initial_delay_ms: 1, retryable_errors: [RateLimited]}}
  b: {assign: y, retry: {max_attempts: 2, initial_delay_ms: 1, retryable_errors: [RateLimited]}}`);
    const clock = new ManualClock(0);
    let b = 0;
    const result = await runWithClock(
      model,
      {
        x: () => { throw new AgentError('BadRequest', 'no'); },
        y: () => { if (++b === 1) throw new AgentError('RateLimited', 'slow down'); return {}; },
      },
      clock,
    );
    expect(result.phases['a']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'BadRequest' } });
    expect(result.phases['b']).toMatchObject({ status: 'completed', attempts: 2 });
  });

  test('contract errors are retried under the policy and matched by name', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {v: number}, retry: {max_attempts: 2, initial_delay_ms: 10, retryable_errors: [MissingOutputError]}}`);
    const clock = new ManualClock(0);
    let n = 0;
    const result = await runWithClock(model, { x: () => (++n === 1 ? {} : { v: 1 }) }, clock);
    expect(result.status).toBe('completed');
    expect(result.events.map((e) => e.type)).toContain('task.rejected');
  });

  test('after max attempts the fallback agent gets the task', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {by: string}, retry: {max_attempts: 2, initial_delay_ms: 5, fallback_agent: y}}`);
    const clock = new ManualClock(0);
    const result = await runWithClock(model, { x: () => { throw new Error('down'); }, y: (ctx) => ({ by: ctx.agent }) }, clock);
    expect(result.phases['a']).toMatchObject({ status: 'completed', attempts: 3, agent: 'y', output: { by: 'y' } });
    const last = result.events.filter((e) => e.type === 'task.retrying').at(-1);
    expect(last).toMatchObject({ agent: 'y', next_attempt: 3 });
  });

  test('a phase timeout aborts the attempt through its signal and counts as an attempt', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, x-timeout_ms: 500, retry: {max_attempts: 2, initial_delay_ms: 100}}`);
    const clock = new ManualClock(0);
    const signals: AbortSignal[] = [];
    const result = await runWithClock(model, { x: (ctx) => { signals.push(ctx.signal); return new Promise(() => undefined); } }, clock);
    expect(result.phases['a']).toMatchObject({ status: 'failed', attempts: 2, error: { code: 'Timeout' } });
    expect(signals.every((s) => s.aborted)).toBe(true);
    // the agent ignores its signal: the next attempt waits for it for the abort grace (5 s), then a warning says so
    expect(clock.now()).toBe(500 + 5000 + 500);
    expect(result.events.filter((e) => e.type === 'task.warning').map((e) => (e as { code?: string }).code)).toContain('AbortIgnored');
  });

  test('the run timeout stops the run and cancels what is left', async () => {
    const model = wf(`${header('governance: {timeout_hours: 1}')}workflow:
  a: {assign: x}
  b: {assign: y, depends_on: [a]}`);
    const clock = new ManualClock(0);
    const result = await runWithClock(model, { x: () => new Promise(() => undefined), y: () => ({}) }, clock);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'RunTimeout' });
    expect(result.phases['a']!.status).toBe('cancelled');
    expect(result.phases['b']!.status).toBe('cancelled');
    expect(clock.now()).toBe(3_600_000);
  });
});

describe('skip_when', () => {
  const M = wf(`${header()}workflow:
  research: {assign: x, outputs: {findings: array}}
  deep_dive:
    assign: x
    depends_on: [research]
    skip_when: "research.findings.size() == 0 || trigger.fast"
    outputs: {notes: string}
  summary: {assign: x, depends_on: [deep_dive], inputs: {notes: deep_dive.notes}}
  publish: {assign: x, depends_on: [deep_dive]}`);

  test('a true condition skips the phase with its reason; required inputs from it skip too; others run', async () => {
    const ran: string[] = [];
    const { result } = await run(M, { x: (ctx) => { ran.push(ctx.phase); return ctx.phase === 'research' ? { findings: [] } : { notes: 'n' }; } }, { trigger: { fast: false } });
    expect(result.status).toBe('completed');
    expect(result.phases['deep_dive']).toMatchObject({ status: 'skipped', skipped_reason: 'skip_when' });
    expect(result.phases['summary']).toMatchObject({ status: 'skipped', skipped_reason: 'upstream_skipped' });
    expect(result.phases['publish']!.status).toBe('completed');
    expect(ran).toEqual(['research', 'publish']);
  });

  test('a false condition runs the phase; reading the trigger', async () => {
    const { result } = await run(M, { x: (ctx) => (ctx.phase === 'research' ? { findings: [1] } : { notes: 'n' }) }, { trigger: { fast: false } });
    expect(result.phases['deep_dive']!.status).toBe('completed');
    const fast = await run(M, { x: (ctx) => (ctx.phase === 'research' ? { findings: [1] } : { notes: 'n' }) }, { trigger: { fast: true } });
    expect(fast.result.phases['deep_dive']!.status).toBe('skipped');
  });

  test('a condition that cannot be evaluated fails the phase clearly', async () => {
    const { result } = await run(M, { x: (ctx) => (ctx.phase === 'research' ? { findings: [1] } : { notes: 'n' }) }, { trigger: {} });
    expect(result.phases['deep_dive']).toMatchObject({ status: 'failed', error: { code: 'SkipConditionError' } });
  });

  test('an optional output that was not returned: the error names it and the CEL test for it (has)', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {n: number, opt: {type: string, required: false}}}
  b: {assign: x, depends_on: [a], skip_when: 'a.opt == "x"'}
  c: {assign: x, depends_on: [a], skip_when: 'has(a.opt) && a.opt == "x"'}
`);
    const { result } = await run(model, { x: (ctx) => (ctx.phase === 'a' ? { n: 1 } : {}) });
    expect(result.phases['b']).toMatchObject({ status: 'failed', error: { code: 'SkipConditionError', message: expect.stringContaining('`a.opt` is an optional output that `a` did not return: test it first, `has(a.opt)`') as string } });
    expect(result.phases['c']!.status).toBe('completed');
  });
});

describe('claim-time validation (§3.1)', () => {
  test('an optional upstream output that was not returned: UnresolvableInputError event, the task fails, the run ends', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {maybe: {type: string, required: false}}}
  b: {assign: x, depends_on: [a], inputs: {m: a.maybe}}`);
    const { result } = await run(model, { x: () => ({}) });
    const rej = result.events.find((e) => e.type === 'task.claim_rejected') as Extract<RunEvent, { type: 'task.claim_rejected' }>;
    expect(rej.error).toEqual({
      error: 'UnresolvableInputError',
      task_id: result.phases['b']!.task_id,
      phase_name: 'b',
      unresolvable_refs: ['a.maybe'],
      message: "Task claim rejected: upstream phase 'a' did not record output key 'maybe'",
    });
    expect(result.phases['b']).toMatchObject({ status: 'failed', error: { code: 'UnresolvableInputError' } });
    expect(result.status).toBe('failed');
  });

  test('a missing trigger key is unresolvable', async () => {
    const model = wf(`${header()}workflow:\n  a: {assign: x, inputs: {q: $trigger.quarter}}`);
    const { result } = await run(model, { x: () => ({}) }, { trigger: {} });
    expect(result.phases['a']).toMatchObject({ status: 'failed', error: { code: 'UnresolvableInputError', details: { unresolvable_refs: ['$trigger.quarter'] } } });
  });
});

describe('budgets', () => {
  test('reportCost and _cost add up; an alert fires at the percent; over the phase budget the run stops', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, cost_tracking: {budget_usd: 1.0, alert_at_percent: 50}}
  b: {assign: y, depends_on: [a]}`);
    const { result } = await run(model, {
      x: (ctx) => {
        ctx.reportCost(0.6);
        return { _cost: 0.6, v: 1 };
      },
      y: () => ({}),
    });
    expect(result.events.find((e) => e.type === 'budget.alert')).toMatchObject({ scope: 'phase', phase: 'a', budget_usd: 1, percent: 60 });
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'BudgetExceededError', details: { error: 'BudgetExceededError', scope: 'phase', phase_name: 'a', budget_usd: 1, spent_usd: 1.2 } });
    expect(result.phases['b']!.status).toBe('cancelled');
    expect(result.cost_usd).toBe(1.2);
  });

  test('remainingBudgetUsd() right after reportCost() counts that report, before its commit; a phase budget and the run budget alike', async () => {
    const model = wf(`${header('governance: {max_cost_usd: 1}')}workflow:
  a: {assign: x, cost_tracking: {budget_usd: 0.5}}
  b: {assign: y, depends_on: [a]}`);
    const seen: (number | undefined)[] = [];
    const { result } = await run(model, {
      x: (ctx) => {
        seen.push(ctx.remainingBudgetUsd());
        ctx.reportCost(0.2);
        seen.push(ctx.remainingBudgetUsd());
        ctx.reportCost(0.2);
        seen.push(ctx.remainingBudgetUsd());
        return {};
      },
      y: async (ctx) => {
        seen.push(ctx.remainingBudgetUsd());
        ctx.reportCost(0.5);
        seen.push(ctx.remainingBudgetUsd());
        await Promise.resolve();
        return {};
      },
    });
    expect(result.status).toBe('completed');
    expect(seen.map((x) => Math.round(x! * 1e6) / 1e6)).toEqual([0.5, 0.3, 0.1, 0.6, 0.1]);
  });

  test('_cost is not recorded as an output; the run budget is governance.max_cost_usd', async () => {
    const model = wf(`${header('governance: {max_cost_usd: 1}')}workflow:
  a: {assign: x, outputs: {v: number}}
  b: {assign: x, depends_on: [a]}`);
    const ok = await run(model, { x: () => ({ v: 1, _cost: 0.25 }) });
    expect(ok.result.status).toBe('completed');
    expect(ok.result.phases['a']!.output).toEqual({ v: 1 });
    expect(ok.result.cost_usd).toBe(0.5);
    const over = await run(model, { x: () => ({ v: 1, _cost: 0.75 }) });
    expect(over.result.status).toBe('failed');
    expect(over.result.error).toMatchObject({ code: 'BudgetExceededError', details: { scope: 'run' } });
  });
});

describe('agents and context', () => {
  test('unbound agents fail before anything runs, listing them all', async () => {
    const store = new MemoryStore();
    await expect(runWorkflow(PIPELINE, { agents: { researcher: () => ({}) }, store })).rejects.toMatchObject({ code: 'unbound-agent', message: expect.stringMatching(/analyst.*writer/) as unknown });
    expect(await store.runs()).toEqual([]);
  });

  test('a handler bound under a misspelt name is named with the agent it was likely meant for', async () => {
    const store = new MemoryStore();
    const agents = { researcher: () => ({}), analyst: () => ({}), writr: () => ({}) };
    await expect(runWorkflow(PIPELINE, { agents, store })).rejects.toMatchObject({ code: 'unbound-agent', message: expect.stringMatching(/agent `writer`.*; `writr` is bound but no phase assigns it: did you mean `writer`\?$/) as unknown });
    expect(await store.runs()).toEqual([]);
  });

  test('an unbound x-remote agent is named as one that `baton serve` serves', async () => {
    const model = wf(`${header()}agents:
  local: {}
  far: {x-remote: true}
workflow:
  a: {assign: local, outputs: {n: number}}
  b: {assign: far, depends_on: [a], inputs: {n: a.n}, outputs: {m: string}}`);
    await expect(runWorkflow(model, { agents: { local: () => ({ n: 1 }) }, store: new MemoryStore() })).rejects.toMatchObject({ code: 'unbound-agent', message: expect.stringMatching(/`far` is `x-remote: true`.*baton serve/) as unknown });
  });

  test('getSiblingOutput is recorded; log lines are events; ctx carries ids and attempt', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {v: number}}
  b: {assign: y, depends_on: [a]}`);
    let ctxSeen: AgentContext | undefined;
    const { result } = await run(model, {
      x: () => ({ v: 7 }),
      y: (ctx) => {
        ctxSeen = ctx;
        ctx.log('hello');
        return { got: ctx.getSiblingOutput('a')?.['v'] ?? null };
      },
    });
    expect(result.phases['b']!.output).toEqual({ got: 7 });
    expect(result.events.find((e) => e.type === 'task.sibling_output')).toMatchObject({ phase: 'b', sibling: 'a', found: true });
    expect(result.events.find((e) => e.type === 'task.log')).toMatchObject({ phase: 'b', message: 'hello' });
    expect(ctxSeen).toMatchObject({ phase: 'b', runId: result.runId, taskId: result.phases['b']!.task_id, attempt: 1, agent: 'y' });
  });

  test('cancelling through the signal aborts running attempts and cancels the rest', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x}
  b: {assign: x, depends_on: [a]}`);
    const ctl = new AbortController();
    let aborted = false;
    const p = run(model, {
      x: (ctx) =>
        new Promise(() => {
          ctx.signal.addEventListener('abort', () => (aborted = true));
          ctl.abort(new Error('user pressed ^C'));
        }),
    }, { signal: ctl.signal });
    const { result } = await p;
    expect(result.status).toBe('cancelled');
    expect(aborted).toBe(true);
    expect(result.phases['a']!.status).toBe('cancelled');
    expect(result.phases['b']!.status).toBe('cancelled');
    expect(result.events.at(-1)).toMatchObject({ type: 'run.cancelled', reason: 'user pressed ^C' });
  });

  test('a non-retryable AgentError is not retried', async () => {
    const model = wf(`${header()}workflow:\n  a: {assign: x, retry: {max_attempts: 5}}`);
    const { result } = await run(model, { x: () => { throw new AgentError('Fatal', 'no way', { hint: 1 }, false); } });
    expect(result.phases['a']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'Fatal', retryable: false, details: { hint: 1 } } });
  });
});

/** Traces of runs and attempts (docs/telemetry.md), exported to an in-memory exporter and checked span by span. */
import { SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, test } from 'vitest';
import { runWorkflow } from '../../src/api/run.js';
import { AgentError } from '../../src/engine/agent.js';
import { attemptSpanIdOf, runSpanIdOf, traceIdOf } from '../../src/engine/telemetry.js';
import { parseWorkflow } from '../../src/workflow/compile.js';
import type { WorkflowModel } from '../../src/workflow/model.js';
import { byName, ms, parentOf, traced } from './helpers.js';

function wf(text: string): WorkflowModel {
  const r = parseWorkflow(text);
  if (!r.model) throw new Error(JSON.stringify(r.diagnostics));
  return r.model;
}

const CHAIN = wf(`
openintent: "1.0"
info: {name: chain}
workflow:
  plan: {assign: planner, outputs: {steps: number}}
  build: {assign: builder, depends_on: [plan], inputs: {steps: plan.steps}, outputs: {done: boolean}, retry: {max_attempts: 2, initial_delay_ms: 0}}
  check: {assign: checker, depends_on: [build], outputs: {ok: boolean}}
`);

describe('traces of a run', () => {
  test('a run of three phases: one invoke_workflow span, one attempt span per phase under it, in the trace derived from the run id', async () => {
    const t = traced();
    const r = await runWorkflow(CHAIN, {
      runId: 'run-trace-1',
      telemetry: t.telemetry,
      agents: { planner: () => ({ steps: 2 }), builder: (ctx) => ({ done: ctx.input['steps'] === 2 }), checker: () => ({ ok: true }) },
    });
    expect(r.status).toBe('completed');
    const spans = await t.spans();
    expect(spans.map((s) => s.name).sort()).toEqual(['baton.attempt build', 'baton.attempt check', 'baton.attempt plan', 'invoke_workflow chain']);
    const run = byName(spans, 'invoke_workflow chain')[0]!;
    const traceId = traceIdOf('run-trace-1', undefined);
    expect(run.spanContext().traceId).toBe(traceId);
    expect(run.spanContext().spanId).toBe(runSpanIdOf('run-trace-1'));
    expect(parentOf(run)).toBeUndefined();
    expect(run.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_workflow', 'baton.run.id': 'run-trace-1', 'baton.workflow': 'chain', 'baton.run.status': 'completed' });
    expect(run.status.code).not.toBe(SpanStatusCode.ERROR);
    let last = ms(run.startTime);
    for (const phase of ['plan', 'build', 'check']) {
      const s = byName(spans, `baton.attempt ${phase}`)[0]!;
      expect(s.spanContext().traceId).toBe(traceId);
      expect(s.spanContext().spanId).toBe(attemptSpanIdOf('run-trace-1', phase, 1));
      expect(parentOf(s)).toBe(run.spanContext().spanId);
      expect(s.attributes).toMatchObject({ 'baton.run.id': 'run-trace-1', 'baton.phase': phase, 'baton.attempt': 1, 'baton.outcome': 'completed' });
      // in order: the run starts, each attempt starts after the one before ended, the run ends last
      expect(ms(s.startTime)).toBeGreaterThanOrEqual(last);
      expect(ms(s.endTime)).toBeGreaterThanOrEqual(ms(s.startTime));
      last = ms(s.endTime);
    }
    expect(ms(run.endTime)).toBeGreaterThanOrEqual(last);
    expect(byName(spans, 'baton.attempt build')[0]!.attributes['baton.agent']).toBe('builder');
  });

  test('a failing attempt and its retry: two attempt spans, the first with status error and error.type, the run span last', async () => {
    const t = traced();
    let n = 0;
    const r = await runWorkflow(CHAIN, {
      runId: 'run-retry',
      telemetry: t.telemetry,
      agents: {
        planner: () => ({ steps: 1 }),
        builder: () => {
          if (++n === 1) throw new AgentError('Flaky', 'the first try fails');
          return { done: true };
        },
        checker: () => ({ ok: true }),
      },
    });
    expect(r.status).toBe('completed');
    const spans = await t.spans();
    const builds = byName(spans, 'baton.attempt build').sort((a, b) => Number(a.attributes['baton.attempt']) - Number(b.attributes['baton.attempt']));
    expect(builds.map((s) => s.attributes['baton.attempt'])).toEqual([1, 2]);
    expect(builds[0]!.status.code).toBe(SpanStatusCode.ERROR);
    expect(builds[0]!.attributes).toMatchObject({ 'error.type': 'Flaky', 'baton.outcome': 'failed', 'baton.retryable': true });
    expect(builds[1]!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(builds[1]!.spanContext().spanId).toBe(attemptSpanIdOf('run-retry', 'build', 2));
    expect(ms(builds[1]!.startTime)).toBeGreaterThanOrEqual(ms(builds[0]!.endTime));
  });

  test('a contract rejection is a span event on its attempt (the RFC-0024 error name and payload); a failed run is an error span', async () => {
    const t = traced();
    const r = await runWorkflow(CHAIN, {
      runId: 'run-reject',
      telemetry: t.telemetry,
      agents: { planner: () => ({ wrong: 1 }), builder: () => ({ done: true }), checker: () => ({ ok: true }) },
    });
    expect(r.status).toBe('failed');
    const spans = await t.spans();
    const plan = byName(spans, 'baton.attempt plan')[0]!;
    expect(plan.status.code).toBe(SpanStatusCode.ERROR);
    expect(plan.attributes['error.type']).toBe('MissingOutputError');
    expect(plan.events.map((e) => e.name)).toEqual(['baton.contract.rejected']);
    expect(plan.events[0]!.attributes).toMatchObject({ 'error.type': 'MissingOutputError', 'baton.error.error': 'MissingOutputError' });
    const run = byName(spans, 'invoke_workflow chain')[0]!;
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(run.attributes['baton.run.status']).toBe('failed');
    expect(byName(spans, 'baton.attempt build')).toEqual([]);
  });

  test('a claim-time rejection (UnresolvableInputError) is a span event on the run span, naming the phase; no attempt span for it', async () => {
    const t = traced();
    const r = await runWorkflow(
      wf(`
openintent: "1.0"
info: {name: unresolvable}
workflow:
  a: {assign: x, outputs: {maybe: {type: string, required: false}}}
  b: {assign: x, depends_on: [a], inputs: {m: a.maybe}}
`),
      { runId: 'run-claim-reject', telemetry: t.telemetry, agents: { x: () => ({}) } },
    );
    expect(r.status).toBe('failed');
    const spans = await t.spans();
    expect(spans.map((s) => s.name).sort()).toEqual(['baton.attempt a', 'invoke_workflow unresolvable']);
    const run = byName(spans, 'invoke_workflow unresolvable')[0]!;
    expect(run.events.map((e) => e.name)).toEqual(['baton.contract.rejected']);
    expect(run.events[0]!.attributes).toMatchObject({ 'error.type': 'UnresolvableInputError', 'baton.phase': 'b', 'baton.error.unresolvable_refs': ['a.maybe'] });
    expect(run.attributes['error.type']).toBe('UnresolvableInputError');
  });

  test('an incoming traceparent is the run span parent: the whole run joins that trace', async () => {
    const t = traced();
    const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await runWorkflow(CHAIN, { runId: 'run-parent', traceparent: parent, telemetry: t.telemetry, agents: { planner: () => ({ steps: 1 }), builder: () => ({ done: true }), checker: () => ({ ok: true }) } });
    const spans = await t.spans();
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set(['0af7651916cd43dd8448eb211c80319c']));
    const run = byName(spans, 'invoke_workflow chain')[0]!;
    expect(parentOf(run)).toBe('b7ad6b7169203331');
    expect(parentOf(byName(spans, 'baton.attempt plan')[0]!)).toBe(run.spanContext().spanId);
  });

  test('a malformed traceparent is ignored: the run has its own trace', async () => {
    const t = traced();
    await runWorkflow(CHAIN, { runId: 'run-bad-parent', traceparent: '00-zz-1-01', telemetry: t.telemetry, agents: { planner: () => ({ steps: 1 }), builder: () => ({ done: true }), checker: () => ({ ok: true }) } });
    const run = byName(await t.spans(), 'invoke_workflow chain')[0]!;
    expect(run.spanContext().traceId).toBe(traceIdOf('run-bad-parent', undefined));
    expect(parentOf(run)).toBeUndefined();
  });

  test('a fan-out item attempt carries baton.item', async () => {
    const t = traced();
    const r = await runWorkflow(
      wf(`
openintent: "1.0"
info: {name: fan}
workflow:
  list: {assign: lister, outputs: {xs: "number[]"}}
  each: {assign: worker, depends_on: [list], for_each: list.xs, inputs: {x: $item}, outputs: {y: number}}
`),
      { runId: 'run-fan', telemetry: t.telemetry, agents: { lister: () => ({ xs: [1, 2] }), worker: (ctx) => ({ y: Number(ctx.input['x']) * 2 }) } },
    );
    expect(r.status).toBe('completed');
    const items = byName(await t.spans(), 'baton.attempt each');
    expect(items.map((s) => s.attributes['baton.item']).sort()).toEqual([0, 1]);
  });

  test('an agent sees ctx.trace with its attempt span as parent; without telemetry it is undefined', async () => {
    const t = traced();
    const seen: (string | undefined)[] = [];
    const agents = { planner: (ctx: { trace?: { traceparent: string } | undefined }) => (seen.push(ctx.trace?.traceparent), { steps: 1 }), builder: () => ({ done: true }), checker: () => ({ ok: true }) };
    await runWorkflow(CHAIN, { runId: 'run-ctx', telemetry: t.telemetry, agents });
    await runWorkflow(CHAIN, { runId: 'run-ctx-off', agents });
    expect(seen).toEqual([`00-${traceIdOf('run-ctx', undefined)}-${attemptSpanIdOf('run-ctx', 'plan', 1)}-01`, undefined]);
  });
});

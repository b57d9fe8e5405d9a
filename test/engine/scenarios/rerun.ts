/** Rerun scenarios: reuse outputs upstream of a phase, run the phase and its descendants again. */
import { expect } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import type { AgentHandler } from '../../../src/engine/agent.js';
import { AgentError } from '../../../src/engine/agent.js';
import { eventsOf, expectReplays, header, wf } from '../helpers.js';
import { type StoreFactory, engineOn } from './common.js';

// ---- rerun ----------------------------------------------------------------------------------------

export const RERUN_WORKFLOW = wf(`${header()}workflow:
  fetch: {assign: f, inputs: {t: $trigger.topic}, outputs: {data: string}}
  other: {assign: f, outputs: {data: string}}
  analyze: {assign: a, depends_on: [fetch], inputs: {d: fetch.data, t: $trigger.topic, k: $initial_state.k}, outputs: {r: string}}
  side: {assign: f, depends_on: [fetch], outputs: {data: string}}
  report: {assign: r, depends_on: [analyze, other], inputs: {r: analyze.r, o: other.data}, outputs: {text: string}}`);

/** `rerun(run, phase)`: reuses outputs upstream (events say from where), reruns the phase and its descendants only. */
export async function rerunFromPhase(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const calls: string[] = [];
  let version = 1;
  let analyzeSaw: unknown;
  const agents: Record<string, AgentHandler> = {
    f: (ctx) => (calls.push(ctx.phase), { data: `${ctx.phase}@${clock.now()}` }),
    a: (ctx) => {
      calls.push(ctx.phase);
      analyzeSaw = ctx.input;
      if (version === 1) throw new AgentError('BadPrompt', 'v1 of the prompt is broken', {}, false);
      return { r: `v${version}:${ctx.input['d'] as string}` };
    },
    r: (ctx) => (calls.push(ctx.phase), { text: `${ctx.input['r'] as string}+${ctx.input['o'] as string}` }),
  };
  const e = engineOn(store, clock, agents);
  const first = await e.run(RERUN_WORKFLOW, { trigger: { topic: 'solar' }, initialState: { k: 7 } });
  expect(first.status).toBe('failed');
  expect(first.phases['analyze']!.error?.code).toBe('BadPrompt');
  expect(calls.sort()).toEqual(['analyze', 'fetch', 'other', 'side']);

  // the agent is fixed; pay only for what changed
  version = 2;
  calls.length = 0;
  await clock.advance(1000);
  const id = await e.rerun(first.runId, 'analyze');
  expect(id).not.toBe(first.runId);
  const r = await e.drive(id, undefined);
  expect(r.status).toBe('completed');
  expect(calls.sort()).toEqual(['analyze', 'report']);
  for (const name of ['fetch', 'other', 'side']) {
    expect(r.phases[name]).toMatchObject({ status: 'completed', reused_from: first.runId, attempts: first.phases[name]!.attempts, cost_usd: 0 });
    expect(JSON.stringify(r.phases[name]!.output)).toBe(JSON.stringify(first.phases[name]!.output));
    const done = eventsOf(r.events, 'task.completed').filter((x) => x.phase === name);
    expect(done).toEqual([expect.objectContaining({ reused_from: first.runId })]);
    expect(eventsOf(r.events, 'task.claimed').filter((x) => x.phase === name)).toEqual([]);
  }
  for (const name of ['analyze', 'report']) {
    expect(r.phases[name]!.reused_from).toBeUndefined();
    expect(eventsOf(r.events, 'task.completed').find((x) => x.phase === name)?.reused_from).toBeUndefined();
  }
  // the trigger and the run's initial state are kept
  expect(analyzeSaw).toEqual({ d: first.phases['fetch']!.output!['data'], t: 'solar', k: 7 });
  expect(r.phases['report']!.output).toEqual({ text: `v2:${first.phases['fetch']!.output!['data'] as string}+${first.phases['other']!.output!['data'] as string}` });
  expect(r.events[0]).toMatchObject({ type: 'run.started', trigger: { topic: 'solar' }, rerun_of: { run_id: first.runId, from: 'analyze' } });
  expect((await store.run(id))!.initialState).toEqual({ k: 7 });
  // the original run is untouched
  expect((await e.inspect(first.runId)).result.status).toBe('failed');
  await expectReplays(store, r);

  // from a root: everything downstream of it runs again, the rest is reused
  calls.length = 0;
  const again = await e.drive(await e.rerun(id, 'fetch'), undefined);
  expect(again.status).toBe('completed');
  expect(calls.sort()).toEqual(['analyze', 'fetch', 'report', 'side']);
  // reused from the run it was copied from, with the same bytes
  expect(again.phases['other']!.reused_from).toBe(id);
  expect(JSON.stringify(again.phases['other']!.output)).toBe(JSON.stringify(first.phases['other']!.output));
  await expectReplays(store, again);
  await e.close();
}

/** An unknown phase or run is refused before anything is stored. */
export async function rerunRefusals(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const e = engineOn(store, new ManualClock(0), { f: () => ({ data: 'd' }), a: () => ({ r: 'r' }), r: () => ({ text: 't' }) });
  const first = await e.run(RERUN_WORKFLOW, { trigger: { topic: 't' }, initialState: { k: 1 } });
  expect(first.status).toBe('completed');
  await expect(e.rerun(first.runId, 'nope')).rejects.toMatchObject({ code: 'usage' });
  await expect(e.rerun('no-such-run', 'fetch')).rejects.toMatchObject({ code: 'unknown-run' });
  expect(await store.runs()).toHaveLength(1);
  await e.close();
}

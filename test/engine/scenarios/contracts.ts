/**
 * Agent contracts at run time (docs/contracts.md): partial completions and the `partial` status,
 * checkpointed retries on timeouts (`ctx.checkpoint`, `ctx.lastCheckpoint`, durable across a crash),
 * `onTimeout: retry | fail`, `estimatedTime` as the default attempt timeout with a warning at twice
 * the estimate, `onAgentFailure: escalate_to_user` (retry, skip, fail) and the contract's fallback agent.
 */
import { expect } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import type { Json } from '../../../src/core/json.js';
import { AgentError, type AgentContext } from '../../../src/engine/agent.js';
import { eventsOf, expectReplays, header, settle, until, wf, withClock } from '../helpers.js';
import { type StoreFactory, engineOn, gateOf, untilStatus } from './common.js';

const contract = (errorHandling: string, extra = ''): string => `
agents:
  drafter:
    x-contract:
      output: {schema: {type: object, properties: {draft: {type: string}, completionStatus: {enum: [complete, partial]}, uncertainAreas: {type: array}}}}
      errorHandling: ${errorHandling}${extra}
  reviewer: {}
  backup: {}`;

/** return_partial: the task's status is `partial`; skip_when reads it through `phases`; a partial result without its flags fails. */
export async function partialCompletion(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const model = wf(`${header(contract('{onPartialCompletion: {action: return_partial, requiresFlags: [uncertainAreas]}}'))}workflow:
  draft: {assign: drafter, outputs: {draft: string}}
  polish: {assign: reviewer, depends_on: [draft], skip_when: "phases.draft.status == 'partial'"}
  review: {assign: reviewer, depends_on: [draft], inputs: {text: draft.draft}, skip_when: "phases.draft.status != 'partial'"}`);
  const ran: string[] = [];
  const e = engineOn(store, new ManualClock(0), {
    drafter: () => ({ draft: 'half', completionStatus: 'partial', uncertainAreas: ['methods'] }),
    reviewer: (ctx) => (ran.push(ctx.phase), {}),
  });
  const r = await e.run(model);
  expect(r.status).toBe('completed');
  expect(r.phases['draft']).toMatchObject({ status: 'partial', output: { draft: 'half', completionStatus: 'partial', uncertainAreas: ['methods'] } });
  expect(r.phases['polish']).toMatchObject({ status: 'skipped', skipped_reason: 'skip_when' });
  expect(r.phases['review']!.status).toBe('completed');
  expect(ran).toEqual(['review']);
  expect(eventsOf(r.events, 'task.completed').find((x) => x.phase === 'draft')).toMatchObject({ partial: true });
  await expectReplays(store, r);

  // a partial result that does not flag what is missing: the attempt fails (retried under the phase's policy)
  let calls = 0;
  const e2 = engineOn(store, new ManualClock(0), { drafter: () => (calls++, { draft: 'half', completionStatus: 'partial', uncertainAreas: [] }), reviewer: () => ({}) });
  const bad = await e2.run(wf(`${header(contract('{onPartialCompletion: {action: return_partial, requiresFlags: [uncertainAreas]}}'))}workflow:
  draft: {assign: drafter, retry: {max_attempts: 2, initial_delay_ms: 0}}`));
  expect(bad.status).toBe('failed');
  expect(bad.phases['draft']!.error).toMatchObject({ code: 'PartialCompletionError', details: { missing: ['uncertainAreas'] } });
  expect(calls).toBe(2);

  // onPartialCompletion: fail refuses partial results; a complete one passes with status `completed`
  const e3 = engineOn(store, new ManualClock(0), { drafter: (ctx) => (ctx.attempt === 1 ? { draft: 'half', completionStatus: 'partial' } : { draft: 'all', completionStatus: 'complete' }), reviewer: () => ({}) });
  const third = await e3.run(wf(`${header(contract('{onPartialCompletion: {action: fail}}'))}workflow:
  draft: {assign: drafter, retry: {max_attempts: 2, initial_delay_ms: 0}}`));
  expect(third.phases['draft']).toMatchObject({ status: 'completed', attempts: 2, output: { draft: 'all' } });
  expect(eventsOf(third.events, 'task.attempt_failed')[0]).toMatchObject({ failure: { code: 'PartialCompletion' } });
  await Promise.all([e.close(), e2.close(), e3.close()]);
}

const CHECKPOINTED = (onTimeout: string, timeout = 'x-timeout_ms: 1000', retry = '') =>
  wf(`${header(contract(`{onTimeout: ${onTimeout}}`))}workflow:
  draft: {assign: drafter, ${timeout}${retry}}`);

/** checkpoint_and_retry: an attempt that timed out is retried (maxRetries) and the retry starts from its checkpoint. */
export async function checkpointedRetry(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const seen: (Json | undefined)[] = [];
  const drafter = async (ctx: AgentContext) => {
    seen.push(ctx.lastCheckpoint);
    const done = (ctx.lastCheckpoint as { sections?: number } | undefined)?.sections ?? 0;
    if (done >= 4) return { draft: `all ${done} sections` };
    await ctx.checkpoint({ sections: done + 2 });
    return new Promise(() => undefined); // runs out of time
  };
  const e = engineOn(store, clock, { drafter, reviewer: () => ({}) });
  // the retry policy allows no retry: the contract's onTimeout governs timeouts
  const r = await withClock(clock, e.run(CHECKPOINTED('{action: checkpoint_and_retry, maxRetries: 2}', 'x-timeout_ms: 1000', ', retry: {max_attempts: 1}')));
  expect(r.status).toBe('completed');
  expect(r.phases['draft']).toMatchObject({ status: 'completed', attempts: 3, output: { draft: 'all 4 sections' } });
  expect(seen).toEqual([undefined, { sections: 2 }, { sections: 4 }]);
  expect(eventsOf(r.events, 'task.checkpoint').map((x) => [x.attempt, x.value])).toEqual([
    [1, { sections: 2 }],
    [2, { sections: 4 }],
  ]);
  expect(eventsOf(r.events, 'task.attempt_failed').map((x) => x.failure.code)).toEqual(['Timeout', 'Timeout']);
  await expectReplays(store, r);

  // out of timeout retries: the phase fails with Timeout
  const e2 = engineOn(store, clock, { drafter: (ctx) => (seen.push(ctx.lastCheckpoint), new Promise(() => undefined)), reviewer: () => ({}) });
  const out = await withClock(clock, e2.run(CHECKPOINTED('{action: checkpoint_and_retry, maxRetries: 1}')));
  expect(out.phases['draft']).toMatchObject({ status: 'failed', attempts: 2, error: { code: 'Timeout' } });

  // onTimeout: fail stops at the first timeout even when the retry policy would retry
  const e3 = engineOn(store, clock, { drafter: () => new Promise(() => undefined), reviewer: () => ({}) });
  const failed = await withClock(clock, e3.run(CHECKPOINTED('{action: fail}', 'x-timeout_ms: 1000', ', retry: {max_attempts: 3, initial_delay_ms: 0}')));
  expect(failed.phases['draft']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'Timeout' } });

  // onTimeout: retry starts over: the retry does not see the checkpoint
  const fresh: (Json | undefined)[] = [];
  const e4 = engineOn(store, clock, {
    drafter: async (ctx) => {
      fresh.push(ctx.lastCheckpoint);
      if (ctx.attempt === 2) return { draft: 'again' };
      await ctx.checkpoint({ sections: 1 });
      return new Promise(() => undefined);
    },
    reviewer: () => ({}),
  });
  const again = await withClock(clock, e4.run(CHECKPOINTED('{action: retry, maxRetries: 1}')));
  expect(again.phases['draft']).toMatchObject({ status: 'completed', attempts: 2 });
  expect(fresh).toEqual([undefined, undefined]);
  await Promise.all([e.close(), e2.close(), e3.close(), e4.close()]);
}

/** A checkpoint is durable: the worker dies after it, and another worker's attempt starts from it. */
export async function checkpointSurvivesCrash(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const model = CHECKPOINTED('{action: checkpoint_and_retry, maxRetries: 2}', 'x-timeout_ms: 600000');
  const a = engineOn(
    store,
    clock,
    {
      drafter: async (ctx) => {
        await ctx.checkpoint({ step: 7 });
        return { draft: 'from A' };
      },
      reviewer: () => ({}),
    },
    { workerId: 'A', faults: { at: 'attempt.after-return' }, isOwnerDead: () => false },
  );
  const id = await a.create(model);
  await a.drive(id).catch(() => undefined);
  await a.close();
  expect(eventsOf(await store.events(id), 'task.checkpoint')).toEqual([expect.objectContaining({ attempt: 1, value: { step: 7 } })]);
  let got: Json | undefined;
  const b = engineOn(store, clock, { drafter: (ctx) => ((got = ctx.lastCheckpoint), { draft: 'from B' }), reviewer: () => ({}) }, { workerId: 'B', isOwnerDead: (o) => o === 'A' });
  const r = await withClock(clock, b.resume(id));
  expect(r.phases['draft']).toMatchObject({ status: 'completed', attempts: 2, output: { draft: 'from B' } });
  expect(got).toEqual({ step: 7 });
  await expectReplays(store, r);
  await b.close();
}

/** estimatedTime is the default attempt timeout; with a longer timeout, an attempt past twice the estimate is a warning. */
export async function estimatedTime(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const model = (timeout: string) => wf(`${header(`agents:
  drafter:
    x-contract: {resources: {estimatedTime: "2 seconds"}}`)}workflow:
  draft: {assign: drafter${timeout}}`);
  const e = engineOn(store, clock, { drafter: () => new Promise(() => undefined) });
  const r = await withClock(clock, e.run(model('')));
  expect(r.phases['draft']).toMatchObject({ status: 'failed', error: { code: 'Timeout', details: { timeout_ms: 2000 } } });
  expect(clock.now()).toBe(2000);

  const start = clock.now();
  const e2 = engineOn(store, clock, { drafter: async () => (await clock.sleep(5000), { done: true }) });
  const slow = await withClock(clock, e2.run(model(', x-timeout_ms: 60000')));
  expect(slow.phases['draft']!.status).toBe('completed');
  const warnings = eventsOf(slow.events, 'task.warning');
  expect(warnings).toEqual([expect.objectContaining({ code: 'EstimateExceeded', attempt: 1, details: { estimated_ms: 2000 } })]);
  // noted when the timer fires (4 s in); a store's commit may come later on the manual clock
  expect(warnings[0]!.at - start).toBeGreaterThanOrEqual(4000);
  expect(warnings[0]!.seq).toBeLessThan(eventsOf(slow.events, 'task.completed')[0]!.seq);
  await expectReplays(store, slow);
  await Promise.all([e.close(), e2.close()]);
}

const ESCALATING = (extra = '') =>
  wf(`${header(`agents:
  drafter:
    x-contract:
      errorHandling: {onAgentFailure: {action: escalate_to_user${extra}}}
  backup: {}
  reviewer: {}`)}workflow:
  draft: {assign: drafter, outputs: {draft: string}, retry: {max_attempts: 2, initial_delay_ms: 0}}
  review: {assign: reviewer, depends_on: [draft], inputs: {text: draft.draft}}`);

/** escalate_to_user: after the retries, an input gate asks a human; `retry` runs the agent again, `skip` and `fail` settle the phase. */
export async function escalateToUser(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  let calls = 0;
  const e = engineOn(store, clock, {
    drafter: () => {
      calls++;
      if (calls <= 3) throw new AgentError('Flaky', `failure ${calls}`);
      return { draft: 'done' };
    },
    reviewer: (ctx) => ({ reviewed: ctx.input['text'] as string }),
  });
  const id = await e.create(ESCALATING());
  const p = e.drive(id);
  await untilStatus(store, id, 'waiting');
  expect(calls).toBe(2);
  const g = await gateOf(e, id, 'escalate-draft-1');
  expect(g).toMatchObject({ kind: 'input', status: 'open', phase: 'draft', choices: ['retry', 'skip', 'fail'], escalation: { failure: { code: 'Flaky' } } });
  expect((await e.inspect(id)).result.phases['draft']!.status).toBe('suspended_awaiting_input');
  await expect(e.respond(id, 'escalate-draft-1', 'maybe', 'ana')).rejects.toMatchObject({ code: 'gate-refused' });
  // retry: one more attempt; it fails again, so the human is asked again (no new round of retries)
  await e.respond(id, 'escalate-draft-1', 'retry', 'ana');
  await until(async () => (await gateOf(e, id, 'escalate-draft-2'))?.status === 'open', 'second escalation');
  expect(calls).toBe(3);
  await e.respond(id, 'escalate-draft-2', 'retry', 'ana');
  const r = await p;
  expect(r.status).toBe('completed');
  expect(r.phases['draft']).toMatchObject({ status: 'completed', attempts: 4 });
  expect(r.phases['review']!.output).toEqual({ reviewed: 'done' });
  await expectReplays(store, r);

  // skip: the phase is skipped, and a phase that reads its output is skipped with it
  const e2 = engineOn(store, clock, { drafter: () => Promise.reject(new AgentError('Broken', 'no', {}, false)), reviewer: () => ({}) });
  const id2 = await e2.create(ESCALATING());
  const p2 = e2.drive(id2);
  await untilStatus(store, id2, 'waiting');
  await e2.respond(id2, 'escalate-draft-1', 'skip', 'ana');
  const skipped = await p2;
  expect(skipped.status).toBe('completed');
  expect(skipped.phases['draft']).toMatchObject({ status: 'skipped', skipped_reason: 'escalation', attempts: 1 });
  expect(skipped.phases['review']).toMatchObject({ status: 'skipped', skipped_reason: 'upstream_skipped' });

  // fail: the phase fails with the agent's failure
  const id3 = await e2.create(ESCALATING());
  const p3 = e2.drive(id3);
  await untilStatus(store, id3, 'waiting');
  await e2.respond(id3, 'escalate-draft-1', 'fail', 'ana');
  const failed = await p3;
  expect(failed.status).toBe('failed');
  expect(failed.phases['draft']).toMatchObject({ status: 'failed', error: { code: 'Broken', details: { escalation: 'escalate-draft-1', decided_by: 'ana' } } });
  expect(failed.phases['review']!.status).toBe('failed');
  await settle();
  await Promise.all([e.close(), e2.close()]);
}

/** The contract's fallback agent takes over after the retries; escalation comes only when it fails too. */
export async function contractFallback(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  const clock = new ManualClock(0);
  const agents: string[] = [];
  const e = engineOn(store, clock, {
    drafter: (ctx) => (agents.push(ctx.agent), Promise.reject(new AgentError('Down', 'down'))),
    backup: (ctx) => (agents.push(ctx.agent), { draft: 'by backup' }),
    reviewer: () => ({}),
  });
  const r = await e.run(ESCALATING(', fallbackAgent: backup'));
  expect(r.status).toBe('completed');
  expect(r.phases['draft']).toMatchObject({ status: 'completed', agent: 'backup', output: { draft: 'by backup' } });
  expect(agents).toEqual(['drafter', 'drafter', 'backup']);

  const e2 = engineOn(store, clock, { drafter: () => Promise.reject(new AgentError('Down', 'down')), backup: () => Promise.reject(new AgentError('AlsoDown', 'down too')), reviewer: () => ({}) });
  const id = await e2.create(ESCALATING(', fallbackAgent: backup'));
  const p = e2.drive(id);
  await untilStatus(store, id, 'waiting');
  expect(await gateOf(e2, id, 'escalate-draft-1')).toMatchObject({ escalation: { failure: { code: 'AlsoDown' } } });
  await e2.cancel(id, 'enough');
  expect((await p).status).toBe('cancelled');
  await Promise.all([e.close(), e2.close()]);
}

/** onAgentFailure: fail: the first failure fails the phase, whatever the retry policy and its fallback agent say. */
export async function agentFailureFails(makeStore: StoreFactory): Promise<void> {
  const store = await makeStore();
  let calls = 0;
  const e = engineOn(store, new ManualClock(0), { drafter: () => (calls++, Promise.reject(new AgentError('Down', 'down'))), backup: () => ({ draft: 'b' }), reviewer: () => ({}) });
  const r = await e.run(
    wf(`${header(contract('{onAgentFailure: {action: fail}}'))}workflow:
  draft: {assign: drafter, retry: {max_attempts: 3, initial_delay_ms: 0, fallback_agent: backup}}`),
  );
  expect(r.phases['draft']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'Down' } });
  expect(calls).toBe(1);
  await e.close();
}

export const CONTRACT_SCENARIOS: Record<string, (makeStore: StoreFactory) => Promise<void>> = {
  partialCompletion,
  checkpointedRetry,
  checkpointSurvivesCrash,
  estimatedTime,
  escalateToUser,
  contractFallback,
  agentFailureFails,
};

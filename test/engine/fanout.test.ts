/** Fan-out (`for_each`) on the memory store; durable-stores.test.ts runs the same scenarios on SQLite and PostgreSQL. */
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { MemoryStore } from '../../src/store/memory.js';
import { eventsOf, header, wf, withClock } from './helpers.js';
import { FANOUT_SCENARIOS, engineOn, fanWorkflow } from './scenarios.js';

const memory = () => new MemoryStore();

describe('for_each (memory store)', () => {
  for (const [name, scenario] of Object.entries(FANOUT_SCENARIOS)) test(name, () => scenario(memory), 60_000);
});

describe('for_each and budgets', () => {
  test("a phase budget counts its items' spend together", async () => {
    const clock = new ManualClock(0);
    const agents = {
      o: (ctx: { input: Record<string, unknown> }) => ({ sections: Array.from({ length: ctx.input['n'] as number }, (_, i) => ({ name: `s${i}`, words: 1 })) }),
      d: (ctx: { reportCost: (usd: number) => void }) => (ctx.reportCost(0.1), { text: 't' }),
      a: () => ({ all: '' }),
    };
    const e = engineOn(memory(), clock, agents, { concurrency: 1 });
    const r = await withClock(clock, e.run(fanWorkflow('max_parallel: 1', 'cost_tracking: {budget_usd: 0.25}'), { trigger: { n: 5 } }));
    await e.close();
    expect(r.status).toBe('failed');
    expect(r.error).toMatchObject({ code: 'BudgetExceededError' });
    expect(r.phases['draft']!.cost_usd).toBeCloseTo(0.3, 9);
    // each item spent 0.1, under the budget alone: only their sum crossed it
    expect(Object.entries(r.phases).filter(([k, p]) => k.startsWith('draft[') && p.cost_usd > 0)).toHaveLength(3);
  });
});

describe('for_each and skip_when arithmetic', () => {
  const agents = {
    o: (ctx: { input: Record<string, unknown> }) => ({ sections: Array.from({ length: ctx.input['n'] as number }, (_, i) => ({ name: `s${i}`, words: 10 * i })) }),
    d: (ctx: { input: Record<string, unknown> }) => ({ text: `${ctx.input['position'] as number}:${ctx.input['name'] as string}` }),
    a: (ctx: { input: Record<string, unknown> }) => ({ all: (ctx.input['texts'] as (string | null)[]).map((t) => t ?? '-').join(',') }),
  };

  test('`$index % 2 == 1` and `$item.words * 2 > 70` skip items (JSON numbers meet integer literals), and the detail quotes the condition as written', async () => {
    for (const [cond, all] of [
      ['$index % 2 == 1', '0:s0,-,2:s2,-,4:s4,-'],
      ['$item.words * 2 > 70', '0:s0,1:s1,2:s2,3:s3,-,-'],
    ] as const) {
      const clock = new ManualClock(0);
      const e = engineOn(memory(), clock, agents, { concurrency: 2 });
      const r = await withClock(clock, e.run(fanWorkflow('max_parallel: 2', `skip_when: "${cond}"`), { trigger: { n: 6 } }));
      await e.close();
      expect(r.status, cond).toBe('completed');
      expect(r.phases['assemble']!.output, cond).toEqual({ all });
      expect(r.phases['draft[5]'], cond).toMatchObject({ status: 'skipped', skipped_detail: `skip_when \`${cond}\` is true for item 5` });
    }
  });

  test('a condition that cannot be evaluated fails the item with the condition as written', async () => {
    const clock = new ManualClock(0);
    const e = engineOn(memory(), clock, agents, { concurrency: 2 });
    const r = await withClock(clock, e.run(fanWorkflow('tolerated_failures: "100%"', 'skip_when: "$item.words % 0 == 1"'), { trigger: { n: 2 } }));
    await e.close();
    expect(r.phases['draft[1]']).toMatchObject({ status: 'failed', error: { code: 'SkipConditionError' } });
    expect(r.phases['draft[1]']!.error!.message).toContain('skip_when `$item.words % 0 == 1`');
    expect(r.phases['draft[1]']!.error!.message).toContain('modulus by zero');
  });
});

describe('for_each over a reference that does not resolve', () => {
  // one workflow, each phase beside its plain-input twin: the same reference must fail the same way (RFC-0024 §3.1)
  const model = wf(`${header()}workflow:
  up:
    assign: u
    outputs:
      opt: {type: "string[]", required: false}
      nul: {type: "string[]", nullable: true}
      word: any
  fanTrigger: {assign: w, for_each: $trigger.items, inputs: {x: $item}}
  plainTrigger: {assign: w, inputs: {x: $trigger.items}}
  fanUpstream: {assign: w, depends_on: [up], for_each: up.opt, inputs: {x: $item}}
  plainUpstream: {assign: w, depends_on: [up], inputs: {x: up.opt}}
  fanString: {assign: w, depends_on: [up], for_each: up.word, inputs: {x: $item}}
  fanNull: {assign: w, depends_on: [up], for_each: up.nul, inputs: {x: $item}}
`);
  const agents = { u: () => ({ nul: null, word: 'w' }), w: () => ({}) };

  test('an absent trigger or upstream key is UnresolvableInputError, as for an input; a value that is no array is ForEachNotArray', async () => {
    const clock = new ManualClock(0);
    const e = engineOn(memory(), clock, agents);
    const r = await withClock(clock, e.run(model, { runId: 'fe', trigger: {} }));
    await e.close();
    for (const [fan, plain] of [['fanTrigger', 'plainTrigger'], ['fanUpstream', 'plainUpstream']] as const) {
      const f = r.phases[fan]!.error!;
      const p = r.phases[plain]!.error!;
      expect(f.code, fan).toBe('UnresolvableInputError');
      expect(p.code, plain).toBe('UnresolvableInputError');
      // the same payload: the same keys, the reference named
      expect(Object.keys(f.details!).sort(), fan).toEqual(Object.keys(p.details!).sort());
      expect(f.details!['unresolvable_refs'], fan).toEqual(p.details!['unresolvable_refs']);
      expect(f.retryable).toBe(false);
      // recorded as a rejected claim too, like the input's
      expect(eventsOf(r.events, 'task.claim_rejected').map((x) => x.phase)).toContain(fan);
    }
    expect(r.phases['fanString']!.error).toMatchObject({ code: 'ForEachNotArray', details: { for_each: 'up.word' } });
    expect(r.phases['fanNull']!.error).toMatchObject({ code: 'ForEachNotArray', details: { for_each: 'up.nul' } });
    expect(eventsOf(r.events, 'task.claim_rejected').map((x) => x.phase)).not.toContain('fanString');
  });
});

/** Fan-out (`for_each`) on the memory store; durable-stores.test.ts runs the same scenarios on SQLite and PostgreSQL. */
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { MemoryStore } from '../../src/store/memory.js';
import { withClock } from './helpers.js';
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

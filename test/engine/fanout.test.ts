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

/** Run-time semantics read from the specs (RFC-0024 §3, issue 3's skip rules), as a user's acceptance tests would. */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { subprocessAgent } from '../../src/agents/subprocess.js';
import { runWorkflow } from '../../src/api/run.js';
import { ManualClock } from '../../src/core/clock.js';
import { AgentError, type AgentHandler } from '../../src/engine/agent.js';
import { MemoryStore } from '../../src/store/memory.js';
import { eventsOf, header, until, wf } from './helpers.js';
import { engineOn, untilStatus } from './scenarios/common.js';

async function run(yaml: string, agents: Record<string, AgentHandler>) {
  return runWorkflow(wf(`${header()}${yaml}`), { agents, store: new MemoryStore() });
}

describe('skipped upstream phases', () => {
  test('a for_each over a skipped phase is skipped (upstream_skipped), not failed as unresolvable, and its dependents follow', async () => {
    const r = await run(
      `
workflow:
  outline:
    assign: x
    skip_when: "true"
    outputs: {items: "string[]"}
  draft:
    assign: x
    depends_on: [outline]
    for_each: outline.items
    inputs: {it: $item}
    outputs: {text: string}
  assemble:
    assign: x
    depends_on: [draft]
    inputs: {texts: draft.text}
  after:
    assign: x
    depends_on: [draft]
`,
      { x: () => ({ items: ['a'], text: 't' }) },
    );
    expect(r.status).toBe('completed');
    expect(eventsOf(r.events, 'task.claim_rejected')).toEqual([]);
    expect(r.phases['draft']).toMatchObject({ status: 'skipped', skipped_reason: 'upstream_skipped' });
    expect(r.phases['assemble']).toMatchObject({ status: 'skipped', skipped_reason: 'upstream_skipped' });
    // reads nothing from the skipped fan-out: runs
    expect(r.phases['after']).toMatchObject({ status: 'completed' });
  });
});

describe('the order ready phases start in (docs/executor.md, Concurrency)', () => {
  test('with one slot: in the order they became ready, those that became ready together in document order', async () => {
    const order: string[] = [];
    const r = await runWorkflow(
      wf(`${header()}
workflow:
  z: {assign: x}
  late: {assign: x, depends_on: [z]}
  y: {assign: x}
  c: {assign: x, depends_on: [y]}
  b: {assign: x, depends_on: [y]}
  w: {assign: x}
`),
      { agents: { x: (ctx) => (order.push(ctx.phase), {}) }, store: new MemoryStore(), concurrency: 1 },
    );
    expect(r.status).toBe('completed');
    expect(order).toEqual(['z', 'y', 'w', 'late', 'c', 'b']);
  });
});

describe('skip_when reading a skipped phase', () => {
  const yaml = (cond: string) => `
workflow:
  classify: {assign: x, skip_when: "true", outputs: {risk: string}}
  review: {assign: x, depends_on: [classify], skip_when: ${JSON.stringify(cond)}}
`;
  test('fails with SkipConditionError naming how the phase ended and the test for it, not only "Unknown variable"', async () => {
    const r = await run(yaml("classify.risk == 'low'"), { x: () => ({ risk: 'low' }) });
    expect(r.phases['review']).toMatchObject({ status: 'failed', error: { code: 'SkipConditionError' } });
    expect(r.phases['review']!.error!.message).toContain('`phases.classify.status`');
  });

  test('the test the message suggests works: `phases.NAME.status` guards the read', async () => {
    const skip = await run(yaml("phases.classify.status == 'skipped' || classify.risk == 'low'"), { x: () => ({ risk: 'low' }) });
    expect(skip.phases['review']).toMatchObject({ status: 'skipped', skipped_reason: 'skip_when' });
    const runs = await run(yaml("phases.classify.status != 'skipped' && classify.risk == 'low'"), { x: () => ({ risk: 'low' }) });
    expect(runs.phases['review']).toMatchObject({ status: 'completed' });
  });
});

describe('spend adds up without float drift', () => {
  test('0.1 + 0.2 is 0.3: in task.cost totals, budget.alert, and ctx.remainingBudgetUsd()', async () => {
    const left: (number | undefined)[] = [];
    const r = await run(
      `
governance: {max_cost_usd: 0.6}
workflow:
  a: {assign: x, cost_tracking: {budget_usd: 1}}
  b: {assign: x, depends_on: [a]}
`,
      {
        x: (ctx) => {
          for (const usd of [0.1, 0.2]) {
            ctx.reportCost(usd);
            left.push(ctx.remainingBudgetUsd());
          }
          return {};
        },
      },
    );
    expect(r.status).toBe('completed');
    expect(eventsOf(r.events, 'task.cost').map((e) => [e.phase_total_usd, e.run_total_usd])).toEqual([
      [0.1, 0.1],
      [0.3, 0.3],
      [0.1, 0.4],
      [0.3, 0.6],
    ]);
    // a: min(phase 1 - spent, run 0.6 - spent); b: the run's 0.6 - spent
    expect(left).toEqual([0.5, 0.3, 0.2, 0]);
    expect(eventsOf(r.events, 'budget.alert').map((e) => e.spent_usd)).toEqual([0.6]);
  });
});

describe('a subprocess agent that never exits', () => {
  test("what it wrote on stderr before its timeout is recorded (task.agent_event kind stderr), not lost with the process", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-sem-'));
    const marker = join(dir, 'said');
    const clock = new ManualClock(0);
    const agent = subprocessAgent({ command: ['sh', '-c', `echo 'waiting for the API' >&2; touch '${marker}'; exec sleep 60`] });
    try {
      const p = runWorkflow(wf(`${header()}workflow:\n  a: {assign: x, timeout_ms: 1000}\n`), { agents: { x: agent }, store: new MemoryStore(), clock });
      await until(() => existsSync(marker), 'the agent to write on stderr');
      // the line is in the pipe before the marker exists: a few poll phases of the event loop read it
      for (let i = 0; i < 5; i++) await new Promise<void>((r) => setTimeout(r, 5));
      await clock.advance(1000);
      const r = await p;
      expect(r.phases['a']).toMatchObject({ status: 'failed', error: { code: 'Timeout' } });
      const said = eventsOf(r.events, 'task.agent_event').filter((e) => e.kind === 'stderr');
      expect(said).toMatchObject([{ phase: 'a', attempt: 1, data: { stderr: 'waiting for the API\n' } }]);
      // recorded while the attempt still held its task: before its failure
      expect(said[0]!.seq).toBeLessThan(eventsOf(r.events, 'task.attempt_failed')[0]!.seq);
    } finally {
      await agent.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('RFC-0026 patch: a phase escalated to a human is suspended like one that asked', () => {
  test("claims of the phases that read it are rejected with UpstreamIntentSuspendedError, as for ctx.requestInput; one that reads nothing is not", async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(0);
    let calls = 0;
    const e = engineOn(store, clock, {
      drafter: () => {
        if (++calls === 1) throw new AgentError('Broken', 'no', {}, false);
        return { draft: 'done' };
      },
      reviewer: (ctx) => ({ text: ctx.input['text'] ?? null }),
    });
    try {
      const id = await e.create(
        wf(`${header(`agents:
  drafter:
    x-contract:
      errorHandling: {onAgentFailure: {action: escalate_to_user}}
  reviewer: {}`)}workflow:
  draft: {assign: drafter, outputs: {draft: string}}
  review: {assign: reviewer, depends_on: [draft], inputs: {text: draft.draft}}
  notify: {assign: reviewer, depends_on: [draft]}`),
      );
      const p = e.drive(id);
      await untilStatus(store, id, 'waiting');
      const rejected = eventsOf(await store.events(id), 'task.claim_rejected');
      expect(rejected.map((x) => [x.phase, x.error])).toEqual([
        ['review', { error: 'UpstreamIntentSuspendedError', task_id: `${id}:review`, phase_name: 'review', suspended_intent_id: `${id}:draft`, expected_resume_at: null, message: expect.any(String) as string }],
      ]);
      expect((await e.inspect(id)).result.suspended_phases).toMatchObject([{ phase_name: 'draft', intent_id: `${id}:draft`, expires_at: null }]);
      await e.respond(id, 'escalate-draft-1', 'retry', 'ana');
      const r = await p;
      expect(r.status).toBe('completed');
      expect(r.phases['review']!.output).toEqual({ text: 'done' });
    } finally {
      await e.close();
    }
  });
});

describe('a zero budget', () => {
  test('any spend stops the run with BudgetExceededError, and no budget.alert carries a percent JSON cannot hold (Infinity)', async () => {
    for (const yaml of ['governance: {max_cost_usd: 0}\nworkflow:\n  a: {assign: x}\n', 'workflow:\n  a: {assign: x, cost_tracking: {budget_usd: 0, alert_at_percent: 50}}\n']) {
      const r = await run(yaml, { x: () => ({ _cost: 0.1 }) });
      expect(r.status, yaml).toBe('failed');
      expect(r.error, yaml).toMatchObject({ code: 'BudgetExceededError' });
      // what a store, --json and the HTTP API give back is the event itself
      expect(JSON.parse(JSON.stringify(r.events)), yaml).toEqual(r.events);
    }
  });
});

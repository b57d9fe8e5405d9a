/** The step form runs unchanged (without fan-out), and its `$store` targets form the run's artifacts tree. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createEngine } from '../src/api/engine.js';
import type { AgentContext } from '../src/engine/agent.js';
import type { CliIo } from '../src/cli/io.js';
import { run } from '../src/cli/main.js';
import { SqliteStore } from '../src/store/sqlite.js';
import { parseWorkflow } from '../src/workflow/compile.js';

const STEPS = `workflow:
  name: write-brief
  version: "1.0.0"
  steps:
    - id: consolidate
      agent: research-consolidator
      inputs:
        topic: { $input: "topic" }
      outputs:
        researchDoc: { $store: "artifacts.researchDoc" }
    - id: outline
      agent: paper-architect
      dependsOn: [consolidate]
      inputs:
        topic: { $input: "topic" }
        research: { $ref: "artifacts.researchDoc" }
      outputs:
        outline: { $store: "artifacts.plan.outline", type: {sections: "string[]"} }
    - id: summary
      agent: summariser
      dependsOn: [outline]
      inputs:
        first: { $ref: "artifacts.plan.outline.sections" }
        research: { $ref: "artifacts.researchDoc" }
      outputs:
        text: { $store: "artifacts.summary" }
`;

describe('the step form at run time', () => {
  test('runs, reads artifacts through $ref, and `baton show --state` shows them as context.artifacts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-steps-'));
    const file = join(dir, 'runs.db');
    const r = parseWorkflow(STEPS, { file: 'brief.yaml' });
    expect(r.diagnostics).toEqual([]);
    const seen: Record<string, unknown> = {};
    const store = new SqliteStore(file);
    const engine = createEngine({
      store,
      agents: {
        'research-consolidator': (ctx: AgentContext) => ({ researchDoc: `notes on ${(ctx.input['topic'] as string)}` }),
        'paper-architect': (ctx: AgentContext) => ((seen['outline'] = ctx.input), { outline: { sections: ['intro', 'body'] } }),
        summariser: (ctx: AgentContext) => ((seen['summary'] = ctx.input), { text: 'done' }),
      },
    });
    const res = await engine.run(r.model!, { runId: 's1', trigger: { topic: 'tides' } });
    await engine.close();
    await store.close();
    expect(res.status).toBe('completed');
    expect(seen).toEqual({ outline: { topic: 'tides', research: 'notes on tides' }, summary: { first: ['intro', 'body'], research: 'notes on tides' } });
    let out = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: () => undefined, isTTY: false, cwd: dir, env: {} };
    expect(await run(['show', 's1', '--state', '--store', file], io)).toBe(0);
    const doc = JSON.parse(out) as { workflowState: { name: string; context: { artifacts: unknown } } };
    expect(doc.workflowState.name).toBe('write-brief');
    expect(doc.workflowState.context.artifacts).toEqual({ researchDoc: 'notes on tides', plan: { outline: { sections: ['intro', 'body'] } }, summary: 'done' });
    rmSync(dir, { recursive: true, force: true });
  });
});

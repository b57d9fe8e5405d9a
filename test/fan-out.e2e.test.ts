/**
 * Fan-out at run time, end to end: `for_each` phases run one stored task per item, through the
 * library and through `baton run`, in the 1.0 form and in the contract spec's step form.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createEngine } from '../src/api/engine.js';
import { workflowState } from '../src/api/workflow-state.js';
import type { CliIo } from '../src/cli/io.js';
import { run } from '../src/cli/main.js';
import type { Json } from '../src/core/json.js';
import { MemoryStore } from '../src/store/memory.js';
import { loadWorkflow, parseWorkflow } from '../src/workflow/compile.js';
import { SchemaCompiler } from '../src/workflow/json-schema.js';

const writePaper = join(import.meta.dirname, 'fixtures', 'steps', 'write-paper');

const FAN_OUT = `openintent: "1.0"
info: {name: fan}
workflow:
  outline:
    assign: a
    outputs: {sections: "string[]"}
  draft:
    assign: d
    depends_on: [outline]
    for_each: outline.sections
    inputs: {name: $item}
    outputs: {text: string}
`;

describe('a workflow with for_each', () => {
  test('runs one task per item and gathers the outputs in item order', async () => {
    const r = parseWorkflow(FAN_OUT, { file: 'fan.yaml' });
    expect(r.ok).toBe(true);
    const store = new MemoryStore();
    const engine = createEngine({ store, agents: { a: () => ({ sections: ['x', 'y', 'z'] }), d: (ctx) => ({ text: `${ctx.input['name'] as string}#${ctx.item!.index}` }) } });
    const res = await engine.run(r.model!);
    expect(res.status).toBe('completed');
    expect(res.phases['draft']!.output).toEqual({ text: ['x#0', 'y#1', 'z#2'] });
    expect((await store.tasks(res.runId)).map((t) => t.phase).sort()).toEqual(['draft', 'draft[0]', 'draft[1]', 'draft[2]', 'outline']);
    await engine.close();
  });

  test('without declared outputs, an item returning the key `__proto__` is gathered as a key, and the phase output stays readable', async () => {
    const r = parseWorkflow('openintent: "1.0"\ninfo: {name: proto}\nx-trigger: {items: "any[]"}\nworkflow:\n  each:\n    assign: w\n    for_each: $trigger.items\n    inputs: {v: $item}\n  after:\n    assign: g\n    depends_on: [each]\n    inputs: {vs: each.v}\n', { file: 'proto.yaml' });
    expect(r.ok).toBe(true);
    const store = new MemoryStore();
    const engine = createEngine({ store, agents: { w: (ctx) => ctx.input['v'] as Record<string, unknown>, g: (ctx) => ({ vs: ctx.input['vs'] as unknown[] }) } });
    // JSON's "__proto__" is an ordinary own key, as an agent's parsed reply would hold it
    const res = await engine.run(r.model!, { trigger: { items: JSON.parse('[{"__proto__": {"v": 1}}, {"v": 2}]') as Json[] } });
    expect(res.status, JSON.stringify(res.phases['after']?.error)).toBe('completed');
    expect(res.phases['after']!.output).toEqual({ vs: [null, 2] });
    const gathered = res.phases['each']!.output!;
    expect(Object.getPrototypeOf(gathered)).toBe(Object.prototype);
    expect(Object.keys(gathered)).toEqual(['__proto__', 'v']);
    expect(JSON.stringify(gathered)).toBe('{"__proto__":[{"v":1},null],"v":[null,2]}');
    await engine.close();
  });

  test('the step form runs its items with the spec\'s write-paper agents', async () => {
    const r = await loadWorkflow(join(writePaper, 'workflow.yaml'));
    const store = new MemoryStore();
    // each fits its contract (the run-time guard checks them): section-drafter's is the spec's, verbatim
    const agents = {
      'research-consolidator': () => ({ researchDoc: [{ source: 'doc', citations: [] }] }),
      'paper-architect': () => ({ outline: { sections: [{ name: 'intro', outline: { why: 1 } }, { name: 'method', outline: { how: 2 } }] } }),
      'section-drafter': (ctx: { input: Record<string, unknown> }) => {
        const draft = `${ctx.input['sectionName'] as string}: ${JSON.stringify(ctx.input['outline'])} (${(ctx.input['research'] as { source: string }[])[0]!.source})`;
        return { draft, draftContent: draft, completionStatus: 'complete' };
      },
    };
    const engine = createEngine({ store, agents });
    const res = await engine.run(r.model!, { trigger: { topic: 't', sources: [] } });
    expect(res.status).toBe('completed');
    expect(res.phases['draft-sections']!.output).toEqual({ draft: ['intro: {"why":1} (doc)', 'method: {"how":2} (doc)'] });
    // the templated `$store` target fills in per item: artifacts.drafts.<section name>
    const { state } = await engine.inspect(res.runId);
    const doc = workflowState(state, r.model!, res.events);
    expect(doc.workflowState.context.artifacts['drafts']).toEqual({ intro: 'intro: {"why":1} (doc)', method: 'method: {"how":2} (doc)' });
    expect(doc.workflowState.context.artifacts['researchDoc']).toEqual([{ source: 'doc', citations: [] }]);
    await engine.close();
  });

  test('items whose `$store` targets name one place: a StoreCollision warning as the phase fans out, naming them; the tree keeps the last; completedSteps name the fan-out\'s agent', async () => {
    const r = await loadWorkflow(join(writePaper, 'workflow.yaml'));
    const store = new MemoryStore();
    const agents = {
      'research-consolidator': () => ({ researchDoc: [{ source: 'doc', citations: [] }] }),
      'paper-architect': () => ({ outline: { sections: [{ name: 'intro', outline: {} }, { name: 'intro', outline: {} }, { name: 'body', outline: {} }] } }),
      // fits section-drafter's contract (the spec's, verbatim: draftContent and completionStatus required)
      'section-drafter': (ctx: { input: Record<string, unknown>; item?: { index: number } | undefined }) => {
        const draft = `${ctx.input['sectionName'] as string} #${ctx.item!.index}`;
        return { draft, draftContent: draft, completionStatus: 'complete' };
      },
    };
    const engine = createEngine({ store, agents });
    const res = await engine.run(r.model!, { trigger: { topic: 't', sources: [] } });
    expect(res.status).toBe('completed');
    const warnings = res.events.filter((e) => e.type === 'task.warning' && e.code === 'StoreCollision');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ phase: 'draft-sections', code: 'StoreCollision', details: { path: 'artifacts.drafts.intro', items: [0, 1], key: 'draft' } });
    // before any item ran
    expect(res.events.indexOf(warnings[0]!)).toBeLessThan(res.events.findIndex((e) => e.type === 'task.claimed' && e.phase.startsWith('draft-sections[')));
    const { state } = await engine.inspect(res.runId);
    const doc = workflowState(state, r.model!, res.events);
    expect(doc.workflowState.context.artifacts['drafts']).toEqual({ intro: 'intro #1', body: 'body #2' });
    // every item's output stays in the gathered array
    expect(res.phases['draft-sections']!.output).toEqual({ draft: ['intro #0', 'intro #1', 'body #2'] });
    expect(doc.workflowState.context.completedSteps.map((s) => `${s.stepId} ${s.agentId}`)).toEqual(['consolidate research-consolidator', 'outline paper-architect', 'draft-sections section-drafter']);
    await engine.close();
  });

  test('`baton run` runs a fan-out with stub agents and exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-fan-'));
    writeFileSync(join(dir, 'fan.yaml'), FAN_OUT);
    let err = '';
    let out = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd: dir, env: { USER: 't' } };
    const code = await run(['run', 'fan.yaml', '--stub-agents', '--store', 'memory', '--json'], io);
    expect(err).not.toMatch(/\n\s+at /);
    expect(code).toBe(0);
    expect(out).toMatch(/"completed"/);
    // the progress lines: the gathered phase is not an attempt (its event carries attempt 0)
    expect(err).toMatch(/task\.completed\s+draft items gathered/);
    expect(err).not.toMatch(/attempt 0/);
  });

  test('`baton validate` accepts it and names the form', async () => {
    let out = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: () => undefined, isTTY: false, cwd: writePaper, env: {} };
    expect(await run(['validate', 'workflow.yaml', 'openintent.yaml'], io)).toBe(0);
    expect(out).toMatch(/workflow\.yaml: valid \(the contract spec’s step form: workflow\.steps\)/);
    expect(out).toMatch(/openintent\.yaml: valid \(OpenIntent Workflow YAML 1\.0\)/);
    out = '';
    expect(await run(['validate', 'workflow.yaml', '--json'], io)).toBe(0);
    expect((JSON.parse(out) as { files: { form: string }[] }).files[0]!.form).toBe('steps');
    out = '';
    const fixtures = join(import.meta.dirname, 'fixtures', 'diagnostics');
    expect(await run(['validate', join(fixtures, 'steps-form.yaml'), join(fixtures, 'for-each.yaml')], io)).toBe(1);
    expect(out).toMatch(/steps-form\.yaml: invalid \(the contract spec’s step form: workflow\.steps\)/);
    expect(out).toMatch(/for-each\.yaml: invalid \(OpenIntent Workflow YAML 1\.0\)/);
  });

  test("the spec's write-paper example, its contract verbatim, validates and runs end to end with stub agents (exit 0)", async () => {
    // its outputs are `any` ($store targets): the stubs sample them from the agents' contracts, so the
    // outline has sections to fan out over, each with its own name
    const dir = mkdtempSync(join(tmpdir(), 'baton-paper-'));
    const db = join(dir, 'runs.db');
    writeFileSync(join(dir, 'trigger.json'), JSON.stringify({ topic: 'tides', sources: ['a', 'b'] }));
    let out = '';
    let err = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd: dir, env: { USER: 't' } };
    expect(await run(['validate', join(writePaper, 'workflow.yaml')], io)).toBe(0);
    out = '';
    expect(await run(['run', join(writePaper, 'workflow.yaml'), '--stub-agents', '--store', db, '--trigger', `@${join(dir, 'trigger.json')}`, '--json'], io)).toBe(0);
    expect(err).not.toMatch(/\n\s+at /);
    const result = JSON.parse(out) as { runId: string; status: string; phases: Record<string, { status: string; output: Record<string, unknown> }> };
    expect(result.status).toBe('completed');
    expect(result.phases['draft-sections']).toMatchObject({ status: 'completed', output: { draft: ['any', 'any'] } });
    out = '';
    expect(await run(['show', result.runId, '--state', '--store', db], io)).toBe(0);
    const doc = JSON.parse(out) as { workflowState: { context: { artifacts: Record<string, unknown>; completedSteps: { stepId: string; agentId: string | null }[] } } };
    expect(doc.workflowState.context.artifacts['drafts']).toEqual({ 'name-1': 'any', 'name-2': 'any' });
    // the fan-out phase names its agent, as the spec's completedSteps entries do (it is never claimed itself)
    expect(doc.workflowState.context.completedSteps.find((x) => x.stepId === 'draft-sections')?.agentId).toBe('section-drafter');
    expect(doc.workflowState.context.artifacts['outline']).toEqual({ sections: [{ name: 'name-1', outline: {} }, { name: 'name-2', outline: {} }] });
    expect(doc.workflowState.context.artifacts['researchDoc']).toEqual([{ source: 'source-1', citations: [{}, {}] }, { source: 'source-2', citations: [{}, {}] }]);
  });

  test('`baton run --state-out` (a run that folds its settled items) keeps the templated `$store` targets of the items in context.artifacts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-paper-'));
    writeFileSync(join(dir, 'trigger.json'), JSON.stringify({ topic: 'tides', sources: ['a', 'b'] }));
    let err = '';
    const io: CliIo = { stdout: () => undefined, stderr: (s) => void (err += s), isTTY: false, cwd: dir, env: { USER: 't' } };
    // no --json, no --output: the run keeps no event log, so its completed items are folded out of the state
    expect(await run(['run', join(writePaper, 'workflow.yaml'), '--stub-agents', '--store', 'memory', '--trigger', `@${join(dir, 'trigger.json')}`, '-q', '--state-out', 'state.json'], io)).toBe(0);
    expect(err).not.toMatch(/\n\s+at /);
    const doc = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as { workflowState: { context: { artifacts: Record<string, unknown> } } };
    expect(doc.workflowState.context.artifacts['drafts']).toEqual({ 'name-1': 'any', 'name-2': 'any' });
  });

  test('`baton run`: the summary counts the items a failed fan-out never opened, as `baton show` does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-unopened-'));
    writeFileSync(join(dir, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: unopened}\nx-trigger: {items: "integer[]"}\nworkflow:\n  each:\n    assign: w\n    for_each: $trigger.items\n    max_parallel: 1\n    inputs: {v: $item}\n    outputs: {v: integer}\n');
    writeFileSync(join(dir, 'agents.mjs'), "export default { w: () => { throw new Error('no'); } };\n");
    let out = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (out += s), isTTY: false, cwd: dir, env: { USER: 't' } };
    expect(await run(['run', 'workflow.yaml', '--store', 'memory', '--trigger', '{"items": [1, 2, 3, 4]}', '-q'], io)).toBe(1);
    // one item ran and failed; with max_parallel 1 the other three were never opened
    expect(out).toMatch(/^ {2}each: 1 failed, 3 pending items$/m);
    rmSync(dir, { recursive: true, force: true });
  });

  test("`baton run`: the summary names a few of a fan-out's item warnings of one code and counts the rest", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-warned-'));
    // every item declares an output file it does not write: a DeclaredFileMissing warning each
    writeFileSync(join(dir, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: warned}\nx-trigger: {items: "integer[]"}\nworkflow:\n  each:\n    assign: w\n    for_each: $trigger.items\n    inputs: {v: $item}\n    outputsFiles: {o: {path: "out/<index>.txt"}}\n    outputs: {v: integer}\n');
    writeFileSync(join(dir, 'agents.mjs'), 'export default { w: (ctx) => ({ v: ctx.input.v }) };\n');
    let out = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (out += s), isTTY: false, cwd: dir, env: { USER: 't' } };
    expect(await run(['run', 'workflow.yaml', '--store', 'memory', '--trigger', '{"items": [1, 2, 3, 4, 5, 6, 7, 8]}', '-q'], io)).toBe(0);
    expect(out.match(/^ {2}! each\[\d\] \(attempt 1\): DeclaredFileMissing: /gm)).toHaveLength(5);
    expect(out).toMatch(/^ {2}… 3 more DeclaredFileMissing warnings of items of each: baton show \S+ --events$/m);
    rmSync(dir, { recursive: true, force: true });
  });

  test("stub agents honour the contract's output schema: each item's output passes section-drafter's (required: [draftContent, completionStatus] beside the schema)", async () => {
    const r = await loadWorkflow(join(writePaper, 'workflow.yaml'));
    const store = new MemoryStore();
    const engine = createEngine({ store, stubAgents: true });
    const res = await engine.run(r.model!, { trigger: { topic: 't', sources: [] } });
    expect(res.status).toBe('completed');
    const compiled = new SchemaCompiler().compile(r.model!.agents!['section-drafter']!.contract!.output!.schema);
    if (!compiled.ok) throw new Error('the contract schema compiles');
    const items = (await store.tasks(res.runId)).filter((t) => t.phase.startsWith('draft-sections['));
    expect(items).toHaveLength(2);
    for (const t of items) {
      expect(t.output).toMatchObject({ completionStatus: 'complete', draftContent: expect.any(String) as unknown });
      expect(compiled.validator.validate(t.output)).toEqual([]);
    }
    await engine.close();
  });
});

/** Conditions (`skip_when`, `governance.require_approval.when`) read the run's data as input mappings name it. */
import { describe, expect, test } from 'vitest';
import { runWorkflow } from '../src/api/run.js';
import { parseWorkflow } from '../src/workflow/compile.js';
import { WorkflowSpec } from '../src/api/spec.js';
import { SourceFile } from '../src/diagnostics/source.js';

describe('conditions', () => {
  test('`$trigger.x` and `$initial_state.x`, as an input mapping writes them, read the trigger and the initial state', async () => {
    const spec = WorkflowSpec.fromString(`
openintent: "1.0"
info: {name: conditions}
workflow:
  a: {assign: x, skip_when: "$trigger.skip == true"}
  b: {assign: x, initial_state: {mode: fast}, skip_when: "$initial_state.mode == 'fast' && !has($trigger.keep)"}
  c: {assign: x, skip_when: "trigger.skip == false || '$trigger.skip' == 'x'"}
`);
    const r = await runWorkflow(spec, { agents: { x: () => ({}) }, trigger: { skip: true } });
    expect(Object.fromEntries(Object.entries(r.phases).map(([k, p]) => [k, p.status]))).toEqual({ a: 'skipped', b: 'skipped', c: 'completed' });
    expect(r.phases['a']!.skipped_detail).toContain('$trigger.skip == true'); // shown as written
    const kept = await runWorkflow(spec, { agents: { x: () => ({}) }, trigger: { skip: false, keep: 1 } });
    expect(Object.fromEntries(Object.entries(kept.phases).map(([k, p]) => [k, p.status]))).toEqual({ a: 'completed', b: 'completed', c: 'skipped' });
  });

  test('positions inside a condition that reads `$trigger` stay where the text is', () => {
    const text = `openintent: "1.0"
info: {name: conditions}
governance:
  require_approval: {when: "$trigger.risk == 'HIGH'"}
workflow:
  a: {assign: x, skip_when: "$trigger.n > 1 && nope.x"}
`;
    const r = parseWorkflow(text);
    const src = new SourceFile('w.yaml', text);
    expect(r.diagnostics.map((d) => [d.code, d.range ? src.position(d.range[0]) : undefined])).toEqual([['expression-unknown-name', { line: 6, column: 48 }]]);
  });
});

describe('a phase whose name CEL cannot spell', () => {
  // `draft-sections`, `write-section`: the specs' own names. CEL reads `draft-sections.n` as `draft - sections.n`.
  const text = `openintent: "1.0"
info: {name: hyphens}
workflow:
  fetch-data:
    assign: x
    outputs: {n: number}
  use:
    assign: x
    depends_on: [fetch-data]
    skip_when: "phases['fetch-data'].output.n > 1"
`;

  test("`phases['NAME'].output` reads its outputs", async () => {
    const spec = WorkflowSpec.fromString(text);
    const big = await runWorkflow(spec, { agents: { x: () => ({ n: 5 }) } });
    expect(big.phases['use']!.status).toBe('skipped');
    const small = await runWorkflow(spec, { agents: { x: () => ({ n: 0 }) } });
    expect(small.phases['use']!.status).toBe('completed');
  });

  test('`fetch-data.n` is one error on the name, whose hint spells the read that works', () => {
    const bad = text.replace(`"phases['fetch-data'].output.n > 1"`, `"fetch-data.n > 1"`);
    const r = parseWorkflow(bad);
    const src = new SourceFile('w.yaml', bad);
    expect(r.diagnostics.map((d) => [d.code, d.range ? src.position(d.range[0]) : undefined])).toEqual([['expression-unknown-name', { line: 10, column: 17 }]]);
    expect(r.diagnostics[0]!.message).toContain('`fetch-data`');
    expect(r.diagnostics[0]!.hint).toContain("phases['fetch-data'].output.n");
  });
});

describe('a phase named `trigger` or `initial_state`', () => {
  const text = `openintent: "1.0"
info: {name: shadows}
workflow:
  trigger:
    assign: x
    outputs: {v: number}
  initial_state:
    assign: x
    outputs: {v: number}
  by-payload:
    assign: x
    depends_on: [trigger, initial_state]
    initial_state: {v: 0}
    skip_when: "$trigger.v > 1 || trigger.v > 1 || $initial_state.v > 1"
  by-phase:
    assign: x
    depends_on: [trigger]
    skip_when: "phases.trigger.output.v > 1"
`;

  test('`trigger.x` and `$trigger.x` in a condition read the trigger payload, as everywhere; the phase is `phases.trigger.output`', async () => {
    const r = await runWorkflow(WorkflowSpec.fromString(text), { agents: { x: () => ({ v: 5 }) }, trigger: { v: 0 } });
    expect(r.phases['by-payload']!.status).toBe('completed');
    expect(r.phases['by-phase']!.status).toBe('skipped');
  });

  test('the compiler says which one a condition reads', () => {
    const r = parseWorkflow(text);
    const src = new SourceFile('w.yaml', text);
    // `$trigger.v` says which; the bare `trigger.v` could be either
    expect(r.diagnostics.map((d) => [d.severity, d.code, d.range ? src.position(d.range[0]) : undefined])).toEqual([['warning', 'expression-unknown-name', { line: 14, column: 35 }]]);
    expect(r.diagnostics[0]!.hint).toContain('phases.trigger.output');
  });
});

describe('`phases.NAME` in a condition', () => {
  test('names an upstream phase: a sibling would be read whenever it happens to finish, a typo never', () => {
    const text = `openintent: "1.0"
info: {name: phases}
governance:
  require_approval: {when: "phases.revew.status == 'failed'"}
workflow:
  a: {assign: x}
  sibling: {assign: x}
  b:
    assign: x
    depends_on: [a]
    skip_when: "phases.a.status == 'skipped' || phases.sibling.status == 'completed' || phases['revew'].status == 'failed'"
`;
    const r = parseWorkflow(text);
    const src = new SourceFile('w.yaml', text);
    expect(r.diagnostics.map((d) => [d.severity, d.code, d.range ? src.position(d.range[0]) : undefined])).toEqual([
      ['warning', 'expression-unknown-name', { line: 4, column: 36 }],
      ['error', 'expression-unknown-name', { line: 11, column: 56 }],
      ['error', 'expression-unknown-name', { line: 11, column: 97 }],
    ]);
  });

  test("an empty `phases['']` is positioned inside its quotes", () => {
    const text = `openintent: "1.0"\ninfo: {name: p}\nworkflow:\n  a: {assign: x}\n  h: {assign: x, depends_on: [a], skip_when: "phases[''].status == 'x'"}\n`;
    const r = parseWorkflow(text);
    const src = new SourceFile('w.yaml', text);
    expect(r.diagnostics.map((d) => [d.code, d.range ? src.position(d.range[0]) : undefined])).toEqual([['expression-unknown-name', { line: 5, column: 55 }]]);
  });
});

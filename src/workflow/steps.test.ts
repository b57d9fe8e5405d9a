/** The contract spec's step form: the same model as the 1.0 form, its artifacts, positions of its references. */
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadWorkflow, parseWorkflow } from './compile.js';
import type { WorkflowModel } from './model.js';
import { artifactPath, formOf } from './steps.js';

const dir = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'steps', 'write-paper');

/** What the engine reads of a model, in plain data (compiled types as their text). */
function shape(m: WorkflowModel): unknown {
  return {
    info: m.info,
    order: m.order,
    agents: Object.fromEntries(Object.entries(m.agents ?? {}).map(([id, a]) => [id, { contract: a.contract?.agentId, input: a.contract?.input?.schema, output: a.contract?.output?.schema }])),
    phases: m.phases.map((p) => ({
      name: p.name,
      assign: p.assign,
      dependsOn: [...p.dependsOn].sort(),
      inputs: p.inputs?.map((i) => ({ name: i.name, ref: i.ref, source: i.source, type: i.type.text })),
      outputs: p.outputs?.map((o) => ({ key: o.key, type: o.type.text, required: o.required })),
      forEach: p.forEach && { ref: p.forEach.ref, source: p.forEach.source, item: p.forEach.itemType.text, tolerated: p.forEach.toleratedFailures, gathered: p.forEach.gathered?.map((g) => `${g.key}: ${g.type.text}`) },
      retry: p.retry,
    })),
  };
}

describe('the step form', () => {
  test('a text in neither form names no form (docs/server.md: `form` absent)', () => {
    for (const text of ['', '# only a comment\n', 'foo: 1\n', '- a\n', '42\n']) expect(parseWorkflow(text).form, JSON.stringify(text)).toBeUndefined();
    expect(parseWorkflow('workflow: {}\n').form).toBe('openintent');
    expect(parseWorkflow('workflow: {steps: []}\n').form).toBe('steps');
    expect(parseWorkflow('openintent: "1.0"\n').form).toBe('openintent');
  });

  test('the spec\u2019s write-paper example compiles to the same model as its 1.0 form', async () => {
    const steps = await loadWorkflow(join(dir, 'workflow.yaml'));
    const yaml = await loadWorkflow(join(dir, 'openintent.yaml'));
    // the spec's own contract (verbatim) is for step `write-section`, does not describe the step's `draft`, and
    // lets every item update memory/section-status.yaml: warnings, never errors
    const warned = ['warning contract-mismatch', 'warning fan-out-shared-write', 'warning output-schema-mismatch'];
    expect(steps.diagnostics.map((d) => `${d.severity} ${d.code}`).sort()).toEqual(warned);
    expect(yaml.diagnostics.map((d) => `${d.severity} ${d.code}`).sort()).toEqual(warned);
    expect(steps.form).toBe('steps');
    expect(yaml.form).toBe('openintent');
    expect(shape(steps.model!)).toEqual(shape(yaml.model!));
    expect(steps.model!.form).toBe('steps');
    expect(steps.model!.artifacts).toEqual([
      { phase: 'consolidate', key: 'researchDoc', path: ['researchDoc'], text: 'artifacts.researchDoc' },
      { phase: 'outline', key: 'outline', path: ['outline'], text: 'artifacts.outline' },
      { phase: 'draft-sections', key: 'draft', path: ['drafts', { item: ['name'] }], text: 'artifacts.drafts.{$item.name}' },
    ]);
  });

  test('a typed `$store` output types the edge; `context.artifacts` reads as `artifacts`', () => {
    const r = parseWorkflow(`workflow:
  name: typed
  steps:
    - id: a
      agent: x
      outputs: {items: {$store: artifacts.items, type: "string[]"}}
    - id: b
      agent: x
      dependsOn: [a]
      forEach: {$ref: context.artifacts.items}
      inputs: {one: {$item: ""}, at: {$ref: artifacts.items}}
`);
    expect(r.diagnostics).toEqual([]);
    const b = r.model!.byName.get('b')!;
    expect(b.forEach?.itemType.text).toBe('string');
    expect(b.inputs?.map((i) => `${i.name}: ${i.type.text}`)).toEqual(['one: string', 'at: string[]']);
  });

  test('a `$ref` to an artifact no upstream step stores is positioned at the `$ref`', () => {
    const r = parseWorkflow('workflow:\n  name: x\n  steps:\n    - id: a\n      agent: x\n      outputs: {o: {$store: artifacts.o}}\n    - id: b\n      agent: x\n      inputs: {v: {$ref: artifacts.o}}\n');
    expect(r.diagnostics.map((d) => `${d.code} ${d.path.join('.')}`)).toEqual(['input-not-dependency workflow.steps.1.inputs.v.$ref']);
  });

  test('an artifact written as a plain string is told to use `$ref`; a wrapper forEach does not take names only what it takes', () => {
    const r = parseWorkflow('workflow:\n  name: x\n  steps:\n    - id: a\n      agent: x\n      outputs: {o: {$store: artifacts.outline, type: "string[]"}}\n    - id: b\n      agent: x\n      dependsOn: [a]\n      forEach: "artifacts.outline"\n    - id: c\n      agent: x\n      dependsOn: [a]\n      forEach: {$item: ""}\n      inputs: {v: artifacts.outline}\n');
    expect(r.diagnostics.map((d) => `${d.code} ${d.path.join('.')} ${d.hint ?? ''}`)).toEqual([
      'input-bad-syntax workflow.steps.1.forEach `{$ref: "artifacts.outline"}`',
      'input-bad-syntax workflow.steps.2.forEach e.g. `{$ref: "artifacts.outline"}` or `{$input: topic}`',
      'input-bad-syntax workflow.steps.2.inputs.v `{$ref: "artifacts.outline"}`',
    ]);
  });

  test('fan-out hints name the step form\'s own `forEach: {$ref: ...}`, not the 1.0 form\'s `phase.key`', () => {
    const r = parseWorkflow('workflow:\n  name: x\n  steps:\n    - id: a\n      agent: x\n      inputs: {v: {$item: name}}\n      max_parallel: 2\n    - id: b\n      agent: x\n      forEach: null\n');
    expect(r.diagnostics.map((d) => `${d.code} ${d.hint ?? ''}`)).toEqual([
      'item-outside-for-each add `forEach: {$ref: "artifacts.outline.sections"}` to the step, or read an upstream output instead',
      'fan-out-setting-unused fan the step out with `forEach: {$ref: "artifacts.outline.sections"}`, or remove `max_parallel`',
      'wrong-type give it an array to fan out over (`forEach: {$ref: "artifacts.outline.sections"}`), or remove the key',
    ]);
  });

  test('the spec\'s parse-time errors speak of steps, capitalised or not (`Step \'b\' depends on unknown step`)', () => {
    const r = parseWorkflow('workflow:\n  name: x\n  steps:\n    - id: a\n      agent: x\n      dependsOn: [b]\n    - id: c\n      agent: x\n      dependsOn: [d]\n    - id: d\n      agent: x\n      dependsOn: [c]\n');
    expect(r.diagnostics.map((d) => d.code).sort()).toEqual(['dependency-cycle', 'unknown-dependency']);
    for (const d of r.diagnostics) expect(`${d.message} ${d.hint ?? ''}`).not.toMatch(/\bphases?\b/i);
    // an example in a hint is written as a step
    const empty = parseWorkflow('workflow:\n  name: x\n  steps: []\n');
    expect(empty.diagnostics.map((d) => `${d.code} ${d.hint ?? ''}`)).toEqual(['empty-workflow add a step: `- {id: research, agent: researcher}`']);
  });

  test('InputWiringError diagnostics of the step form carry the RFC fields (phase_name, invalid_refs, suggestion)', () => {
    const r = parseWorkflow('workflow:\n  name: x\n  steps:\n    - id: a\n      agent: x\n      outputs: {o: {$store: artifacts.o}}\n    - id: b\n      dependsOn: [a]\n      inputs: {v: {$ref: artifacts.p}, w: {$nope: 1}, u: {$ref: "memory/x.yaml"}}\n');
    const wiring = r.diagnostics.filter((d) => d.error === 'InputWiringError');
    expect(wiring.map((d) => d.code).sort()).toEqual(['input-bad-syntax', 'input-bad-syntax', 'unknown-artifact']);
    for (const d of wiring) expect(Object.keys(d.data ?? {}).sort()).toEqual(['invalid_refs', 'phase_name', 'suggestion']);
    expect(wiring.find((d) => d.code === 'unknown-artifact')!.data).toMatchObject({ phase_name: 'b', invalid_refs: ['artifacts.p'] });
    // a missing `agent` is named in the step form's words, its field too
    expect(r.diagnostics.find((d) => d.code === 'missing-field')!.data).toEqual({ field: 'agent' });
  });

  test('a condition\'s `phases` (a CEL name, the same in both forms) is not translated to `steps`', () => {
    const r = parseWorkflow(`workflow:
  name: w
  version: "1.0.0"
  steps:
    - {id: a-one, agent: x, outputs: {doc: {$store: "artifacts.doc"}}}
    - {id: b, agent: x}
    - {id: c, agent: y, dependsOn: [a-one], skip_when: "a-one.doc == '' || nope.x"}
`);
    const hints = r.diagnostics.map((d) => `${d.message} | ${d.hint}`);
    expect(hints).toHaveLength(2);
    expect(hints[0]).toContain("read it as `phases['a-one'].output.doc` (and its status as `phases['a-one'].status`)");
    expect(hints[0]).toContain('`a-one` cannot be written as a name'); // the step form's words elsewhere
    expect(hints[1]).toContain('available names: trigger, initial_state, phases, a-one');
  });

  test('formOf and artifactPath', () => {
    expect(formOf({ workflow: { steps: [] } })).toBe('steps');
    expect(formOf({ openintent: '1.0', workflow: { steps: {} } })).toBe('openintent');
    expect(artifactPath('artifacts.drafts.{$item.name}')).toEqual(['drafts', { item: ['name'] }]);
    expect(artifactPath('context.artifacts.outline')).toEqual(['outline']);
    expect(artifactPath('memory/outline.yaml')).toBeUndefined();
    expect(artifactPath('artifacts.a..b')).toBeUndefined();
  });
});

/** `x-trigger`: the trigger's declared type types `$trigger.*` inputs (edge typing) and is checked when a run starts. */
import { describe, expect, test } from 'vitest';
import { parseWorkflow } from './compile.js';

const wf = (trigger: string, inputs: string): string => `openintent: "1.0"
info: {name: t}
types:
  Req: {topic: string, depth: {type: integer, required: false}}
x-trigger: ${trigger}
workflow:
  a: {assign: w, inputs: ${inputs}, outputs: {n: number}}
  b: {assign: w, depends_on: [a], inputs: {n: a.n}}
`;

describe('x-trigger', () => {
  test('an inline record or a named type; $trigger inputs get its field types', () => {
    for (const t of ['{topic: string, depth: {type: integer, required: false}}', 'Req']) {
      const r = parseWorkflow(wf(t, '{topic: $trigger.topic}'));
      expect(r.ok).toBe(true);
      if (!r.ok) continue;
      expect(r.model.trigger?.check({ topic: 'x' })).toBe(true);
      expect(r.model.trigger?.check({ topic: 3 })).toBe(false);
      expect(r.model.phases[0]!.inputType.jsonSchema()).toMatchObject({ properties: { topic: { type: 'string' } } });
    }
  });

  test('a key the trigger does not declare is a positioned wiring error', () => {
    const r = parseWorkflow(wf('Req', '{topic: $trigger.topc}'));
    expect(r.ok).toBe(false);
    expect(r.diagnostics.map((d) => [d.code, d.path.join('.')])).toEqual([['input-path-invalid', 'workflow.a.inputs.topic']]);
  });

  test('an unknown type in x-trigger is a diagnostic at its key', () => {
    const r = parseWorkflow(wf('{topic: Strin}', '{topic: $trigger.topic}'));
    expect(r.ok).toBe(false);
    expect(r.diagnostics[0]?.path).toEqual(['x-trigger', 'topic']);
  });

  test('without x-trigger, $trigger inputs take any JSON', () => {
    const r = parseWorkflow(wf('null', '{topic: $trigger.anything.at.all}'));
    expect(r.ok && r.model.trigger).toBe(undefined);
  });
});

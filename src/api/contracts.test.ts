/** RFC-0024 runtime checks as pure functions: claim (§3.1), hand-off (§3.2), completion (§3.3), payloads (§4). */
import { describe, expect, test } from 'vitest';
import { WorkflowSpec } from './spec.js';
import { MissingOutputError, OutputTypeMismatchError, UnresolvableInputError, UpstreamIntentSuspendedError, WorkflowValidationError } from '../workflow/errors.js';
import { checkTaskOutputs, resolveTaskInputs, validateClaimInputs, validateTaskOutputs } from '../workflow/runtime.js';

const spec = WorkflowSpec.fromString(`openintent: "1.0"
info: {name: "Contracts"}
types:
  Finding: {source: string, confidence: number}
  Summary: {title: string, words: integer}
workflow:
  research:
    assign: r
    inputs: {topic: $trigger.topic, depth: $initial_state.depth}
    initial_state: {depth: 3, empty: null}
    outputs:
      findings: Finding[]
      summary: Summary
      note: {type: string, required: false}
  analysis:
    assign: a
    depends_on: [research]
    inputs: {items: research.findings, title: research.summary.title, note: research.note}
  legacy:
    assign: l
`);
const research = spec.phase('research')!;
const analysis = spec.phase('analysis')!;
const legacy = spec.phase('legacy')!;
const upstream = { research: { findings: [{ source: 's', confidence: 1 }], summary: { title: 'T', words: 3 }, note: 'n' } };

describe('resolveTaskInputs / validateClaimInputs', () => {
  test('exactly the declared keys, reaching into values; static inputs from trigger and initial state', () => {
    expect(resolveTaskInputs(analysis, upstream)).toEqual({ items: [{ source: 's', confidence: 1 }], title: 'T', note: 'n' });
    expect(resolveTaskInputs(research, {}, { trigger: { topic: 'x', other: 1 } })).toEqual({ topic: 'x', depth: 3 });
    expect(resolveTaskInputs(legacy, upstream)).toEqual({});
    expect(spec.resolveTaskInputs('analysis', new Map(Object.entries(upstream)))).toEqual(resolveTaskInputs(analysis, upstream));
  });

  test('UnresolvableInputError lists every unresolvable reference, with the RFC payload', () => {
    let err: unknown;
    try {
      validateClaimInputs(analysis, { research: { findings: [], summary: {} } }, { taskId: 'task_01HABC' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UnresolvableInputError);
    const e = err as UnresolvableInputError;
    expect(e.unresolvable_refs).toEqual(['research.summary.title', 'research.note']);
    expect(e.toJSON()).toEqual({ error: 'UnresolvableInputError', task_id: 'task_01HABC', phase_name: 'analysis', unresolvable_refs: ['research.summary.title', 'research.note'], message: e.message });
  });

  test('the RFC example message for a single missing key', () => {
    expect(() => validateClaimInputs(analysis, { research: { summary: { title: 't' }, note: 'n' } }, { taskId: 't' })).toThrow("Task claim rejected: upstream phase 'research' did not record output key 'findings'");
  });

  test('static inputs must be non-null; an upstream that has not completed is unresolvable', () => {
    expect(() => validateClaimInputs(research, {}, { trigger: { topic: null } })).toThrow(UnresolvableInputError);
    expect(() => validateClaimInputs(research, {}, { trigger: {}, initialState: { depth: 1 } })).toThrow(/topic/);
    expect(() => validateClaimInputs(analysis, {})).toThrow(/has not completed/);
  });

  test('UpstreamIntentSuspendedError comes first (RFC-0026 patch)', () => {
    let err: unknown;
    try {
      validateClaimInputs(analysis, {}, { taskId: 't1', suspended: { research: { intentId: 'intent_01ABC', expectedResumeAt: '2026-03-24T13:00:00Z' } } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UpstreamIntentSuspendedError);
    expect((err as UpstreamIntentSuspendedError).toJSON()).toEqual({
      error: 'UpstreamIntentSuspendedError',
      task_id: 't1',
      phase_name: 'analysis',
      suspended_intent_id: 'intent_01ABC',
      expected_resume_at: '2026-03-24T13:00:00Z',
      message: (err as Error).message,
    });
  });
});

describe('validateTaskOutputs', () => {
  const good = { findings: [{ source: 's', confidence: 0.5 }], summary: { title: 't', words: 2 } };

  test('a fitting output is recorded with its extra keys', () => {
    expect(validateTaskOutputs(research, { ...good, extra: [1] })).toEqual({ ...good, extra: [1] });
  });

  test('MissingOutputError names every missing key and carries every issue', () => {
    const r = checkTaskOutputs(research, { summary: { title: 1 } }, { taskId: 'task_01HXYZ' });
    expect(r.ok).toBe(false);
    const e = (r as { error: MissingOutputError }).error;
    expect(e).toBeInstanceOf(MissingOutputError);
    expect(e.toJSON()).toEqual({
      error: 'MissingOutputError',
      task_id: 'task_01HXYZ',
      phase_name: 'research',
      missing_keys: ['findings'],
      issues: [
        expect.objectContaining({ key: 'findings', pointer: '/findings', kind: 'missing', expected: 'Finding[]' }),
        expect.objectContaining({ key: 'summary', pointer: '/summary/title', kind: 'type', expected: 'string', actual: 'number' }),
        expect.objectContaining({ key: 'summary', pointer: '/summary/words', kind: 'required' }),
      ],
      message: "Task completion rejected: declared output key 'findings' was not present in agent return value",
    });
    expect(() => validateTaskOutputs(research, null)).toThrow(MissingOutputError);
  });

  test('OutputTypeMismatchError: the first mismatched key in declaration order, every issue listed', () => {
    let err: unknown;
    try {
      validateTaskOutputs(research, { findings: [{ source: 's', confidence: true }], summary: 'no', note: 3 }, { taskId: 't' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OutputTypeMismatchError);
    const j = (err as OutputTypeMismatchError).toJSON();
    expect(j).toMatchObject({ error: 'OutputTypeMismatchError', task_id: 't', phase_name: 'research', key: 'findings', expected_type: 'Finding[]', actual_type: 'array' });
    expect(Object.keys(j)).toEqual(['error', 'task_id', 'phase_name', 'key', 'expected_type', 'actual_type', 'issues', 'message']);
    expect((j['issues'] as { pointer: string; actual: string }[]).map((i) => [i.pointer, i.actual])).toEqual([
      ['/findings/0/confidence', 'boolean'],
      ['/summary', 'string'],
      ['/note', 'number'],
    ]);
  });

  test('no coercion at the top level either', () => {
    expect(() => validateTaskOutputs(research, { ...good, summary: { title: 't', words: '2' } })).toThrow(OutputTypeMismatchError);
    expect(() => validateTaskOutputs(research, { ...good, note: null })).toThrow(OutputTypeMismatchError);
  });

  test('no outputs declared: any object or nothing, but not a non-object or non-JSON', () => {
    expect(validateTaskOutputs(legacy, { anything: [1, { a: null }] })).toEqual({ anything: [1, { a: null }] });
    expect(validateTaskOutputs(legacy, undefined)).toEqual({});
    expect(() => validateTaskOutputs(legacy, 'text')).toThrow(OutputTypeMismatchError);
    expect(() => validateTaskOutputs(legacy, { when: new Date(0) })).toThrow(OutputTypeMismatchError);
  });
});

describe('WorkflowSpec', () => {
  test('fromString throws WorkflowValidationError carrying every diagnostic, including InputWiringErrors', () => {
    let err: unknown;
    try {
      WorkflowSpec.fromString(`openintent: "1.0"\ninfo: {name: x}\nworkflow:\n  a: {assign: x}\n  b: {assign: x, inputs: {p: a.q, r: zz.q}}\n`);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(WorkflowValidationError);
    const e = err as WorkflowValidationError;
    expect(e.diagnostics.map((d) => d.code)).toEqual(['input-not-dependency', 'input-unknown-phase']);
    expect(e.inputWiringErrors.map((w) => w.toJSON())).toEqual([
      expect.objectContaining({ error: 'InputWiringError', phase_name: 'b', invalid_refs: ['a.q'] }),
      expect.objectContaining({ error: 'InputWiringError', phase_name: 'b', invalid_refs: ['zz.q'] }),
    ]);
  });

  test('toPortfolioSpec keeps inputs and outputs (RFC-0024 §7)', () => {
    const p = spec.toPortfolioSpec();
    expect(p.intents.find((i) => i.name === 'analysis')).toMatchObject({ depends_on: ['research'], inputs: { items: 'research.findings', title: 'research.summary.title', note: 'research.note' } });
    expect(p.intents.find((i) => i.name === 'research')!.outputs).toEqual({ findings: 'Finding[]', summary: 'Summary', note: { type: 'string', required: false } });
  });
});

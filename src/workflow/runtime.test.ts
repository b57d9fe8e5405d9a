/**
 * The RFC-0024 runtime checks (runtime.ts) on compiled phases: claim-time resolution (§3.1, with the
 * RFC-0026 suspension patch), pre-handoff population (§3.2), completion-time validation (§3.3), and each
 * error's payload (§4) field by field.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { parseWorkflow } from './compile.js';
import { fromPayload, MissingOutputError, OutputTypeMismatchError, UnresolvableInputError, UpstreamIntentSuspendedError, WorkflowError } from './errors.js';
import type { PhaseModel } from './model.js';
import { checkTaskOutputs, resolveBinding, resolveTaskInputs, tryResolveTaskInputs, validateClaimInputs, validateTaskOutputs } from './runtime.js';

const compiled = parseWorkflow(`openintent: "1.0"
info: {name: "Runtime"}
types:
  Finding:
    source: string
    confidence: number
    tags: {type: "string[]", required: false}
  Summary: {title: string, words: integer}
  Level: {enum: [low, medium, high]}
workflow:
  research:
    assign: r
    initial_state: {depth: 2, nothing: null, nested: {region: eu, list: [a, b]}}
    inputs:
      topic: $trigger.topic
      depth: $initial_state.depth
      region: $initial_state.nested.region
    outputs:
      findings: Finding[]
      summary: Summary
      level: Level
      owner: string | null
      note: {type: string, required: false}
      rank: {type: integer, required: false}
  analysis:
    assign: a
    depends_on: [research]
    inputs:
      items: research.findings
      title: research.summary.title
      first_source: research.findings.0.source
      owner: research.owner
      note: research.note
    outputs:
      insights: string
      score: number
      flags: array<boolean>
  legacy:
    assign: l
  consumer:
    assign: c
    depends_on: [legacy, research]
    inputs:
      anything: legacy.whatever
      deep: legacy.a.b.0
      proto: legacy.toString
      level: research.level
      again: research.level
      topic: $trigger.topic
  static_only:
    assign: s
    depends_on: [research]
    inputs:
      quarter: $trigger.quarter
      source: $initial_state.source
    outputs:
      optional_a: {type: string, required: false}
      optional_b: {enum: [1, 2], required: false}
  listed:
    assign: l
    outputs: [alpha, beta]
  empty:
    assign: e
    outputs: {}
  odd:
    assign: o
    outputs:
      "a/b": number
      "m~n": string
      "cost$&": number
`);
if (!compiled.ok) throw new Error(compiled.diagnostics.map((d) => `${d.code}: ${d.message}`).join('\n'));
const model = compiled.model;
const phase = (name: string): PhaseModel => model.byName.get(name)!;
const research = phase('research');
const analysis = phase('analysis');
const legacy = phase('legacy');
const consumer = phase('consumer');
const staticOnly = phase('static_only');
const listed = phase('listed');
const empty = phase('empty');
const odd = phase('odd');

const RESEARCH_OUT = {
  findings: [
    { source: 'rfc', confidence: 0.9 },
    { source: 'blog', confidence: 1, tags: ['x'] },
  ],
  summary: { title: 'Wiring', words: 120 },
  level: 'high',
  owner: null,
  note: 'n',
};

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw');
}

describe('resolveTaskInputs (§3.2)', () => {
  test('ctx.input holds exactly the declared keys, reaching into upstream values', () => {
    const input = resolveTaskInputs(analysis, { research: { ...RESEARCH_OUT, extra: 'not wired' } });
    expect(input).toEqual({ items: RESEARCH_OUT.findings, title: 'Wiring', first_source: 'rfc', owner: null, note: 'n' });
    expect(Object.keys(input)).toEqual(['items', 'title', 'first_source', 'owner', 'note']);
  });

  test('upstream outputs may be a Map; a null upstream value resolves (only its presence is required)', () => {
    const input = resolveTaskInputs(analysis, new Map([['research', RESEARCH_OUT]]));
    expect(input['owner']).toBeNull();
    expect(input).toEqual(resolveTaskInputs(analysis, { research: RESEARCH_OUT }));
  });

  test('a phase without inputs gets {} whatever is available', () => {
    expect(resolveTaskInputs(legacy, { research: RESEARCH_OUT }, { trigger: { topic: 'x' } })).toEqual({});
    expect(resolveTaskInputs(listed, {})).toEqual({});
  });

  test('static inputs come from the trigger and the phase initial_state (or the one given)', () => {
    expect(resolveTaskInputs(research, {}, { trigger: { topic: 'io', other: 1 } })).toEqual({ topic: 'io', depth: 2, region: 'eu' });
    expect(resolveTaskInputs(research, {}, { trigger: { topic: 'io' }, initialState: { depth: 5, nested: { region: 'us' } } })).toEqual({ topic: 'io', depth: 5, region: 'us' });
    // falsy values are values: only null and absence are rejected
    expect(resolveTaskInputs(research, {}, { trigger: { topic: '' }, initialState: { depth: 0, nested: { region: false } } })).toEqual({ topic: '', depth: 0, region: false });
  });

  test('an unresolvable input throws UnresolvableInputError with the RFC payload', () => {
    const e = thrown(() => resolveTaskInputs(analysis, { research: { ...RESEARCH_OUT, findings: undefined } }, { taskId: 'task_01HABC' })) as UnresolvableInputError;
    expect(e).toBeInstanceOf(UnresolvableInputError);
    expect(e).toBeInstanceOf(WorkflowError);
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('UnresolvableInputError');
    expect(e.error).toBe('UnresolvableInputError');
    expect(e.task_id).toBe('task_01HABC');
    expect(e.phase_name).toBe('analysis');
    expect(e.unresolvable_refs).toEqual(['research.findings', 'research.findings.0.source']);
    expect(e.message).toBe(
      "Task claim rejected: 2 inputs could not be resolved: upstream phase 'research' did not record output key 'findings'; upstream phase 'research' did not record output key 'findings'",
    );
    const j = e.toJSON();
    expect(Object.keys(j)).toEqual(['error', 'task_id', 'phase_name', 'unresolvable_refs', 'message']);
    expect(j).toEqual({ error: 'UnresolvableInputError', task_id: 'task_01HABC', phase_name: 'analysis', unresolvable_refs: ['research.findings', 'research.findings.0.source'], message: e.message });
    expect(JSON.parse(JSON.stringify(e))).toEqual(j);
  });

  test('the RFC example message, for one missing upstream key', () => {
    const e = thrown(() => resolveTaskInputs(analysis, { research: { ...RESEARCH_OUT, note: undefined } }, { taskId: 'task_01HABC' })) as UnresolvableInputError;
    expect(e.toJSON()).toEqual({
      error: 'UnresolvableInputError',
      task_id: 'task_01HABC',
      phase_name: 'analysis',
      unresolvable_refs: ['research.note'],
      message: "Task claim rejected: upstream phase 'research' did not record output key 'note'",
    });
  });

  test('the default task id is task_<phase>', () => {
    const e = thrown(() => resolveTaskInputs(analysis, {})) as UnresolvableInputError;
    expect(e.task_id).toBe('task_analysis');
  });

  test('every unresolvable reference is listed once, in declaration order, each with its reason', () => {
    const e = thrown(() => resolveTaskInputs(consumer, {}, { trigger: {} })) as UnresolvableInputError;
    expect(e.unresolvable_refs).toEqual(['legacy.whatever', 'legacy.a.b.0', 'legacy.toString', 'research.level', '$trigger.topic']);
    expect(e.message).toBe(
      "Task claim rejected: 5 inputs could not be resolved: upstream phase 'legacy' has not completed; upstream phase 'legacy' has not completed; upstream phase 'legacy' has not completed; upstream phase 'research' has not completed; the trigger payload has no value for 'topic'",
    );
  });

  test('paths into upstream values: missing key, missing member, index out of range, not an index', () => {
    const refs = (legacyOut: unknown) => {
      const r = tryResolveTaskInputs(consumer, { legacy: legacyOut, research: RESEARCH_OUT }, { trigger: { topic: 't' } });
      return r.ok ? [] : r.error.unresolvable_refs;
    };
    // `toString` is never found on Object.prototype: only own keys of recorded outputs count
    expect(refs({ whatever: 1, a: { b: [0] } })).toEqual(['legacy.toString']);
    expect(refs({ whatever: 1, a: { b: [] }, toString: 't' })).toEqual(['legacy.a.b.0']);
    expect(refs({ whatever: 1, a: { b: { 0: 'object, not array' } }, toString: 't' })).toEqual([]); // plain objects have member "0"
    expect(refs({ whatever: 1, a: 'str', toString: 't' })).toEqual(['legacy.a.b.0']);
    expect(refs({ whatever: 1, a: { c: 1 }, toString: 't' })).toEqual(['legacy.a.b.0']);
    expect(refs({ a: { b: [null] }, toString: 't' })).toEqual(['legacy.whatever']);
    const e = thrown(() => resolveTaskInputs(consumer, { legacy: { whatever: 1, a: { b: [] }, toString: 't' }, research: RESEARCH_OUT }, { trigger: { topic: 't' } })) as UnresolvableInputError;
    expect(e.message).toBe("Task claim rejected: 'legacy.a.b.0' does not exist in the output of upstream phase 'legacy'");
  });

  test('a path into a null upstream value resolves to... nothing: unresolvable', () => {
    const e = thrown(() => resolveTaskInputs(consumer, { legacy: { whatever: 1, a: null, toString: 't' }, research: RESEARCH_OUT }, { trigger: { topic: 't' } })) as UnresolvableInputError;
    expect(e.unresolvable_refs).toEqual(['legacy.a.b.0']);
  });

  test('a recorded null at the end of the path resolves', () => {
    expect(resolveTaskInputs(consumer, { legacy: { whatever: null, a: { b: [null] }, toString: 't' }, research: RESEARCH_OUT }, { trigger: { topic: 't' } })).toEqual({
      anything: null,
      deep: null,
      proto: 't',
      level: 'high',
      again: 'high',
      topic: 't',
    });
  });

  test('tryResolveTaskInputs is the non-throwing form', () => {
    expect(tryResolveTaskInputs(research, {}, { trigger: { topic: 't' } })).toEqual({ ok: true, input: { topic: 't', depth: 2, region: 'eu' } });
    const r = tryResolveTaskInputs(research, {}, {});
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toBeInstanceOf(UnresolvableInputError);
    expect(!r.ok && r.error.unresolvable_refs).toEqual(['$trigger.topic']);
  });
});

describe('static inputs must be non-null (§3.1.3)', () => {
  test('null or absent trigger values are unresolvable, with the reason', () => {
    const cases: [unknown, string][] = [
      [{ topic: null }, "Task claim rejected: the trigger payload has null for 'topic'; static inputs must be non-null"],
      [{}, "Task claim rejected: the trigger payload has no value for 'topic'"],
      [undefined, "Task claim rejected: the trigger payload has no value for 'topic'"],
      [null, "Task claim rejected: the trigger payload has no value for 'topic'"],
      ['topic', "Task claim rejected: the trigger payload has no value for 'topic'"],
      [{ topic: undefined }, "Task claim rejected: the trigger payload has no value for 'topic'"],
    ];
    for (const [trigger, message] of cases) {
      const e = thrown(() => validateClaimInputs(research, {}, { trigger, taskId: 't' })) as UnresolvableInputError;
      expect(e.toJSON()).toEqual({ error: 'UnresolvableInputError', task_id: 't', phase_name: 'research', unresolvable_refs: ['$trigger.topic'], message });
    }
  });

  test('null or absent initial-state values are unresolvable, nested ones too', () => {
    const e = thrown(() => validateClaimInputs(research, {}, { trigger: { topic: 't' }, initialState: { depth: null, nested: { region: null } } })) as UnresolvableInputError;
    expect(e.unresolvable_refs).toEqual(['$initial_state.depth', '$initial_state.nested.region']);
    expect(e.message).toContain("the initial state has null for 'depth'; static inputs must be non-null");
    expect(e.message).toContain("the initial state has null for 'nested.region'");
    const e2 = thrown(() => validateClaimInputs(staticOnly, {}, { trigger: { quarter: 'Q3' } })) as UnresolvableInputError;
    expect(e2.toJSON()).toEqual({
      error: 'UnresolvableInputError',
      task_id: 'task_static_only',
      phase_name: 'static_only',
      unresolvable_refs: ['$initial_state.source'],
      message: "Task claim rejected: the initial state has no value for 'source'",
    });
  });

  test('resolveBinding reports one binding at a time', () => {
    const [topic] = research.inputs!;
    expect(resolveBinding(topic!, {}, { topic: 'x' }, {})).toEqual({ ok: true, value: 'x' });
    expect(resolveBinding(topic!, {}, { topic: null }, {})).toMatchObject({ ok: false, reason: expect.stringContaining('non-null') as unknown });
  });
});

describe('validateClaimInputs (§3.1, RFC-0026 patch)', () => {
  test('returns the resolved input when every reference resolves', () => {
    expect(validateClaimInputs(analysis, { research: RESEARCH_OUT }, { taskId: 't' })).toEqual(resolveTaskInputs(analysis, { research: RESEARCH_OUT }));
  });

  test('UpstreamIntentSuspendedError comes first, before any UnresolvableInputError, with the RFC-0026 payload', () => {
    const e = thrown(() =>
      validateClaimInputs(consumer, {}, { taskId: 'task_9', suspended: { research: { intentId: 'intent_01ABC', expectedResumeAt: '2026-03-24T13:00:00Z' } } }),
    ) as UpstreamIntentSuspendedError;
    expect(e).toBeInstanceOf(UpstreamIntentSuspendedError);
    expect(e.name).toBe('UpstreamIntentSuspendedError');
    expect(e.error).toBe('UpstreamIntentSuspendedError');
    expect(e.task_id).toBe('task_9');
    expect(e.phase_name).toBe('consumer');
    expect(e.suspended_intent_id).toBe('intent_01ABC');
    expect(e.expected_resume_at).toBe('2026-03-24T13:00:00Z');
    expect(e.message).toBe("Task claim rejected: upstream intent 'intent_01ABC' is suspended awaiting input");
    const j = e.toJSON();
    expect(Object.keys(j)).toEqual(['error', 'task_id', 'phase_name', 'suspended_intent_id', 'expected_resume_at', 'message']);
    expect(j).toEqual({
      error: 'UpstreamIntentSuspendedError',
      task_id: 'task_9',
      phase_name: 'consumer',
      suspended_intent_id: 'intent_01ABC',
      expected_resume_at: '2026-03-24T13:00:00Z',
      message: "Task claim rejected: upstream intent 'intent_01ABC' is suspended awaiting input",
    });
  });

  test('the suspended upstream is the first one in input order; defaults: resume time null, intent id = phase name', () => {
    const e = thrown(() => validateClaimInputs(consumer, {}, { suspended: { research: { intentId: 'i_r' }, legacy: {} } })) as UpstreamIntentSuspendedError;
    expect(e.toJSON()).toMatchObject({ task_id: 'task_consumer', suspended_intent_id: 'legacy', expected_resume_at: null });
    const e2 = thrown(() => validateClaimInputs(analysis, {}, { suspended: { research: { intentId: 'i_r', expectedResumeAt: null } } })) as UpstreamIntentSuspendedError;
    expect(e2.expected_resume_at).toBeNull();
  });

  test('suspension matters only for upstream phases the inputs read', () => {
    // static_only depends on research but reads only static inputs
    expect(validateClaimInputs(staticOnly, {}, { trigger: { quarter: 'Q3' }, initialState: { source: 'db' }, suspended: { research: { intentId: 'i' } } })).toEqual({ quarter: 'Q3', source: 'db' });
    expect(validateClaimInputs(legacy, {}, { suspended: { research: { intentId: 'i' } } })).toEqual({});
    // an unrelated suspended phase: the usual resolution
    expect(() => validateClaimInputs(analysis, {}, { suspended: { legacy: { intentId: 'i' } } })).toThrow(UnresolvableInputError);
    // `suspended` is looked up by own key only
    expect(() => validateClaimInputs(analysis, { research: RESEARCH_OUT }, { suspended: {} })).not.toThrow();
  });

  test('UnresolvableInputError from a claim carries the claim task id', () => {
    const e = thrown(() => validateClaimInputs(analysis, { research: {} }, { taskId: 'task_01HABC' })) as UnresolvableInputError;
    expect(e.toJSON()).toEqual({
      error: 'UnresolvableInputError',
      task_id: 'task_01HABC',
      phase_name: 'analysis',
      unresolvable_refs: ['research.findings', 'research.summary.title', 'research.findings.0.source', 'research.owner', 'research.note'],
      message: e.message,
    });
  });
});

describe('validateTaskOutputs (§3.3)', () => {
  const good = { findings: [{ source: 's', confidence: 0.5 }], summary: { title: 't', words: 2 }, level: 'low', owner: 'me' };

  test('a fitting output is recorded as returned, extra keys included; optional keys may be absent', () => {
    expect(validateTaskOutputs(research, good)).toBe(good);
    const withExtra = { ...good, note: 'n', rank: 3, extra: { deep: [1, null] } };
    expect(validateTaskOutputs(research, withExtra)).toEqual(withExtra);
    expect(validateTaskOutputs(research, { ...good, owner: null })).toEqual({ ...good, owner: null });
    expect(checkTaskOutputs(research, good)).toEqual({ ok: true, output: good });
  });

  test('an integer passes as a number', () => {
    expect(validateTaskOutputs(analysis, { insights: 'i', score: 3, flags: [] })).toEqual({ insights: 'i', score: 3, flags: [] });
  });

  test('MissingOutputError: every missing required key, every issue, the RFC payload plus issues', () => {
    const r = checkTaskOutputs(research, { summary: { title: 1 }, owner: 'x', note: 5 }, { taskId: 'task_01HXYZ' });
    expect(r.ok).toBe(false);
    const e = (r as { ok: false; error: MissingOutputError }).error;
    expect(e).toBeInstanceOf(MissingOutputError);
    expect(e.name).toBe('MissingOutputError');
    expect(e.error).toBe('MissingOutputError');
    expect(e.task_id).toBe('task_01HXYZ');
    expect(e.phase_name).toBe('research');
    expect(e.missing_keys).toEqual(['findings', 'level']);
    expect(e.message).toBe("Task completion rejected: declared output keys 'findings', 'level' were not present in agent return value");
    const j = e.toJSON();
    expect(Object.keys(j)).toEqual(['error', 'task_id', 'phase_name', 'missing_keys', 'issues', 'message']);
    expect(j).toEqual({
      error: 'MissingOutputError',
      task_id: 'task_01HXYZ',
      phase_name: 'research',
      missing_keys: ['findings', 'level'],
      issues: [
        { key: 'findings', pointer: '/findings', kind: 'missing', expected: 'Finding[]', actual: 'undefined', message: 'required output `findings` (Finding[]) is missing' },
        { key: 'summary', pointer: '/summary/title', kind: 'type', expected: 'string', actual: 'number', message: '`/summary/title`: expected string, got number 1' },
        { key: 'summary', pointer: '/summary/words', kind: 'required', expected: 'integer', actual: 'undefined', message: '`/summary/words`: required field `words` (integer) is missing' },
        { key: 'level', pointer: '/level', kind: 'missing', expected: 'Level', actual: 'undefined', message: 'required output `level` (Level) is missing' },
        { key: 'note', pointer: '/note', kind: 'type', expected: 'string', actual: 'number', message: '`/note`: expected string, got number 5' },
      ],
      message: e.message,
    });
    expect(JSON.parse(JSON.stringify(e))).toEqual(j);
  });

  test('the RFC example message for one missing key; undefined counts as missing, null does not', () => {
    const e = thrown(() => validateTaskOutputs(research, { ...good, level: undefined }, { taskId: 'task_01HXYZ' })) as MissingOutputError;
    expect(e).toBeInstanceOf(MissingOutputError);
    expect(e.toJSON()).toMatchObject({ missing_keys: ['level'], message: "Task completion rejected: declared output key 'level' was not present in agent return value" });
    const m = thrown(() => validateTaskOutputs(research, { ...good, level: null })) as OutputTypeMismatchError;
    expect(m).toBeInstanceOf(OutputTypeMismatchError);
    expect(m.toJSON()).toMatchObject({ key: 'level', expected_type: 'Level', actual_type: 'null' });
  });

  test('an enum value out of its list: the message names the value and the list', () => {
    const e = thrown(() => validateTaskOutputs(research, { ...good, level: 'severe' })) as OutputTypeMismatchError;
    expect(e.toJSON()).toMatchObject({ key: 'level', expected_type: 'Level', actual_type: 'string' });
    expect(e.message).toBe('Task completion rejected: output key \'level\' expected Level, got string: `/level`: expected one of Level ("low" | "medium" | "high"), got "severe"');
  });

  test('nothing misses every required key', () => {
    for (const out of [undefined, null]) {
      const e = thrown(() => validateTaskOutputs(analysis, out)) as MissingOutputError;
      expect(e, JSON.stringify(out)).toBeInstanceOf(MissingOutputError);
      expect(e.missing_keys).toEqual(['insights', 'score', 'flags']);
      expect(e.issues.map((i) => i.pointer)).toEqual(['/insights', '/score', '/flags']);
    }
  });

  test('something that is not an object is a mismatch at the top, even with required keys', () => {
    for (const [out, actual] of [['text', 'string'], [42, 'number'], [[good], 'array']] as const) {
      const e = thrown(() => validateTaskOutputs(analysis, out)) as OutputTypeMismatchError;
      expect(e, JSON.stringify(out)).toBeInstanceOf(OutputTypeMismatchError);
      expect([e.key, e.expected_type, e.actual_type]).toEqual(['', 'object', actual]);
    }
  });

  test('a missing key wins over a mismatch', () => {
    const e = thrown(() => validateTaskOutputs(analysis, { insights: 5, flags: ['no'] })) as MissingOutputError;
    expect(e).toBeInstanceOf(MissingOutputError);
    expect(e.missing_keys).toEqual(['score']);
    expect(e.issues.map((i) => [i.pointer, i.kind])).toEqual([
      ['/insights', 'type'],
      ['/score', 'missing'],
      ['/flags/0', 'type'],
    ]);
  });

  test('OutputTypeMismatchError: the first mismatched key in declaration order, every issue, the RFC payload plus issues', () => {
    // the object lists `summary` first; `findings` is declared first
    const out = { summary: 'no', findings: [{ source: 's', confidence: 1 }, { source: 's', confidence: '0.9' }], level: 'low', owner: 'x', note: 3 };
    const e = thrown(() => validateTaskOutputs(research, out, { taskId: 'task_01HXYZ' })) as OutputTypeMismatchError;
    expect(e).toBeInstanceOf(OutputTypeMismatchError);
    expect(e.name).toBe('OutputTypeMismatchError');
    expect(e.error).toBe('OutputTypeMismatchError');
    expect(e.task_id).toBe('task_01HXYZ');
    expect(e.phase_name).toBe('research');
    expect(e.key).toBe('findings');
    expect(e.expected_type).toBe('Finding[]');
    expect(e.actual_type).toBe('array');
    expect(e.message).toBe("Task completion rejected: output key 'findings' expected Finding[], got array: `/findings/1/confidence`: expected number, got string \"0.9\"");
    const j = e.toJSON();
    expect(Object.keys(j)).toEqual(['error', 'task_id', 'phase_name', 'key', 'expected_type', 'actual_type', 'issues', 'message']);
    expect(j).toEqual({
      error: 'OutputTypeMismatchError',
      task_id: 'task_01HXYZ',
      phase_name: 'research',
      key: 'findings',
      expected_type: 'Finding[]',
      actual_type: 'array',
      issues: [
        { key: 'findings', pointer: '/findings/1/confidence', kind: 'type', expected: 'number', actual: 'string', message: '`/findings/1/confidence`: expected number, got string "0.9"' },
        { key: 'summary', pointer: '/summary', kind: 'type', expected: 'Summary', actual: 'string', message: '`/summary`: expected Summary, got string "no"' },
        { key: 'note', pointer: '/note', kind: 'type', expected: 'string', actual: 'number', message: '`/note`: expected string, got number 3' },
      ],
      message: e.message,
    });
    expect(JSON.parse(JSON.stringify(e))).toEqual(j);
  });

  test('a top-level mismatch names the actual JSON type of the value', () => {
    const cases: [Record<string, unknown>, string, string, string][] = [
      [{ summary: 'no' }, 'summary', 'Summary', 'string'],
      [{ summary: [] }, 'summary', 'Summary', 'array'],
      [{ summary: null }, 'summary', 'Summary', 'null'],
      [{ findings: {} }, 'findings', 'Finding[]', 'object'],
      [{ level: 'LOW' }, 'level', 'Level', 'string'],
      [{ level: 1 }, 'level', 'Level', 'number'],
      [{ owner: false }, 'owner', 'string | null', 'boolean'],
      [{ rank: 1.5 }, 'rank', 'integer', 'number'],
      [{ rank: '1' }, 'rank', 'integer', 'string'],
    ];
    for (const [patch, key, expected, actual] of cases) {
      const e = thrown(() => validateTaskOutputs(research, { ...good, ...patch })) as OutputTypeMismatchError;
      expect(e, JSON.stringify(patch)).toBeInstanceOf(OutputTypeMismatchError);
      expect([e.key, e.expected_type, e.actual_type]).toEqual([key, expected, actual]);
      expect(e.issues).toEqual([expect.objectContaining({ key, pointer: `/${key}`, actual })]);
      const head = `Task completion rejected: output key '${key}' expected ${expected}, got ${actual}`;
      expect(e.message).toBe(e.issues[0]!.kind === 'enum' ? `${head}: ${e.issues[0]!.message}` : head);
    }
  });

  test('no coercion', () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ score: '5' }, 'string'],
      [{ score: true }, 'boolean'],
      [{ insights: 5 }, 'number'],
      [{ flags: [1] }, 'array'],
      [{ flags: ['true'] }, 'array'],
      [{ flags: 'true' }, 'string'],
    ];
    for (const [patch, actual] of bad) {
      const e = thrown(() => validateTaskOutputs(analysis, { insights: 'i', score: 1, flags: [true], ...patch })) as OutputTypeMismatchError;
      expect(e, JSON.stringify(patch)).toBeInstanceOf(OutputTypeMismatchError);
      expect(e.actual_type).toBe(actual);
    }
  });

  test('values that are not JSON are mismatches, with deep pointers', () => {
    const base = { insights: 'i', score: 1, flags: [true] };
    const cases: [Record<string, unknown>, string, string, string, string][] = [
      [{ score: NaN }, 'score', 'non-finite number', '/score', 'non-finite number'],
      [{ score: Infinity }, 'score', 'non-finite number', '/score', 'non-finite number'],
      [{ insights: new Date(0) }, 'insights', 'non-plain object', '/insights', 'non-plain object'],
      [{ flags: [true, undefined] }, 'flags', 'array', '/flags/1', 'undefined'],
      [{ flags: [() => true] }, 'flags', 'array', '/flags/0', 'function'],
    ];
    for (const [patch, key, actualType, pointer, actual] of cases) {
      const e = thrown(() => validateTaskOutputs(analysis, { ...base, ...patch })) as OutputTypeMismatchError;
      expect(e, key).toBeInstanceOf(OutputTypeMismatchError);
      expect([e.key, e.actual_type]).toEqual([key, actualType]);
      expect(e.issues).toEqual([expect.objectContaining({ key, pointer, kind: 'not-json', actual })]);
    }
  });

  test('extra keys are accepted and recorded, but must be JSON: the pointer reaches the bad value', () => {
    const base = { insights: 'i', score: 1, flags: [] };
    expect(validateTaskOutputs(analysis, { ...base, extra: [{ a: null }], more: 'x' })).toEqual({ ...base, extra: [{ a: null }], more: 'x' });
    expect(validateTaskOutputs(analysis, { ...base, gone: undefined })).toEqual({ ...base, gone: undefined });
    const e = thrown(() => validateTaskOutputs(analysis, { ...base, extra: [{ at: new Date(0) }], other: NaN }, { taskId: 't' })) as OutputTypeMismatchError;
    expect(e).toBeInstanceOf(OutputTypeMismatchError);
    expect(e.toJSON()).toEqual({
      error: 'OutputTypeMismatchError',
      task_id: 't',
      phase_name: 'analysis',
      key: 'extra',
      expected_type: 'JSON',
      actual_type: 'array',
      issues: [
        { key: 'extra', pointer: '/extra/0/at', kind: 'not-json', expected: 'JSON', actual: 'non-plain object', message: 'extra output `extra` is not JSON at `/extra/0/at` (non-plain object) and cannot be recorded' },
        { key: 'other', pointer: '/other', kind: 'not-json', expected: 'JSON', actual: 'non-finite number', message: 'extra output `other` is not JSON (non-finite number) and cannot be recorded' },
      ],
      message: "Task completion rejected: output key 'extra' expected JSON, got array: extra output `extra` is not JSON at `/extra/0/at` (non-plain object) and cannot be recorded",
    });
  });

  test('a declared mismatch comes before an extra key that is not JSON', () => {
    const e = thrown(() => validateTaskOutputs(analysis, { extra: NaN, insights: 'i', score: 'x', flags: [] })) as OutputTypeMismatchError;
    expect(e.key).toBe('score');
    expect(e.issues.map((i) => i.key)).toEqual(['score', 'extra']);
  });

  test('optional outputs: absent or undefined is fine; present must fit (null too)', () => {
    expect(validateTaskOutputs(research, { ...good, note: undefined, rank: undefined })).toEqual({ ...good, note: undefined, rank: undefined });
    for (const [patch, key] of [
      [{ note: null }, 'note'],
      [{ rank: null }, 'rank'],
      [{ note: 1 }, 'note'],
    ] as const) {
      const e = thrown(() => validateTaskOutputs(research, { ...good, ...patch })) as OutputTypeMismatchError;
      expect(e).toBeInstanceOf(OutputTypeMismatchError);
      expect(e.key).toBe(key);
    }
  });

  test('output keys are escaped in pointers; a `$&` in a key is not a replacement pattern', () => {
    expect(validateTaskOutputs(odd, { 'a/b': 1, 'm~n': 's', 'cost$&': 2 })).toEqual({ 'a/b': 1, 'm~n': 's', 'cost$&': 2 });
    const e = thrown(() => validateTaskOutputs(odd, { 'a/b': 'x', 'm~n': 1, 'cost$&': 'x' })) as OutputTypeMismatchError;
    expect(e.key).toBe('a/b');
    expect(e.message).toBe("Task completion rejected: output key 'a/b' expected number, got string");
    expect(e.issues.map((i) => [i.key, i.pointer, i.message])).toEqual([
      ['a/b', '/a~1b', '`/a~1b`: expected number, got string "x"'],
      ['m~n', '/m~0n', '`/m~0n`: expected string, got number 1'],
      ['cost$&', '/cost$&', '`/cost$&`: expected number, got string "x"'],
    ]);
    const m = thrown(() => validateTaskOutputs(odd, {})) as MissingOutputError;
    expect(m.issues.map((i) => i.pointer)).toEqual(['/a~1b', '/m~0n', '/cost$&']);
  });

  test('prototype names are not outputs: a missing `toString` output is missing', () => {
    const r = parseWorkflow(`openintent: "1.0"\ninfo: {name: p}\nworkflow:\n  p:\n    assign: a\n    outputs: {toString: string, constructor: any}\n`);
    const p = r.model!.byName.get('p')!;
    const e = thrown(() => validateTaskOutputs(p, {})) as MissingOutputError;
    expect(e.missing_keys).toEqual(['toString', 'constructor']);
    expect(validateTaskOutputs(p, { toString: 's', constructor: null })).toEqual({ toString: 's', constructor: null });
  });
});

describe('incremental adoption (§9)', () => {
  test('no outputs declared: any object, or nothing', () => {
    expect(validateTaskOutputs(legacy, { anything: [1, { a: null }] })).toEqual({ anything: [1, { a: null }] });
    expect(validateTaskOutputs(legacy, {})).toEqual({});
    expect(validateTaskOutputs(legacy, undefined)).toEqual({});
    expect(validateTaskOutputs(legacy, null)).toEqual({});
    expect(validateTaskOutputs(legacy, Object.create(null))).toEqual({});
  });

  test('no outputs declared: something that is not an object is a mismatch at the top', () => {
    for (const [out, actual] of [
      ['text', 'string'],
      [1, 'number'],
      [true, 'boolean'],
      [[{ a: 1 }], 'array'],
      [new Date(0), 'non-plain object'],
      [NaN, 'non-finite number'],
    ] as const) {
      const e = thrown(() => validateTaskOutputs(legacy, out, { taskId: 't' })) as OutputTypeMismatchError;
      expect(e).toBeInstanceOf(OutputTypeMismatchError);
      expect(e.toJSON()).toEqual({
        error: 'OutputTypeMismatchError',
        task_id: 't',
        phase_name: 'legacy',
        key: '',
        expected_type: 'object',
        actual_type: actual,
        issues: [{ key: '', pointer: '', kind: 'type', expected: 'object', actual, message: `the agent returned ${actual}, expected an object of outputs` }],
        message: `Task completion rejected: the agent returned ${actual}, not an object of outputs`,
      });
    }
  });

  test('no outputs declared: non-JSON values inside are still rejected', () => {
    const e = thrown(() => validateTaskOutputs(legacy, { when: new Date(0), list: [1, NaN] })) as OutputTypeMismatchError;
    expect(e).toBeInstanceOf(OutputTypeMismatchError);
    expect(e.issues.map((i) => [i.key, i.pointer, i.actual])).toEqual([
      ['when', '/when', 'non-plain object'],
      ['list', '/list/1', 'non-finite number'],
    ]);
  });

  test('only optional outputs: nothing is fine; a non-object is a mismatch', () => {
    expect(validateTaskOutputs(staticOnly, undefined)).toEqual({});
    expect(validateTaskOutputs(staticOnly, null)).toEqual({});
    expect(validateTaskOutputs(staticOnly, { optional_b: 2 })).toEqual({ optional_b: 2 });
    expect(thrown(() => validateTaskOutputs(staticOnly, { optional_b: 3 }))).toBeInstanceOf(OutputTypeMismatchError);
    const e = thrown(() => validateTaskOutputs(staticOnly, ['x'])) as OutputTypeMismatchError;
    expect([e.key, e.expected_type, e.actual_type]).toEqual(['', 'object', 'array']);
  });

  test('`outputs: {}` declares nothing required; the list form declares required keys of any type', () => {
    expect(validateTaskOutputs(empty, { a: 1 })).toEqual({ a: 1 });
    expect(validateTaskOutputs(empty, undefined)).toEqual({});
    expect(validateTaskOutputs(listed, { alpha: null, beta: [1] })).toEqual({ alpha: null, beta: [1] });
    const e = thrown(() => validateTaskOutputs(listed, { alpha: 1 })) as MissingOutputError;
    expect(e.missing_keys).toEqual(['beta']);
    expect(e.issues).toEqual([{ key: 'beta', pointer: '/beta', kind: 'missing', expected: 'any', actual: 'undefined', message: 'required output `beta` (any) is missing' }]);
    expect(thrown(() => validateTaskOutputs(listed, { alpha: 1, beta: NaN }))).toBeInstanceOf(OutputTypeMismatchError);
  });
});

describe('payload round trips and agreement', () => {
  test('fromPayload rebuilds each error from its toJSON()', () => {
    const errors = [
      thrown(() => validateTaskOutputs(analysis, {})),
      thrown(() => validateTaskOutputs(analysis, { insights: 1, score: 1, flags: [] })),
      thrown(() => validateClaimInputs(analysis, {})),
      thrown(() => validateClaimInputs(analysis, {}, { suspended: { research: { intentId: 'i', expectedResumeAt: null } } })),
    ] as WorkflowError[];
    for (const e of errors) {
      const back = fromPayload(JSON.parse(JSON.stringify(e.toJSON())) as Record<string, unknown>)!;
      expect(back.constructor).toBe(e.constructor);
      expect(back.toJSON()).toEqual(e.toJSON());
      expect(back.message).toBe(e.message);
    }
  });

  test('checkTaskOutputs accepts exactly what the output type accepts, and a rejection always has issues', () => {
    const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.anything({ maxDepth: 2, withDate: true, withSparseArray: true, withNullPrototype: true }));
    const output = fc.record(
      { insights: value, score: fc.oneof(value, fc.double()), flags: fc.oneof(value, fc.array(fc.oneof(fc.boolean(), value), { maxLength: 3 })), extra: value },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(output, (out) => {
        const r = checkTaskOutputs(analysis, out);
        expect(r.ok).toBe(analysis.outputType!.check(out));
        expect(r.ok).toBe(analysis.outputType!.issues(out).length === 0);
        if (!r.ok) {
          expect(r.error.issues.length).toBeGreaterThan(0);
          const missing = ['insights', 'score', 'flags'].filter((k) => (out as Record<string, unknown>)[k] === undefined);
          if (missing.length > 0) expect((r.error as MissingOutputError).missing_keys).toEqual(missing);
          else expect(r.error).toBeInstanceOf(OutputTypeMismatchError);
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** Agent contracts at run time: input before the agent runs, output after, partial completion flags. */
import { describe, expect, test } from 'vitest';
import { runWorkflow } from '../src/api/run.js';
import { WorkflowSpec } from '../src/api/spec.js';

const spec = WorkflowSpec.fromString(`
openintent: "1.0"
info: {name: guard}
agents:
  drafter:
    x-contract:
      input: {schema: {type: object, required: [topic], properties: {topic: {type: string, minLength: 3}}}}
      output: {schema: {type: object, required: [draft], properties: {draft: {type: string}, completionStatus: {enum: [complete, partial]}, uncertainAreas: {type: array}}}}
      errorHandling:
        onInputValidationFailure: {action: reject, message: "Invalid input: {validationErrors}"}
        onPartialCompletion: {action: return_partial, requiresFlags: [uncertainAreas]}
workflow:
  draft:
    assign: drafter
    inputs: {topic: $trigger.topic}
    retry: {max_attempts: 3, initial_delay_ms: 0}
`);

describe('contract guard', () => {
  test('valid input and output pass through', async () => {
    const r = await runWorkflow(spec, { agents: { drafter: (ctx) => ({ draft: `on ${String(ctx.input['topic'])}` }) }, trigger: { topic: 'tides' } });
    expect(r.phases['draft']?.output).toEqual({ draft: 'on tides' });
  });

  test('invalid input: the agent never runs, the message template is filled in, no retry', async () => {
    let calls = 0;
    const r = await runWorkflow(spec, { agents: { drafter: () => ((calls += 1), { draft: 'x' }) }, trigger: { topic: 'ab' } });
    expect(calls).toBe(0);
    expect(r.phases['draft']?.error).toMatchObject({ code: 'InputValidationError' });
    expect(r.phases['draft']?.error?.message).toMatch(/^Invalid input: \$\.topic: /);
    expect(r.phases['draft']?.attempts).toBe(1);
  });

  test('an output the contract rules out fails the attempt', async () => {
    const r = await runWorkflow(spec, { agents: { drafter: () => ({ draft: 3 }) }, trigger: { topic: 'tides' } });
    expect(r.phases['draft']?.error).toMatchObject({ code: 'OutputValidationError' });
  });

  test('`output.required` beside the schema (as the spec writes it) is enforced at run time', async () => {
    const beside = WorkflowSpec.fromString(`
openintent: "1.0"
info: {name: guard}
agents:
  drafter:
    x-contract:
      output:
        schema: {type: object, properties: {draftContent: {type: string}, completionStatus: {enum: [complete, partial, blocked]}}}
        required: [draftContent, completionStatus]
workflow:
  draft: {assign: drafter}
`);
    const bad = await runWorkflow(beside, { agents: { drafter: () => ({ draftContent: 'x' }) } });
    expect(bad.phases['draft']?.error).toMatchObject({ code: 'OutputValidationError' });
    const ok = await runWorkflow(beside, { agents: { drafter: () => ({ draftContent: 'x', completionStatus: 'complete' }) } });
    expect(ok.phases['draft']?.status).toBe('completed');
  });

  test('a partial result must carry its required flags', async () => {
    const bad = await runWorkflow(spec, { agents: { drafter: () => ({ draft: 'half', completionStatus: 'partial' }) }, trigger: { topic: 'tides' } });
    expect(bad.phases['draft']?.error).toMatchObject({ code: 'PartialCompletionError' });
    const ok = await runWorkflow(spec, { agents: { drafter: () => ({ draft: 'half', completionStatus: 'partial', uncertainAreas: ['method'] }) }, trigger: { topic: 'tides' } });
    expect(ok.phases['draft']?.status).toBe('partial');
  });

  test('an agent whose blueprint has an output_schema, bound to a function, is held to it (agent output schema spec: validated on every run)', async () => {
    const reviewed = WorkflowSpec.fromString(`
openintent: "1.0"
info: {name: guard}
agents:
  reviewer:
    parameters_schema: {type: object, required: [pr_url], properties: {pr_url: {type: string}}}
    output_schema:
      type: object
      required: [summary, approval]
      properties:
        summary: {type: string}
        approval: {type: string, enum: [approve, request_changes, comment]}
        count: {type: integer, minimum: 0}
      additionalProperties: false
workflow:
  review:
    assign: reviewer
    inputs: {pr_url: $trigger.pr}
    outputs: {summary: string, approval: string}
`);
    const bad = await runWorkflow(reviewed, { agents: { reviewer: () => ({ summary: 's', approval: 'critical', count: -5 }) }, trigger: { pr: 'u' } });
    expect(bad.status).toBe('failed');
    expect(bad.phases['review']?.error).toMatchObject({ code: 'output_schema_validation_failed', details: { validation_errors: [expect.stringMatching(/^\$\.approval: /) as unknown, expect.stringMatching(/^\$\.count: /) as unknown] } });
    let calls = 0;
    const badInput = await runWorkflow(reviewed, { agents: { reviewer: () => ((calls += 1), { summary: 's', approval: 'approve' }) }, trigger: { pr: 7 } });
    expect(calls).toBe(0);
    expect(badInput.phases['review']?.error).toMatchObject({ code: 'parameters_schema_validation_failed', retryable: false });
    const ok = await runWorkflow(reviewed, { agents: { reviewer: () => ({ summary: 's', approval: 'approve', _cost: 0.01 }) }, trigger: { pr: 'u' } });
    expect(ok.phases['review']?.status).toBe('completed');
  });
});

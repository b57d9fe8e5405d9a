/** Stub outputs: declared types first; `any` outputs sampled from the agent's contract schema. */
import { describe, expect, test } from 'vitest';
import { parseWorkflow } from '../workflow/compile.js';
import { sampleSchema, stubAgent } from './stub.js';

describe('sampleSchema', () => {
  test('objects, arrays of two distinct elements, enums, consts, formats and bounds', () => {
    const schema = {
      type: 'object',
      properties: {
        sections: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, rank: { type: 'integer', minimum: 3 } } } },
        level: { enum: ['low', 'high'] },
        fixed: { const: 42 },
        when: { type: 'string', format: 'date-time' },
        maybe: { type: ['null', 'number'] },
        either: { anyOf: [{ type: 'null' }, { type: 'boolean' }] },
        short: { type: 'array', items: { type: 'string' }, maxItems: 1 },
        code: { type: 'string', minLength: 12 },
      },
    };
    expect(sampleSchema(schema, '', 0, 0)).toEqual({
      sections: [
        { name: 'name-1', rank: 3 },
        { name: 'name-2', rank: 4 },
      ],
      level: 'low',
      fixed: 42,
      when: '2026-01-01T00:00:00.000Z',
      maybe: 1,
      either: true,
      short: ['short-1'],
      code: 'code-1xxxxxx',
    });
  });

  test('a stub samples `any` outputs from the contract and keeps typed ones', () => {
    const r = parseWorkflow(`openintent: "1.0"
info: {name: t}
agents:
  architect:
    x-contract:
      contractVersion: "1.0.0"
      agentId: architect
      output:
        schema: {type: object, properties: {outline: {type: object, properties: {sections: {type: array, items: {type: object, properties: {name: {type: string}}}}}}, title: {type: string}}}
workflow:
  plan:
    assign: architect
    outputs: {outline: any, title: string}
`);
    expect(r.ok, r.diagnostics.map((d) => d.message).join('\\n')).toBe(true);
    const out = stubAgent(r.model!)({ phase: 'plan' } as never);
    expect(out).toMatchObject({ outline: { sections: [{ name: 'name-1' }, { name: 'name-2' }] } });
    expect(typeof (out as { title: unknown }).title).toBe('string');
  });

  test("a stub's output has every key the contract requires, besides the declared outputs (an enum's first value)", () => {
    const r = parseWorkflow(`openintent: "1.0"
info: {name: t}
agents:
  drafter:
    x-contract:
      output:
        schema: {type: object, properties: {draftContent: {type: string}, completionStatus: {enum: [complete, partial]}, notes: {type: array}}}
        required: [draftContent, completionStatus]
workflow:
  draft:
    assign: drafter
    outputs: {draft: string}
`);
    expect(r.ok, r.diagnostics.map((d) => d.message).join('\n')).toBe(true);
    expect(stubAgent(r.model!)({ phase: 'draft' } as never)).toEqual({ draft: 'example', draftContent: 'draftContent-1', completionStatus: 'complete' });
    // a required key `properties` does not list: from `additionalProperties`, else anything
    expect(sampleSchema({ type: 'object', required: ['a', 'b'], properties: { a: { type: 'boolean' } } }, '', 0, 0)).toEqual({ a: true, b: {} });
    expect(sampleSchema({ type: 'object', required: ['n'], additionalProperties: { type: 'integer' } }, '', 0, 0)).toEqual({ n: 1 });
  });
});

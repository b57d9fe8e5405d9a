/** Which schemas go to OpenAI's strict structured output, and which go back to prompting (and why). */
import { describe, expect, test } from 'vitest';
import { planNative } from './provider.js';

const root = (a: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ type: 'object', required: ['a'], properties: { a }, ...extra });

describe('planNative: openai-strict', () => {
  test('a closed schema with every property required is sent, closed', () => {
    const plan = planNative('openai-strict', root({ type: 'object', required: ['b'], properties: { b: { type: ['string', 'null'] } } }));
    expect(plan).toEqual({ native: true, schema: root({ type: 'object', required: ['b'], properties: { b: { type: ['string', 'null'] } }, additionalProperties: false }, { additionalProperties: false }) });
  });

  // each of these, sent as strict, is refused by the API (HTTP 400, a failed attempt) or forces {} on a free-form value;
  // prompting (with the full schema validated) answers them all
  test.each([
    ['tuple items (draft-07 list form)', { type: 'array', items: [{ type: 'string' }, { type: 'integer' }] }, 'tuple `items`'],
    ['items: true', { type: 'array', items: true }, 'a boolean schema'],
    ['a property schema that is `true`', true, 'a boolean schema'],
    ['a nullable free-form object', { type: ['object', 'null'] }, 'a free-form object'],
    ['an open object with `properties: {}`', { type: 'object', properties: {} }, 'a free-form object'],
    ['a nullable array without items', { type: ['array', 'null'] }, 'an array without `items`'],
  ])('%s goes to prompting, with the reason', (_name, a, reason) => {
    const plan = planNative('openai-strict', root(a));
    expect(plan.native).toBe(false);
    expect(!plan.native && plan.reason).toContain('$.a');
    expect(!plan.native && plan.reason).toContain(reason);
  });

  test('an empty object closed on purpose (`properties: {}`, additionalProperties: false) stays native', () => {
    expect(planNative('openai-strict', root({ type: 'object', properties: {}, required: [], additionalProperties: false })).native).toBe(true);
  });
});

/** The agent contract's `resources.tokenBudget` caps the tokens one LLM attempt spends. */
import { describe, expect, test } from 'vitest';
import { AgentError } from '../../engine/agent.js';
import { parseWorkflow } from '../../workflow/compile.js';
import { SchemaCompiler } from '../../workflow/json-schema.js';
import { llmAgent } from './agent.js';
import { DEFAULT_PRICES } from './pricing.js';
import { parseScript, scriptedProvider } from './scripted.js';
import { resolveSettings } from './settings.js';
import { recordingContext } from './testing.js';

const WF = `
openintent: "1.0"
info: {name: budget}
agents:
  reviewer:
    output_schema: {type: object, required: [summary], properties: {summary: {type: string}}}
    x-contract: {resources: {tokenBudget: 1000}}
workflow:
  review:
    assign: reviewer
    outputs: {summary: string}
`;

function run(replies: unknown[]): Promise<unknown> {
  const r = parseWorkflow(WF);
  if (!r.model) throw new Error(JSON.stringify(r.diagnostics));
  const wf = r.model;
  const s = parseScript({ phases: { review: replies } });
  if (!s.ok) throw new Error(s.message);
  const handler = llmAgent({
    workflow: wf,
    agentId: 'reviewer',
    blueprint: wf.agents!['reviewer']!.blueprint,
    settings: resolveSettings(wf, undefined),
    provider: scriptedProvider(s.script, 'test-model'),
    compiler: new SchemaCompiler(),
    prices: DEFAULT_PRICES,
    sleep: () => Promise.resolve(),
    now: () => 0,
  });
  return Promise.resolve(handler(recordingContext({ phase: 'review', agent: 'reviewer', input: {} })));
}

describe('tokenBudget', () => {
  test('a reply within the budget is accepted', async () => {
    await expect(run([{ text: '{"summary": "ok"}', usage: { input: 400, output: 100 } }])).resolves.toBeDefined();
  });

  test('no further call (a re-prompt) once the budget is spent: llm_token_budget_exceeded, not retried', async () => {
    const e = await run([{ text: 'not json', usage: { input: 900, output: 200 } }, '{"summary": "ok"}']).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AgentError);
    expect(e).toMatchObject({ code: 'llm_token_budget_exceeded', retryable: false, details: { tokens_used: 1100, token_budget: 1000 } });
  });
});

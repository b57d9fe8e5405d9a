/** An agent's model settings: the workflow's `llm` block, then the blueprint's overrides. */
import { expect, test } from 'vitest';
import { parseWorkflow } from '../../workflow/compile.js';
import { resolveSettings } from './settings.js';

function settingsOf(yaml: string, agent = 'judge'): ReturnType<typeof resolveSettings> {
  const r = parseWorkflow(yaml);
  if (!r.model) throw new Error(JSON.stringify(r.diagnostics));
  return resolveSettings(r.model, r.model.agents?.[agent]?.blueprint);
}

const wf = (agentLlm: string, wfLlm = '{provider: openai, model: gpt-4o, x-base_url: "http://127.0.0.1:9/v1", temperature: 0.2, max_tokens: 900}'): string => `
openintent: "1.0"
info: {name: s}
llm: ${wfLlm}
agents:
  judge: {system_prompt: judge, llm: ${agentLlm}}
workflow:
  judge: {assign: judge}
`;

test("an agent naming another provider does not inherit the workflow's model, base URL or structured-output flag", () => {
  const s = settingsOf(wf('{provider: anthropic}'));
  // gpt-4o sent to Anthropic, at the OpenAI proxy, fails every call
  expect([s.provider, s.model, s.baseUrl]).toEqual(['anthropic', undefined, undefined]);
  // what is not the provider's own is still inherited
  expect([s.temperature, s.maxTokens]).toEqual([0.2, 900]);
  const c = settingsOf(wf('{provider: openai, model: m}', '{provider: openai-compatible, model: llama3, x-base_url: "http://127.0.0.1:9/v1", x-structured_outputs: true}'));
  expect([c.provider, c.model, c.baseUrl, c.structuredOutputs]).toEqual(['openai', 'm', undefined, false]);
});

test('the same provider, or none named, inherits everything; `env` shares the keys of the provider it picks', () => {
  for (const own of ['{provider: openai}', '{temperature: 0}']) {
    const s = settingsOf(wf(own));
    expect([s.provider, s.model, s.baseUrl]).toEqual(['openai', 'gpt-4o', 'http://127.0.0.1:9/v1']);
  }
  const e = settingsOf(wf('{provider: env}'));
  expect([e.provider, e.model]).toEqual(['env', 'gpt-4o']);
  // the spec's default provider is openai: a workflow block that names none is an OpenAI block
  const d = settingsOf(wf('{provider: openai}', '{model: gpt-4o}'));
  expect(d.model).toBe('gpt-4o');
});

import { describe, expect, test } from 'vitest';
import type { JsonObject } from '../../core/json.js';
import { AgentError } from '../../engine/agent.js';
import { parseWorkflow } from '../../workflow/compile.js';
import { SchemaCompiler } from '../../workflow/json-schema.js';
import type { Blueprint, WorkflowModel } from '../../workflow/model.js';
import { llmAgent, type LlmAgentOptions } from './agent.js';
import { DEFAULT_PRICES } from './pricing.js';
import { makeProvider } from './providers.js';
import { parseScript, scriptedProvider, type ScriptedModel } from './scripted.js';
import { resolveSettings } from './settings.js';
import { recordingContext } from './testing.js';
import type { OfferedTool, ToolHost } from './tools.js';

const WF = `
openintent: "1.0"
info: {name: LLM test}
types:
  Comment: {file: string, line: integer, severity: {enum: [low, medium, high]}}
workflow:
  review:
    title: Review the change
    description: Find problems
    constraints: [Be brief]
    assign: reviewer
    inputs:
      code: $trigger.code
    outputs:
      summary: string
      comments: Comment[]
  write:
    assign: writer
    depends_on: [review]
    outputs:
      note: string
`;

function workflow(): WorkflowModel {
  const r = parseWorkflow(WF);
  if (!r.model) throw new Error(JSON.stringify(r.diagnostics));
  return r.model;
}

const schema = {
  type: 'object',
  required: ['summary', 'comments'],
  properties: {
    summary: { type: 'string' },
    comments: {
      type: 'array',
      items: { type: 'object', required: ['file', 'line', 'severity'], properties: { file: { type: 'string' }, line: { type: 'integer' }, severity: { type: 'string', enum: ['low', 'medium', 'high'] } } },
    },
  },
};

const good = { summary: 'fine', comments: [{ file: 'a.ts', line: 1, severity: 'low' }] };

function bp(over: Partial<Blueprint> = {}): Blueprint {
  return { maxOutputRetries: 1, tools: [], llm: {}, outputSchema: schema, ...over };
}

interface Setup {
  handler: ReturnType<typeof llmAgent>;
  model: ScriptedModel;
  sleeps: number[];
}

function setup(replies: unknown, over: Partial<LlmAgentOptions> = {}, structured = 'none'): Setup {
  const wf = workflow();
  const s = parseScript({ structured_output: structured, phases: { review: replies } });
  if (!s.ok) throw new Error(s.message);
  const provider = scriptedProvider(s.script, 'test-model');
  const sleeps: number[] = [];
  const handler = llmAgent({
    workflow: wf,
    agentId: 'reviewer',
    blueprint: bp(),
    settings: resolveSettings(wf, undefined),
    provider,
    compiler: new SchemaCompiler(),
    prices: { ...DEFAULT_PRICES, 'test-model': { inputPerMTok: 1, outputPerMTok: 2 } },
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    now: () => 0,
    ...over,
  });
  return { handler, model: provider.model, sleeps };
}

const ctx = (over: { input?: JsonObject; budgetUsd?: number } = {}): ReturnType<typeof recordingContext> => recordingContext({ phase: 'review', agent: 'reviewer', input: { code: 'x = 1' }, ...over });

async function failure(p: unknown): Promise<AgentError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AgentError) return e;
    throw e;
  }
  throw new Error('expected a failure');
}

function userTexts(m: ScriptedModel, call: number): string[] {
  return m.calls[call]!.prompt.flatMap((msg) => (msg.role === 'user' ? msg.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])) : []));
}

describe('the enforcement loop', () => {
  test('valid the first time: result_data, usage and cost recorded', async () => {
    const { handler, model } = setup([JSON.stringify(good)]);
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    expect(model.calls).toHaveLength(1);
    const call = c.events.find((e) => e.kind === 'llm_call')!.data;
    expect(call).toMatchObject({ provider: 'scripted', model: 'test-model', finish_reason: 'stop' });
    expect(call['input_tokens']).toBeGreaterThan(0);
    expect(c.costUsd).toBeCloseTo(((call['input_tokens'] as number) * 1 + (call['output_tokens'] as number) * 2) / 1e6, 12);
    expect(c.events.find((e) => e.kind === 'result')!.data).toEqual({ result_data: good });
  });

  test('the system prompt ends with the output section; the user message is built from the phase', async () => {
    const { handler, model } = setup([JSON.stringify(good)]);
    await handler(ctx());
    const sys = model.calls[0]!.prompt[0]!;
    expect(sys.role).toBe('system');
    const text = sys.content as string;
    // the spec's section (agent output schema §3.1), last
    expect(text).toContain('## Required Output Format');
    expect(text.slice(text.lastIndexOf('\n## '))).toContain('## Required Output Format');
    expect(text).toContain('You MUST provide structured output as JSON conforming to this schema:');
    expect(text).toContain('comments[].severity: "low" | "medium" | "high"');
    expect(text).toContain('summary (string)');
    expect(text.trim().endsWith('no comments, no trailing commas.')).toBe(true);
    const user = userTexts(model, 0)[0]!;
    expect(user).toContain('# Review the change');
    expect(user).toContain('- Be brief');
    expect(user).toContain('"code": "x = 1"');
  });

  test('fenced JSON in prose', async () => {
    const { handler } = setup([`Here you go:\n\`\`\`json\n${JSON.stringify(good, null, 2)}\n\`\`\`\nHope it helps.`]);
    expect(await handler(ctx())).toEqual(good);
  });

  test('repairable JSON: each repair is recorded', async () => {
    const { handler } = setup([`{summary: 'fine', comments: [{file: "a.ts", line: 1, severity: "low",},]}`]);
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    expect(c.events.find((e) => e.kind === 'json_repair')!.data['repairs']).toEqual(expect.arrayContaining(['unquoted_key', 'single_quotes', 'trailing_comma']));
  });

  test('invalid, then fixed on re-prompt in the same conversation: the re-prompt names every error path', async () => {
    const bad = { summary: 5, comments: [{ file: 'a.ts', line: '1', severity: 'critical' }] };
    const { handler, model } = setup([JSON.stringify(bad), JSON.stringify(good)]);
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    expect(model.calls).toHaveLength(2);
    const second = model.calls[1]!.prompt;
    expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    const reprompt = userTexts(model, 1)[1]!;
    for (const p of ['$.summary', '$.comments.0.line', '$.comments.0.severity']) expect(reprompt).toContain(`- ${p}:`);
    expect(reprompt).toContain(`'critical' is not one of ['low', 'medium', 'high']`);
    expect(reprompt).toContain('expected integer, received string');
    // the spec's sections (§3.3)
    for (const h of ['<output-validation-error>', '## Validation Errors', '## Required Schema', '</output-validation-error>']) expect(reprompt).toContain(h);
    expect(c.events.filter((e) => e.kind === 'output_reprompt')).toHaveLength(1);
  });

  test('a reply with thousands of errors: the re-prompt lists the first 50 and counts the rest; the event keeps 100 and the count', async () => {
    // 3,000 items each with a wrong line and a wrong severity: 6,000 errors, which filled the model's context
    const bad = { summary: 'x', comments: Array.from({ length: 3000 }, () => ({ file: 'a', line: 'one', severity: 'critical' })) };
    const { handler, model } = setup([JSON.stringify(bad), JSON.stringify(good)]);
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    const reprompt = userTexts(model, 1)[1]!;
    expect(reprompt.split('\n').filter((l) => l.startsWith('- $.'))).toHaveLength(50);
    expect(reprompt).toContain('- ... and 5950 more errors (6000 in all)');
    const e = c.events.find((x) => x.kind === 'output_reprompt')!;
    expect(e.data['validation_errors']).toHaveLength(100);
    expect(e.data['error_count']).toBe(6000);
  });

  test('invalid twice: output_schema_validation_failed with validation_errors, nothing returned', async () => {
    const bad = JSON.stringify({ summary: 'x', comments: [{ file: 'a', line: 1, severity: 'critical' }] });
    const { handler, model } = setup([bad, bad]);
    const c = ctx();
    const e = await failure(handler(c));
    expect(e.code).toBe('output_schema_validation_failed');
    expect(e.retryable).toBe(true);
    expect(e.details['validation_errors']).toEqual([`$.comments.0.severity: 'critical' is not one of ['low', 'medium', 'high']`]);
    expect(model.calls).toHaveLength(2);
    expect(c.events.some((e) => e.kind === 'result')).toBe(false);
  });

  test('max_output_retries: 0 fails on the first invalid reply; 2 allows two re-prompts', async () => {
    const bad = JSON.stringify({ summary: 1, comments: [] });
    const zero = setup([bad], { blueprint: bp({ maxOutputRetries: 0 }) });
    expect((await failure(zero.handler(ctx()))).code).toBe('output_schema_validation_failed');
    expect(zero.model.calls).toHaveLength(1);
    const two = setup([bad, bad, JSON.stringify(good)], { blueprint: bp({ maxOutputRetries: 2 }) });
    expect(await two.handler(ctx())).toEqual(good);
  });

  test('both contracts: a reply fitting output_schema but not the phase outputs is re-prompted', async () => {
    const loose = { type: 'object', required: ['summary'], properties: { summary: { type: 'string' } } };
    const { handler, model } = setup([JSON.stringify({ summary: 'ok' }), JSON.stringify(good)], { blueprint: bp({ outputSchema: loose }) });
    expect(await handler(ctx())).toEqual(good);
    expect(userTexts(model, 1)[1]).toContain(`- $: 'comments' is a required property`);
  });

  test('without output_schema the phase outputs are the schema', async () => {
    const { handler } = setup([JSON.stringify({ summary: 'ok', comments: 'none' }), JSON.stringify(good)], { blueprint: bp({ outputSchema: undefined as never }) });
    expect(await handler(ctx())).toEqual(good);
  });

  test('parameters_schema is checked before any model call', async () => {
    const params = { type: 'object', required: ['code', 'lang'], properties: { code: { type: 'string' }, lang: { type: 'string' } } };
    const { handler, model } = setup([JSON.stringify(good)], { blueprint: bp({ parametersSchema: params }) });
    const c = ctx({ input: { code: 5 } });
    const e = await failure(handler(c));
    expect(e.code).toBe('parameters_schema_validation_failed');
    expect(e.retryable).toBe(false);
    expect([...(e.details['validation_errors'] as string[])].sort()).toEqual([`$.code: 5 is not of type 'string'`, `$: 'lang' is a required property`].sort());
    // what `baton run` prints says what is wrong, not only how many things are
    expect(e.message).toContain(`$.code: 5 is not of type 'string'`);
    expect(e.message).toContain(`$: 'lang' is a required property`);
    expect(model.calls).toHaveLength(0);
    expect(c.costUsd).toBe(0);
  });

  test('native structured output is used where the provider supports the schema', async () => {
    const strictSchema = { type: 'object', required: ['summary', 'comments'], properties: schema.properties };
    const { handler, model } = setup([JSON.stringify(good)], { blueprint: bp({ outputSchema: strictSchema }) }, 'openai-strict');
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    const rf = model.calls[0]!.responseFormat;
    expect(rf).toMatchObject({ type: 'json', name: 'output' });
    expect((rf as unknown as { schema: Record<string, unknown> }).schema['additionalProperties']).toBe(false);
    expect(c.events.find((e) => e.kind === 'structured_output')!.data).toEqual({ provider: 'scripted', mode: 'openai-strict' });
  });

  test('outside the strict subset: prompting, with a fallback event, and the full schema still validated', async () => {
    const withOptional = { ...schema, properties: { ...schema.properties, extra: { type: 'string', minLength: 3 } } };
    const { handler, model } = setup([JSON.stringify({ ...good, extra: 'x' }), JSON.stringify(good)], { blueprint: bp({ outputSchema: withOptional }) }, 'openai-strict');
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    expect(model.calls[0]!.responseFormat).toBeUndefined();
    expect(c.events.find((e) => e.kind === 'structured_output_fallback')!.data['reason']).toMatch(/extra|minLength/);
    expect(c.events.some((e) => e.kind === 'output_reprompt')).toBe(true);
  });

  test('a budget stops a call before it is made', async () => {
    const { handler, model } = setup([JSON.stringify(good)]);
    const e = await failure(handler(ctx({ budgetUsd: 0.0001 })));
    expect(e.code).toBe('llm_budget_exceeded');
    expect(model.calls).toHaveLength(0);
    // a budget that fits the worst case lets the call through
    const ok = setup([JSON.stringify(good)]);
    expect(await ok.handler(ctx({ budgetUsd: 1 }))).toEqual(good);
  });

  test('a budget stops the re-prompt when the first call used it up', async () => {
    const bad = JSON.stringify({ summary: 1, comments: [] });
    const { handler, model } = setup([{ text: bad, usage: { input: 3000, output: 100 } }, JSON.stringify(good)]);
    // worst case of call 1: <1k tokens in + 4096 out at $1/$2 per Mtok < $0.0095; call 1 costs $0.0032, leaving $0.0073
    const e = await failure(handler(ctx({ budgetUsd: 0.0105 })));
    expect(e.code).toBe('llm_budget_exceeded');
    expect(model.calls).toHaveLength(1);
  });
});

test('a model cannot set its own bill: a `_cost` key in the reply is dropped', async () => {
  const { handler } = setup([JSON.stringify({ ...good, _cost: 1000 })]);
  const c = ctx();
  expect(await handler(c)).toEqual(good);
  expect(c.costUsd).toBeLessThan(0.01);
});

test('an abort (timeout, cancel) stops the call in flight', async () => {
  const wf = workflow();
  const ctl = new AbortController();
  const hanging = {
    specificationVersion: 'v3' as const,
    provider: 'hang',
    modelId: 'hang',
    supportedUrls: {},
    doGenerate: (o: { abortSignal?: AbortSignal }) => new Promise<never>((_ok, fail) => o.abortSignal?.addEventListener('abort', () => fail(new Error('aborted')))),
    doStream: () => Promise.reject(new Error('no')),
  };
  const handler = llmAgent({ workflow: wf, agentId: 'reviewer', blueprint: bp(), settings: resolveSettings(wf, undefined), provider: { name: 'hang', model: hanging, structuredOutput: 'none' }, compiler: new SchemaCompiler(), prices: DEFAULT_PRICES, sleep: () => Promise.resolve(), now: () => 0 });
  const p = handler(recordingContext({ phase: 'review', agent: 'reviewer', input: { code: 'x' }, signal: ctl.signal }));
  ctl.abort(new Error('timeout'));
  expect((await failure(p)).code).toBe('Aborted');
});

describe('failure codes', () => {
  test('refusal', async () => {
    const e = await failure(setup([{ text: "I can't help with that.", finish: 'content-filter' }]).handler(ctx()));
    expect([e.code, e.retryable]).toEqual(['llm_refusal', false]);
  });

  test('empty reply', async () => {
    const e = await failure(setup([{ text: '  ' }]).handler(ctx()));
    expect([e.code, e.retryable]).toEqual(['llm_empty_reply', true]);
  });

  test('truncation: a different re-prompt, then llm_truncated', async () => {
    const cut = `{"summary": "a very long`;
    const { handler, model } = setup([{ text: cut, finish: 'length' }, { text: cut, finish: 'length' }]);
    const c = ctx();
    const e = await failure(handler(c));
    expect([e.code, e.retryable]).toEqual(['llm_truncated', false]);
    expect(userTexts(model, 1)[1]).toContain('<output-truncated>');
    expect(userTexts(model, 1)[1]).not.toContain('<output-validation-error>');
    expect(c.events.some((e) => e.kind === 'truncation_reprompt')).toBe(true);
  });

  test('a truncated reply that still parses and validates is accepted', async () => {
    const { handler } = setup([{ text: JSON.stringify(good).slice(0, -1), finish: 'length' }]);
    expect(await handler(ctx())).toEqual(good);
  });

  test('rate limit: retry-after respected (injected sleep), then success', async () => {
    const { handler, sleeps, model } = setup([{ error: { status: 429, retry_after: 2 } }, JSON.stringify(good)]);
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    expect(sleeps).toEqual([2000]);
    expect(model.calls).toHaveLength(2);
    expect(c.events.find((e) => e.kind === 'rate_limit_wait')!.data['wait_ms']).toBe(2000);
  });

  test('rate limit with a long retry-after: retryable failure carrying retry_after_ms', async () => {
    const { handler, sleeps } = setup([{ error: { status: 429, retry_after: 600 } }]);
    const e = await failure(handler(ctx()));
    expect([e.code, e.retryable, e.details['retry_after_ms']]).toEqual(['llm_rate_limited', true, 600_000]);
    expect(sleeps).toEqual([]);
  });

  test('transport error (HTTP 500) is retryable; a bad key (401) is not; a rejected request (400) is not', async () => {
    // retried within the attempt (llm.x-transport_retries, default 2), then the phase's policy decides
    const s500 = setup([{ error: { status: 500 } }, { error: { status: 500 } }, { error: { status: 500 } }]);
    const t = await failure(s500.handler(ctx()));
    expect([t.code, t.retryable]).toEqual(['llm_transport_error', true]);
    expect(s500.sleeps).toEqual([1000, 2000]);
    const a = await failure(setup([{ error: { status: 401 } }]).handler(ctx()));
    expect([a.code, a.retryable]).toEqual(['llm_auth_failed', false]);
    const r = await failure(setup([{ error: { status: 400 } }]).handler(ctx()));
    expect([r.code, r.retryable]).toEqual(['llm_request_rejected', false]);
  });

  test('too many rounds of tool calls', async () => {
    const call = { tool_calls: [{ tool: 'mcp:files/read_file', arguments: { path: 'a' } }] };
    const h: ToolHost = {
      offer: () => Promise.resolve({ tools: [{ name: 'files__read_file', ref: 'mcp:files/read_file', inputSchema: { type: 'object' } }], skipped: [] }),
      call: () => Promise.resolve({ text: 'x', isError: false }),
      close: () => Promise.resolve(),
    };
    const e = await failure(setup([call, call, call], { tools: ['mcp:files/read_file'], toolHost: h, maxToolRounds: 2 }).handler(ctx()));
    expect([e.code, e.retryable]).toEqual(['llm_tool_loop', false]);
  });

  test('configuration problems: a template naming an unknown input, an unknown provider', async () => {
    const t = await failure(setup([JSON.stringify(good)], { blueprint: bp({ prompt: 'Review {{input.nope}}' }) }).handler(ctx()));
    expect([t.code, t.retryable]).toEqual(['llm_config_invalid', false]);
    const wf = workflow();
    const p = await failure(
      setup([JSON.stringify(good)], { provider: () => makeProvider({ ...resolveSettings(wf, undefined), provider: 'openia' }, { env: {}, cwd: '.', scripts: new Map() }) }).handler(ctx()),
    );
    expect(p.code).toBe('llm_config_invalid');
  });

  test('a script that runs out', async () => {
    const e = await failure(setup([]).handler(ctx()));
    expect(e.code).toBe('llm_script_exhausted');
  });
});

describe('text results and tools', () => {
  test('a phase whose single output is a string receives the text', async () => {
    const wf = workflow();
    const s = parseScript({ phases: { write: ['Dear team, all good.'] } });
    if (!s.ok) throw new Error(s.message);
    const handler = llmAgent({ workflow: wf, agentId: 'writer', blueprint: undefined, settings: resolveSettings(wf, undefined), provider: scriptedProvider(s.script, 'unpriced-model'), compiler: new SchemaCompiler(), prices: DEFAULT_PRICES, sleep: () => Promise.resolve(), now: () => 0 });
    const c = recordingContext({ phase: 'write', agent: 'writer' });
    expect(await handler(c)).toEqual({ note: 'Dear team, all good.' });
    expect(c.events.find((e) => e.kind === 'result')!.data).toEqual({ result_text: 'Dear team, all good.' });
    expect(c.events.some((e) => e.kind === 'price_unknown')).toBe(true);
  });

  test('a single string output answered with a JSON object of that key (bare or fenced) gets the string, not the JSON text', async () => {
    const wf = workflow();
    const replies = ['{"note": "all good"}', '```json\n{"note": "fenced"}\n```', '{"note": "a", "other": 1}', '{"note": 5}', '{not json}'];
    const s = parseScript({ phases: { write: replies } });
    if (!s.ok) throw new Error(s.message);
    const handler = llmAgent({ workflow: wf, agentId: 'writer', blueprint: undefined, settings: resolveSettings(wf, undefined), provider: scriptedProvider(s.script, 'unpriced-model'), compiler: new SchemaCompiler(), prices: DEFAULT_PRICES, sleep: () => Promise.resolve(), now: () => 0 });
    const notes: unknown[] = [];
    for (let i = 0; i < replies.length; i++) notes.push(await handler(recordingContext({ phase: 'write', agent: 'writer' })));
    // anything but exactly {note: string} is the note as written
    expect(notes).toEqual([{ note: 'all good' }, { note: 'fenced' }, { note: '{"note": "a", "other": 1}' }, { note: '{"note": 5}' }, { note: '{not json}' }]);
  });

  function host(): ToolHost & { called: string[] } {
    const tool: OfferedTool = { name: 'files__read_file', ref: 'mcp:files/read_file', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } };
    const called: string[] = [];
    return {
      called,
      offer: (refs) => Promise.resolve({ tools: refs.includes(tool.ref) ? [tool] : [], skipped: refs.filter((r) => r !== tool.ref).map((ref) => ({ ref, reason: 'not allowed' })) }),
      call: (t, args) => {
        called.push(`${t.ref} ${JSON.stringify(args)}`);
        return Promise.resolve({ text: 'x = 1\n', isError: false });
      },
      close: () => Promise.resolve(),
    };
  }

  test('a tool call is run and recorded; the answer comes after', async () => {
    const h = host();
    const { handler, model } = setup([{ tool_calls: [{ tool: 'mcp:files/read_file', arguments: { path: 'a.ts' } }] }, JSON.stringify(good)], { tools: ['mcp:files/read_file'], toolHost: h });
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    expect(h.called).toEqual(['mcp:files/read_file {"path":"a.ts"}']);
    expect(model.calls[0]!.tools?.map((t) => t.name)).toEqual(['files__read_file']);
    expect(c.events.find((e) => e.kind === 'tool_call')!.data).toMatchObject({ tool: 'mcp:files/read_file', arguments: { path: 'a.ts' }, result_bytes: 6 });
    const toolMsg = model.calls[1]!.prompt.find((m) => m.role === 'tool')!;
    expect(toolMsg.content[0]).toMatchObject({ type: 'tool-result', output: { type: 'text', value: 'x = 1\n' } });
  });

  test('a huge tool result is cut before it reaches the model (the default cap, and maxToolResultBytes); the event keeps its real size', async () => {
    const huge = 'é'.repeat(3_000_000); // 6 MB of two-byte characters: the cut must not split one
    const big: ToolHost = { ...host(), call: () => Promise.resolve({ text: huge, isError: false }) };
    const round = [{ tool_calls: [{ tool: 'mcp:files/read_file', arguments: { path: 'a.ts' } }] }, JSON.stringify(good)];
    for (const [over, cap] of [[{}, 100_000], [{ maxToolResultBytes: 1001 }, 1001]] as const) {
      const { handler, model } = setup(round, { tools: ['mcp:files/read_file'], toolHost: big, ...over });
      const c = ctx();
      expect(await handler(c)).toEqual(good);
      const part = model.calls[1]!.prompt.find((m) => m.role === 'tool')!.content[0] as { output: { type: string; value: string } };
      expect(part.output.type).toBe('text');
      const [kept, note] = part.output.value.split('\n\n[');
      expect(Buffer.byteLength(kept!)).toBe(cap - (cap % 2));
      expect(kept).toBe('é'.repeat(Math.floor(cap / 2)));
      expect(note).toContain('6000000');
      expect(c.events.find((e) => e.kind === 'tool_call')!.data).toMatchObject({ result_bytes: 6_000_000, truncated_to_bytes: cap });
    }
  });

  test('a tool that is not allowed is never called', async () => {
    const h = host();
    const { handler } = setup([{ tool_calls: [{ tool: 'mcp:files/write_file', arguments: { path: 'a.ts' } }] }, JSON.stringify(good)], { tools: ['mcp:files/read_file', 'mcp:files/write_file'], toolHost: h });
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    expect(h.called).toEqual([]);
    expect(c.events.find((e) => e.kind === 'tool_not_offered')!.data).toEqual({ tool: 'mcp:files/write_file', reason: 'not allowed' });
    expect(c.events.find((e) => e.kind === 'tool_call_refused')!.data).toMatchObject({ tool: 'files__write_file' });
  });
});

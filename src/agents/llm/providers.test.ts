/**
 * The real adapters (AI SDK openai, anthropic, openai-compatible) against a loopback HTTP server
 * speaking their wire protocols: recorded exchanges, rate limits with retry-after, server errors.
 * Nothing leaves 127.0.0.1.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AgentError } from '../../engine/agent.js';
import { parseWorkflow } from '../../workflow/compile.js';
import { SchemaCompiler } from '../../workflow/json-schema.js';
import type { WorkflowModel } from '../../workflow/model.js';
import { llmAgent } from './agent.js';
import { DEFAULT_PRICES } from './pricing.js';
import { makeProvider } from './providers.js';
import { resolveSettings } from './settings.js';
import { recordingContext } from './testing.js';
import type { ToolHost } from './tools.js';

type Reply = { status: number; headers?: Record<string, string>; body: unknown };
interface Exchange {
  path: string;
  body: Record<string, unknown>;
  headers: IncomingMessage['headers'];
}

let server: Server;
let base = '';
let queue: Reply[] = [];
const seen: Exchange[] = [];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>, headers: req.headers });
      const r = queue.shift() ?? { status: 599, body: { error: { message: 'no recorded reply left' } } };
      res.writeHead(r.status, { 'content-type': 'application/json', ...(r.headers ?? {}) });
      res.end(JSON.stringify(r.body));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  await new Promise<void>((ok) => server.close(() => ok()));
});

const schema = {
  type: 'object',
  required: ['verdict', 'score'],
  properties: { verdict: { type: 'string', enum: ['pass', 'fail'] }, score: { type: 'integer' } },
};
const good = { verdict: 'pass', score: 7 };

function workflow(provider: string, extra = ''): WorkflowModel {
  const r = parseWorkflow(`
openintent: "1.0"
info: {name: wire}
llm:
  provider: ${provider}
  x-base_url: ${base}
  max_tokens: 300
${extra}
workflow:
  judge:
    assign: judge
    outputs: {verdict: string, score: integer}
`);
  if (!r.model) throw new Error(JSON.stringify(r.diagnostics));
  return r.model;
}

function agent(wf: WorkflowModel, env: Record<string, string>, sleeps: number[] = []): ReturnType<typeof llmAgent> {
  const settings = resolveSettings(wf, undefined);
  return llmAgent({
    workflow: wf,
    agentId: 'judge',
    blueprint: { maxOutputRetries: 1, tools: [], llm: {}, outputSchema: schema },
    settings,
    provider: () => makeProvider(settings, { env, cwd: '.', scripts: new Map() }),
    compiler: new SchemaCompiler(),
    prices: DEFAULT_PRICES,
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    now: () => 0,
  });
}

const ctx = (): ReturnType<typeof recordingContext> => recordingContext({ phase: 'judge', agent: 'judge' });

function openaiReply(content: string | null, extra: Record<string, unknown> = {}, finish = 'stop'): Reply {
  return {
    status: 200,
    body: {
      id: 'chatcmpl-abc',
      object: 'chat.completion',
      created: 1767225600,
      model: 'gpt-5.2-2025-12-11',
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null, ...extra }, finish_reason: finish }],
      usage: { prompt_tokens: 412, completion_tokens: 18, total_tokens: 430 },
    },
  };
}

function anthropicReply(content: unknown[], stop = 'end_turn'): Reply {
  return {
    status: 200,
    body: { id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-sonnet-4-20250514', content, stop_reason: stop, stop_sequence: null, usage: { input_tokens: 380, output_tokens: 22 } },
  };
}

async function failure(p: unknown): Promise<AgentError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof AgentError) return e;
    throw e;
  }
  throw new Error('expected a failure');
}

describe('openai over the wire', () => {
  test('strict JSON schema is requested; usage becomes cost', async () => {
    seen.length = 0;
    queue = [openaiReply(JSON.stringify(good))];
    const c = ctx();
    expect(await agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(c)).toEqual(good);
    expect(seen[0]!.path).toBe('/v1/chat/completions');
    expect(seen[0]!.headers['authorization']).toBe('Bearer sk-test');
    const body = seen[0]!.body;
    expect(body['model']).toBe('gpt-5.2');
    expect(body['max_completion_tokens'] ?? body['max_tokens']).toBe(300);
    expect(body['response_format']).toMatchObject({ type: 'json_schema', json_schema: { strict: true, name: 'output' } });
    const call = c.events.find((e) => e.kind === 'llm_call')!.data;
    expect(call).toMatchObject({ provider: 'openai', input_tokens: 412, output_tokens: 18 });
    expect(c.costUsd).toBeCloseTo((412 * 1.75 + 18 * 14) / 1e6, 12);
  });

  test('a free-form object output (`object`, no properties) is not sent as strict: closing it would allow only {}', async () => {
    const wf = parseWorkflow(`
openintent: "1.0"
info: {name: free}
llm: {provider: openai, x-base_url: ${base}, max_tokens: 300}
workflow:
  judge:
    assign: judge
    outputs: {verdict: string, data: object, rows: array}
`).model!;
    const settings = resolveSettings(wf, undefined);
    const handler = llmAgent({
      workflow: wf,
      agentId: 'judge',
      blueprint: undefined,
      settings,
      provider: () => makeProvider(settings, { env: { OPENAI_API_KEY: 'sk-test' }, cwd: '.', scripts: new Map() }),
      compiler: new SchemaCompiler(),
      prices: DEFAULT_PRICES,
      sleep: () => Promise.resolve(),
      now: () => 0,
    });
    const value = { verdict: 'pass', data: { files: 3, clean: true }, rows: [1, 'a'] };
    queue = [openaiReply(JSON.stringify(value))];
    seen.length = 0;
    const c = ctx();
    expect(await handler(c)).toEqual(value);
    expect(seen[0]!.body['response_format']).not.toMatchObject({ type: 'json_schema' });
    expect(c.events.find((e) => e.kind === 'structured_output_fallback')!.data['reason']).toContain('$.data');
  });

  test('a reply without usage is costed from an estimate (and says so), not as free', async () => {
    const reply = openaiReply(JSON.stringify(good));
    delete (reply.body as Record<string, unknown>)['usage'];
    queue = [reply];
    const c = ctx();
    expect(await agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(c)).toEqual(good);
    const call = c.events.find((e) => e.kind === 'llm_call')!.data;
    expect(call['usage_estimated']).toBe(true);
    expect(call['input_tokens']).toBeGreaterThan(100);
    expect(call['output_tokens']).toBe(Math.ceil(JSON.stringify(good).length / 4));
    expect(c.costUsd).toBeGreaterThan(0);
    expect(call['cost_usd']).toBe(c.costUsd);
  });

  test('429 with retry-after is waited out (injected sleep), then the reply is used', async () => {
    seen.length = 0;
    queue = [{ status: 429, headers: { 'retry-after': '3' }, body: { error: { message: 'Rate limit reached', type: 'requests' } } }, openaiReply(JSON.stringify(good))];
    const sleeps: number[] = [];
    expect(await agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' }, sleeps)(ctx())).toEqual(good);
    expect(sleeps).toEqual([3000]);
    expect(seen).toHaveLength(2);
  });

  test('429 insufficient_quota (no credit left) is not a rate limit: not waited on, not retried, the provider says why', async () => {
    seen.length = 0;
    queue = [{ status: 429, body: { error: { message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota', code: 'insufficient_quota' } } }];
    const sleeps: number[] = [];
    const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' }, sleeps)(ctx()));
    expect([e.code, e.retryable, e.details['quota_exhausted']]).toEqual(['llm_request_rejected', false, true]);
    expect(e.message).toContain('exceeded your current quota');
    expect(sleeps).toEqual([]);
    expect(seen).toHaveLength(1);
  });

  test("a rate limit's failure carries the provider's own message", async () => {
    queue = [{ status: 429, headers: { 'retry-after': '600' }, body: { error: { message: 'Rate limit reached for gpt-5.2 on tokens per min (TPM)', type: 'tokens', code: 'rate_limit_exceeded' } } }];
    const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx()));
    expect(e.code).toBe('llm_rate_limited');
    expect(e.message).toContain('tokens per min');
  });

  test("a 503 with retry-after is retried after that wait, not the 1 s backoff; a long one goes to the phase's policy with retry_after_ms", async () => {
    seen.length = 0;
    queue = [{ status: 503, headers: { 'retry-after': '20' }, body: { error: { message: 'The engine is currently overloaded' } } }, openaiReply(JSON.stringify(good))];
    const sleeps: number[] = [];
    expect(await agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' }, sleeps)(ctx())).toEqual(good);
    expect(sleeps).toEqual([20_000]);
    expect(seen).toHaveLength(2);

    seen.length = 0;
    queue = [{ status: 503, headers: { 'retry-after': '300' }, body: { error: { message: 'The engine is currently overloaded' } } }];
    const later: number[] = [];
    const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' }, later)(ctx()));
    expect([e.code, e.retryable, e.details['retry_after_ms']]).toEqual(['llm_transport_error', true, 300_000]);
    expect(later).toEqual([]);
    expect(seen).toHaveLength(1);
  });

  test("a 403 says what the provider said (a model this key may not use), not only that the key was refused", async () => {
    queue = [{ status: 403, body: { error: { message: 'Project proj_abc does not have access to model gpt-5.2', type: 'invalid_request_error', code: 'model_not_found' } } }];
    const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx()));
    expect([e.code, e.retryable]).toEqual(['llm_auth_failed', false]);
    expect(e.message).toContain('does not have access to model gpt-5.2');
    expect(e.message).toContain('HTTP 403');
  });

  test('500 is a retryable transport error; 401 is not retryable', async () => {
    const err = { status: 500, body: { error: { message: 'The server had an error' } } };
    queue = [err, err, err]; // retried twice within the attempt (llm.x-transport_retries)
    const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx()));
    expect(queue).toEqual([]);
    expect([e.code, e.retryable, e.details['status']]).toEqual(['llm_transport_error', true, 500]);
    expect(e.message).toContain('HTTP 500');
    queue = [{ status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } } }];
    const a = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-bad' })(ctx()));
    expect([a.code, a.retryable]).toEqual(['llm_auth_failed', false]);
  });

  test('an invalid reply is re-prompted over the wire, in the same conversation', async () => {
    seen.length = 0;
    queue = [openaiReply(JSON.stringify({ verdict: 'maybe', score: 7 })), openaiReply(JSON.stringify(good))];
    expect(await agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx())).toEqual(good);
    const msgs = seen[1]!.body['messages'] as { role: string; content: unknown }[];
    expect(msgs.map((m) => m.role)).toEqual(['developer', 'user', 'assistant', 'user']); // gpt-5 models take the system prompt as a developer message
    expect(JSON.stringify(msgs[3]!.content)).toContain('$.verdict');
  });

  test('truncation (finish_reason length) and a missing key', async () => {
    queue = [openaiReply('{"verdict": "pa', {}, 'length'), openaiReply('{"verdict": "pa', {}, 'length')];
    expect((await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx()))).code).toBe('llm_truncated');
    const m = await failure(agent(workflow('openai'), {})(ctx()));
    expect([m.code, m.retryable]).toEqual(['llm_missing_key', false]);
  });

  test('a refusal (message.refusal) is llm_refusal, not retried', async () => {
    queue = [openaiReply(null, { refusal: "I'm sorry, I can't help with that." })];
    const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx()));
    expect([e.code, e.retryable]).toEqual(['llm_refusal', false]);
  });

  test('a tool call whose arguments are not a JSON object is refused, never run with its arguments dropped', async () => {
    const called: unknown[] = [];
    const host: ToolHost = {
      offer: () => Promise.resolve({ tools: [{ name: 'files__write_file', ref: 'mcp:files/write_file', inputSchema: { type: 'object' } }], skipped: [] }),
      call: (_t, args) => {
        called.push(args);
        return Promise.resolve({ text: 'written', isError: false });
      },
      close: () => Promise.resolve(),
    };
    const wf = workflow('openai');
    const settings = resolveSettings(wf, undefined);
    const handler = llmAgent({
      workflow: wf,
      agentId: 'judge',
      blueprint: { maxOutputRetries: 1, tools: ['mcp:files/write_file'], llm: {}, outputSchema: schema },
      settings,
      provider: () => makeProvider(settings, { env: { OPENAI_API_KEY: 'sk-test' }, cwd: '.', scripts: new Map() }),
      compiler: new SchemaCompiler(),
      prices: DEFAULT_PRICES,
      tools: ['mcp:files/write_file'],
      toolHost: host,
      sleep: () => Promise.resolve(),
      now: () => 0,
    });
    const calls = (args: string[]): Reply => openaiReply(null, { tool_calls: args.map((a, i) => ({ id: `call_${i}`, type: 'function', function: { name: 'files__write_file', arguments: a } })) }, 'tool_calls');
    // cut JSON, a JSON string, a list: none is an arguments object; an empty string is no arguments
    queue = [calls(['{"path": "a.ts", "text": "x"', '"a.ts"', '[1]', '']), openaiReply(JSON.stringify(good))];
    seen.length = 0;
    const c = ctx();
    expect(await handler(c)).toEqual(good);
    expect(called).toEqual([{}]);
    expect(c.events.filter((e) => e.kind === 'tool_call_refused').map((e) => e.data['tool'])).toEqual(['mcp:files/write_file', 'mcp:files/write_file', 'mcp:files/write_file']);
    const answers = (seen[1]!.body['messages'] as { role: string; content: string }[]).filter((m) => m.role === 'tool');
    expect(answers.map((m) => m.content === 'written')).toEqual([false, false, false, true]);
  });

  test('an MCP tool without parameters ({type: object}, {}) is offered with `properties: {}`, which OpenAI requires', async () => {
    const inputSchemas: Record<string, unknown>[] = [{ type: 'object' }, {}, { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }];
    const host: ToolHost = {
      offer: () => Promise.resolve({ tools: inputSchemas.map((inputSchema, i) => ({ name: `s__t${i}`, ref: `mcp:s/t${i}`, inputSchema })), skipped: [] }),
      call: () => Promise.resolve({ text: 'ok', isError: false }),
      close: () => Promise.resolve(),
    };
    const wf = workflow('openai');
    const settings = resolveSettings(wf, undefined);
    const handler = llmAgent({
      workflow: wf,
      agentId: 'judge',
      blueprint: { maxOutputRetries: 1, tools: ['mcp:s/t0', 'mcp:s/t1', 'mcp:s/t2'], llm: {}, outputSchema: schema },
      settings,
      provider: () => makeProvider(settings, { env: { OPENAI_API_KEY: 'sk-test' }, cwd: '.', scripts: new Map() }),
      compiler: new SchemaCompiler(),
      prices: DEFAULT_PRICES,
      tools: ['mcp:s/t0', 'mcp:s/t1', 'mcp:s/t2'],
      toolHost: host,
      sleep: () => Promise.resolve(),
      now: () => 0,
    });
    queue = [openaiReply(JSON.stringify(good))];
    seen.length = 0;
    expect(await handler(ctx())).toEqual(good);
    const sent = (seen[0]!.body['tools'] as { function: { parameters: Record<string, unknown> } }[]).map((t) => t.function.parameters);
    expect(sent).toEqual([
      { type: 'object', properties: {} },
      { type: 'object', properties: {} },
      { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    ]);
  });

  test('a 404 names the URL that was called (a base URL without /v1), not retried', async () => {
    queue = [{ status: 404, body: { error: { message: 'Not Found' } } }];
    const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx()));
    expect([e.code, e.retryable, e.details['status']]).toEqual(['llm_request_rejected', false, 404]);
    expect(e.message).toContain(`${base}/chat/completions`);
  });

  test('a 404 for a model the provider does not have names the model, without the base-URL hint', async () => {
    for (const body of [{ error: { message: 'The model `gpt-9` does not exist or you do not have access to it.', type: 'invalid_request_error', code: 'model_not_found' } }, { error: 'model "llama9" not found, try pulling it first' }]) {
      queue = [{ status: 404, body }];
      const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx()));
      expect([e.code, e.retryable]).toEqual(['llm_request_rejected', false]);
      expect(e.message).toMatch(/gpt-9|llama9/);
      expect(e.message).toContain('llm.model');
      expect(e.message).not.toContain('/v1');
    }
  });

  test('a server that streams although asked not to is named as such (a retryable transport error)', async () => {
    const sse: Reply = { status: 200, headers: { 'content-type': 'text/event-stream' }, body: 'data: {"choices":[{"delta":{"content":"{}"}}]}' };
    queue = [sse, sse, sse];
    const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx()));
    expect(queue).toEqual([]);
    expect([e.code, e.retryable, e.details['status'], e.details['streamed']]).toEqual(['llm_transport_error', true, 200, true]);
  });

  test("an HTTP 200 whose body is an error object (a gateway's upstream failure) says the provider's message", async () => {
    const err = { status: 200, body: { error: { message: 'Upstream model is overloaded, try another provider', code: 502 } } };
    queue = [err, err, err];
    const e = await failure(agent(workflow('openai'), { OPENAI_API_KEY: 'sk-test' })(ctx()));
    expect([e.code, e.retryable]).toEqual(['llm_transport_error', true]);
    expect(e.message).toContain('Upstream model is overloaded');
  });

  test('a connection refused is a retryable transport error', async () => {
    const wf = parseWorkflow(`
openintent: "1.0"
info: {name: x}
llm: {provider: openai, x-base_url: "http://127.0.0.1:9/v1"}
workflow:
  judge: {assign: judge, outputs: {verdict: string, score: integer}}
`).model!;
    const e = await failure(agent(wf, { OPENAI_API_KEY: 'sk-test' })(ctx()));
    expect([e.code, e.retryable]).toEqual(['llm_transport_error', true]);
  });
});

describe('anthropic over the wire', () => {
  test('the spec default model gets JSON through tool use (a forced `json` tool)', async () => {
    seen.length = 0;
    queue = [anthropicReply([{ type: 'tool_use', id: 'toolu_1', name: 'json', input: good }], 'tool_use')];
    const c = ctx();
    expect(await agent(workflow('anthropic'), { ANTHROPIC_API_KEY: 'sk-ant-test' })(c)).toEqual(good);
    expect(seen[0]!.path).toBe('/v1/messages');
    expect(seen[0]!.headers['x-api-key']).toBe('sk-ant-test');
    const body = seen[0]!.body;
    expect(body['model']).toBe('claude-sonnet-4-20250514');
    const tools = body['tools'] as { name: string; input_schema: { required: string[] } }[];
    expect(tools.map((t) => [t.name, t.input_schema.required])).toEqual([['json', ['verdict', 'score']]]);
    expect(body['tool_choice']).toMatchObject({ type: 'any' }); // the only tool offered is json
    expect(c.events.find((e) => e.kind === 'llm_call')!.data).toMatchObject({ provider: 'anthropic', input_tokens: 380, output_tokens: 22 });
  });

  test('newer models get the output format', async () => {
    seen.length = 0;
    queue = [anthropicReply([{ type: 'text', text: JSON.stringify(good) }])];
    expect(await agent(workflow('anthropic', '  model: claude-sonnet-4-5'), { ANTHROPIC_API_KEY: 'k' })(ctx())).toEqual(good);
    expect(JSON.stringify(seen[0]!.body)).toContain('json_schema');
    expect(seen[0]!.body['tools']).toBeUndefined();
  });

  test('stop_reason refusal is llm_refusal', async () => {
    queue = [anthropicReply([{ type: 'text', text: 'I cannot help with that.' }], 'refusal')];
    const e = await failure(agent(workflow('anthropic', '  model: claude-sonnet-4-5'), { ANTHROPIC_API_KEY: 'k' })(ctx()));
    expect(e.code).toBe('llm_refusal');
  });

  test('529 overloaded with retry-after waits that long before trying again', async () => {
    seen.length = 0;
    queue = [{ status: 529, headers: { 'retry-after': '15' }, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } }, anthropicReply([{ type: 'tool_use', id: 'toolu_1', name: 'json', input: good }], 'tool_use')];
    const sleeps: number[] = [];
    expect(await agent(workflow('anthropic'), { ANTHROPIC_API_KEY: 'k' }, sleeps)(ctx())).toEqual(good);
    expect(sleeps).toEqual([15_000]);
  });

  test('429 with a long retry-after fails retryable with retry_after_ms', async () => {
    queue = [{ status: 429, headers: { 'retry-after': '120' }, body: { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } } }];
    const e = await failure(agent(workflow('anthropic'), { ANTHROPIC_API_KEY: 'k' })(ctx()));
    expect([e.code, e.retryable, e.details['retry_after_ms']]).toEqual(['llm_rate_limited', true, 120_000]);
  });

  test('provider env picks the key that is set', async () => {
    seen.length = 0;
    queue = [anthropicReply([{ type: 'tool_use', id: 'toolu_1', name: 'json', input: good }], 'tool_use')];
    expect(await agent(workflow('env'), { ANTHROPIC_API_KEY: 'k' })(ctx())).toEqual(good);
    expect(seen[0]!.path).toBe('/v1/messages');
    expect(seen[0]!.body['model']).toBe('claude-sonnet-4-20250514');
  });
});

describe('openai-compatible over the wire', () => {
  test('x-structured_outputs: true sends the JSON schema', async () => {
    seen.length = 0;
    queue = [openaiReply(JSON.stringify(good))];
    const wf = workflow('openai-compatible', '  model: qwen2.5\n  x-structured_outputs: true');
    const c = ctx();
    expect(await agent(wf, {})(c)).toEqual(good);
    expect(seen[0]!.body['response_format']).toMatchObject({ type: 'json_schema' });
    expect(c.events.find((e) => e.kind === 'structured_output')!.data).toEqual({ provider: 'openai-compatible', mode: 'openai-strict' });
  });

  test('no native structured output unless declared: prompting with a fallback event', async () => {
    seen.length = 0;
    queue = [openaiReply('Sure:\n```json\n' + JSON.stringify(good) + '\n```')];
    const wf = workflow('openai-compatible', '  model: llama3.1');
    const c = ctx();
    expect(await agent(wf, {})(c)).toEqual(good);
    expect(seen[0]!.path).toBe('/v1/chat/completions');
    expect(seen[0]!.body['response_format']).toBeUndefined();
    expect(c.events.some((e) => e.kind === 'structured_output_fallback')).toBe(true);
  });
});

/** GenAI spans of LLM agents (the scripted provider, an MCP server over stdio), and the content opt-in. */
import { SpanStatusCode } from '@opentelemetry/api';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runWorkflow } from '../../src/api/run.js';
import { WorkflowSpec } from '../../src/api/spec.js';
import type { AgentHandler } from '../../src/engine/agent.js';
import { loadWorkflow } from '../../src/workflow/compile.js';
import { byName, ms, parentOf, traced, type Traced } from './helpers.js';

const example = join(import.meta.dirname, '..', '..', 'examples', 'llm-review');

async function review(t: Traced, runId: string): Promise<void> {
  const compiled = await loadWorkflow(join(example, 'workflow.yaml'));
  const agents = ((await import(join(example, 'agents.mjs'))) as { default: Record<string, AgentHandler> }).default;
  const r = await runWorkflow(WorkflowSpec.fromResult(compiled), { runId, agents, cwd: example, trigger: { path: 'cart.ts' }, llm: { env: {} }, telemetry: t.telemetry });
  expect(r.status).toBe('completed');
}

describe('LLM agents in traces', () => {
  test('an LLM attempt is invoke_agent {agent}; each model call a chat {model} child with token usage; each MCP call an execute_tool child', async () => {
    const t = traced();
    await review(t, 'run-llm');
    const spans = await t.spans();
    const agent = byName(spans, 'invoke_agent reviewer');
    expect(agent).toHaveLength(1);
    const a = agent[0]!;
    expect(a.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'reviewer', 'gen_ai.provider.name': 'scripted', 'baton.phase': 'review', 'baton.attempt': 1, 'baton.run.id': 'run-llm' });
    const run = byName(spans, 'invoke_workflow LLM Code Review')[0]!;
    expect(parentOf(a)).toBe(run.spanContext().spanId);

    const chats = spans.filter((s) => s.name.startsWith('chat ') && parentOf(s) === a.spanContext().spanId).sort((x, y) => ms(x.startTime) - ms(y.startTime));
    // the replies file: a tool call, a reply re-prompted, a valid reply
    expect(chats).toHaveLength(3);
    for (const c of chats) {
      expect(c.name).toBe(`chat ${String(c.attributes['gen_ai.request.model'])}`);
      expect(c.spanContext().traceId).toBe(a.spanContext().traceId);
      expect(c.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'scripted' });
      expect(c.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(c.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      // inside the attempt's time
      expect(ms(c.startTime)).toBeGreaterThanOrEqual(ms(a.startTime) - 1);
      expect(ms(c.endTime)).toBeLessThanOrEqual(ms(a.endTime) + 1);
    }
    expect(chats.map((c) => c.attributes['baton.llm.call'])).toEqual([1, 2, 3]);
    expect(chats[0]!.attributes['gen_ai.response.finish_reasons']).toEqual(['tool-calls']);

    const tools = byName(spans, 'execute_tool repo__read_file');
    expect(tools).toHaveLength(1);
    expect(parentOf(tools[0]!)).toBe(a.spanContext().spanId);
    expect(tools[0]!.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'repo__read_file', 'baton.tool.ref': 'mcp:repo/read_file' });
    expect(tools[0]!.status.code).not.toBe(SpanStatusCode.ERROR);
    // the tool ran between the first model call and the second
    expect(ms(tools[0]!.startTime)).toBeGreaterThanOrEqual(ms(chats[0]!.endTime) - 1);
    expect(ms(tools[0]!.endTime)).toBeLessThanOrEqual(ms(chats[1]!.startTime) + 1);

    // the function agent keeps the generic name
    expect(byName(spans, 'baton.attempt report')).toHaveLength(1);
    // no content without the opt-in
    for (const s of spans) for (const k of Object.keys(s.attributes)) expect(k).not.toMatch(/messages|system_instructions|call\.arguments|call\.result/);
  }, 30_000);

  test('an LLM attempt that fails before any model call (parameters_schema, a missing key) is still invoke_agent {agent}', async () => {
    const t = traced();
    const spec = WorkflowSpec.fromString(`
openintent: "1.0"
info: {name: early}
llm: {provider: openai, model: gpt-5-mini}
agents:
  judge: {parameters_schema: {type: object, required: [code], properties: {code: {type: string, minLength: 3}}}}
  keyless: {system_prompt: judge}
workflow:
  first: {assign: judge, inputs: {code: $trigger.code}, outputs: {v: integer}}
  second: {assign: keyless, outputs: {v: integer}}
`);
    const r = await runWorkflow(spec, { runId: 'run-llm-early', trigger: { code: 'x' }, llm: { env: {} }, telemetry: t.telemetry });
    expect(r.status).toBe('failed');
    const spans = await t.spans();
    for (const [agent, code] of [['judge', 'parameters_schema_validation_failed'], ['keyless', 'llm_missing_key']] as const) {
      const a = byName(spans, `invoke_agent ${agent}`);
      expect(a).toHaveLength(1);
      expect(a[0]!.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': agent, 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'gpt-5-mini', 'error.type': code });
    }
  }, 30_000);

  test('prompts, replies and tool arguments are recorded only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true', async () => {
    const t = traced({ env: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' } });
    await review(t, 'run-llm-content');
    const spans = await t.spans();
    const chats = spans.filter((s) => s.name.startsWith('chat ')).sort((x, y) => ms(x.startTime) - ms(y.startTime));
    const first = chats[0]!;
    expect((JSON.parse(String(first.attributes['gen_ai.system_instructions'])) as { content: string }[])[0]!.content).toContain('meticulous TypeScript reviewer');
    const input = JSON.parse(String(first.attributes['gen_ai.input.messages'])) as { role: string }[];
    expect(input.map((m) => m.role)).toEqual(['user']);
    const output = JSON.parse(String(first.attributes['gen_ai.output.messages'])) as { parts: { type: string; name?: string }[] }[];
    expect(output[0]!.parts[0]).toMatchObject({ type: 'tool_call', name: 'repo__read_file' });
    const tool = byName(spans, 'execute_tool repo__read_file')[0]!;
    expect(JSON.parse(String(tool.attributes['gen_ai.tool.call.arguments']))).toEqual({ path: 'cart.ts' });
    expect(String(tool.attributes['gen_ai.tool.call.result'])).toContain('total');
    // any other value than "true" is no
    const off = traced({ env: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'yes' } });
    await review(off, 'run-llm-no-content');
    expect((await off.spans()).some((s) => 'gen_ai.input.messages' in s.attributes)).toBe(false);
  }, 30_000);
});

describe('a tool that fails, in traces', () => {
  const fixtures = join(import.meta.dirname, '..', 'fixtures', 'mcp');

  async function failingTool(t: Traced, runId: string): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), 'baton-trace-tool-'));
    writeFileSync(
      join(dir, 'replies.yaml'),
      `phases:\n  look:\n    - tool_calls: [{tool: mcp:files/read_file, arguments: {path: patient-4711-record.txt}}]\n    - text: '{"found": false}'\n`,
    );
    const spec = WorkflowSpec.fromString(`
openintent: "1.0"
info: {name: tool-fails}
llm: {provider: scripted, x-replies: replies.yaml}
mcp:
  servers:
    files: {command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(join(fixtures, 'files-server.mjs'))}, ${JSON.stringify(fixtures)}]}
agents:
  seeker: {tools: [mcp:files/read_file], system_prompt: look}
workflow:
  look: {assign: seeker, outputs: {found: boolean}}
`);
    const r = await runWorkflow(spec, { runId, cwd: dir, llm: { env: {} }, telemetry: t.telemetry });
    expect(r.status).toBe('completed');
  }

  test('a tool that throws (a JSON-RPC error): its words are kept out of the span too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-trace-tool-'));
    writeFileSync(join(dir, 'replies.yaml'), `phases:\n  look:\n    - tool_calls: [{tool: mcp:t/boom, arguments: {path: patient-4711-record.txt}}]\n    - text: '{"found": false}'\n`);
    const spec = WorkflowSpec.fromString(`
openintent: "1.0"
info: {name: tool-throws}
llm: {provider: scripted, x-replies: replies.yaml}
mcp:
  servers:
    t: {command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(join(fixtures, 'hang-server.mjs'))}, throws]}
agents:
  seeker: {tools: [mcp:t/boom], system_prompt: look}
workflow:
  look: {assign: seeker, outputs: {found: boolean}}
`);
    const t = traced();
    const r = await runWorkflow(spec, { runId: 'run-tool-throws', cwd: dir, llm: { env: {} }, telemetry: t.telemetry });
    expect(r.status).toBe('completed');
    const spans = await t.spans();
    const tool = byName(spans, 'execute_tool t__boom');
    expect(tool).toHaveLength(1);
    expect(tool[0]!.status.code).toBe(SpanStatusCode.ERROR);
    for (const s of spans) expect(JSON.stringify([s.status, s.attributes, s.events])).not.toContain('patient-4711');
  }, 30_000);

  test('the tool span fails without the tool result in its status, unless content capture is on', async () => {
    const t = traced();
    await failingTool(t, 'run-tool-fails');
    const spans = await t.spans();
    const tool = byName(spans, 'execute_tool files__read_file');
    expect(tool).toHaveLength(1);
    expect(tool[0]!.status.code).toBe(SpanStatusCode.ERROR);
    // the result (here a file name, elsewhere a record) is content: only the opt-in puts it in a trace
    for (const s of spans) expect(JSON.stringify([s.status, s.attributes, s.events])).not.toContain('patient-4711');

    const on = traced({ env: { OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' } });
    await failingTool(on, 'run-tool-fails-content');
    const captured = byName(await on.spans(), 'execute_tool files__read_file')[0]!;
    expect(captured.status.code).toBe(SpanStatusCode.ERROR);
    expect(String(captured.attributes['gen_ai.tool.call.result'])).toContain('patient-4711');
  }, 30_000);
});

/**
 * GenAI spans of an LLM agent's attempt (OpenTelemetry GenAI semantic conventions), through the
 * engine's telemetry port (`ctx.trace`): the attempt span becomes `invoke_agent {agent}`, each model
 * call is a `chat {model}` child and each tool call an `execute_tool {name}` child. Prompts and
 * replies are recorded only when the trace says content may be (`captureContent`).
 */
import type { LanguageModelV3GenerateResult, LanguageModelV3Message } from '@ai-sdk/provider';
import type { AgentContext } from '../../engine/agent.js';
import type { SpanHandle } from '../../engine/telemetry.js';

/** The attempt's span as an agent invocation. */
export function describeAgentSpan(ctx: AgentContext, agentId: string, provider: string, model: string | undefined): void {
  ctx.trace?.describe(`invoke_agent ${agentId}`, { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': agentId, 'gen_ai.provider.name': provider, ...(model !== undefined ? { 'gen_ai.request.model': model } : {}) });
}

export function startChatSpan(ctx: AgentContext, provider: string, model: string, call: number, req: { maxTokens: number; temperature: number | undefined; messages: readonly LanguageModelV3Message[] }): SpanHandle | undefined {
  const t = ctx.trace;
  if (!t) return undefined;
  const span = t.span(`chat ${model}`, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': provider,
    'gen_ai.request.model': model,
    'gen_ai.request.max_tokens': req.maxTokens,
    ...(req.temperature !== undefined ? { 'gen_ai.request.temperature': req.temperature } : {}),
    'baton.llm.call': call,
  });
  if (t.captureContent) {
    const system = req.messages.filter((m) => m.role === 'system').map((m) => ({ type: 'text', content: m.content }));
    span.setAttributes({ 'gen_ai.system_instructions': JSON.stringify(system), 'gen_ai.input.messages': JSON.stringify(req.messages.filter((m) => m.role !== 'system').map(messageOf)) });
  }
  return span;
}

export function endChatSpan(ctx: AgentContext, span: SpanHandle | undefined, res: LanguageModelV3GenerateResult, inTok: number, outTok: number): void {
  if (!span) return;
  span.setAttributes({
    'gen_ai.usage.input_tokens': inTok,
    'gen_ai.usage.output_tokens': outTok,
    'gen_ai.response.finish_reasons': [res.finishReason.unified],
    ...(res.response?.modelId !== undefined ? { 'gen_ai.response.model': res.response.modelId } : {}),
    ...(res.response?.id !== undefined ? { 'gen_ai.response.id': res.response.id } : {}),
  });
  if (ctx.trace?.captureContent) {
    const parts = res.content.flatMap((c): Record<string, unknown>[] => (c.type === 'text' ? [{ type: 'text', content: c.text }] : c.type === 'tool-call' ? [{ type: 'tool_call', id: c.toolCallId, name: c.toolName, arguments: c.input }] : []));
    span.setAttributes({ 'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', parts, finish_reason: res.finishReason.unified }]) });
  }
  span.end();
}

export function failSpan(span: SpanHandle | undefined, code: string, message: string): void {
  if (!span) return;
  span.fail(code, message);
  span.end();
}

export function startToolSpan(ctx: AgentContext, name: string, ref: string, callId: string, args: unknown): SpanHandle | undefined {
  const t = ctx.trace;
  if (!t) return undefined;
  return t.span(`execute_tool ${name}`, {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': name,
    'gen_ai.tool.call.id': callId,
    'gen_ai.tool.type': 'extension',
    'baton.tool.ref': ref,
    ...(t.captureContent ? { 'gen_ai.tool.call.arguments': JSON.stringify(args) } : {}),
  });
}

export function endToolSpan(ctx: AgentContext, span: SpanHandle | undefined, text: string, isError: boolean): void {
  if (!span) return;
  const content = ctx.trace?.captureContent === true;
  if (content) span.setAttributes({ 'gen_ai.tool.call.result': text });
  // the error text is the tool's result, content like any other: in the status only with the opt-in
  if (isError) span.fail('tool_error', content ? text.slice(0, 500) : 'the tool returned an error');
  span.end();
}

function messageOf(m: LanguageModelV3Message): { role: string; parts: unknown[] } {
  if (typeof m.content === 'string') return { role: m.role, parts: [{ type: 'text', content: m.content }] };
  return {
    role: m.role,
    parts: m.content.map((c) => {
      switch (c.type) {
        case 'text':
          return { type: 'text', content: c.text };
        case 'tool-call':
          return { type: 'tool_call', id: c.toolCallId, name: c.toolName, arguments: c.input };
        case 'tool-result':
          return { type: 'tool_call_response', id: c.toolCallId, response: c.output };
        default:
          return { type: c.type };
      }
    }),
  };
}

/**
 * The enforcement loop: an AgentHandler that runs a phase on a model and returns only output that
 * fits the contract (blueprint `output_schema` AND phase `outputs`), or fails with a stable code.
 *
 *   parameters_schema check (no tokens spent on a bad input)
 *   -> system prompt (+ output section from the schema), user message (template or phase)
 *   -> [budget check -> model call -> usage and cost] (tool calls run and answered in between)
 *   -> extract, repair, validate -> valid: result | invalid: re-prompt with every error, same conversation
 *
 * Every call, repair, re-prompt, tool call and fallback is an event (`ctx.record`).
 */
import type { LanguageModelV3CallOptions, LanguageModelV3FunctionTool, LanguageModelV3GenerateResult, LanguageModelV3Message, LanguageModelV3ToolResultPart } from '@ai-sdk/provider';
import type { JsonObject } from '../../core/json.js';
import { isPlainObject } from '../../core/json.js';
import { AgentError, type AgentContext, type AgentHandler } from '../../engine/agent.js';
import type { SchemaCompiler } from '../../workflow/json-schema.js';
import type { Blueprint, WorkflowModel } from '../../workflow/model.js';
import { buildContract, outputOf, textOutput, type Contract } from './contract.js';
import { llmError, providerFailure, validationDetails } from './failures.js';
import { outputSection, phaseMessage, renderTemplate, repromptText, textSection, truncationText } from './prompt.js';
import type { InFlightCosts } from './in-flight.js';
import { costUsd, priceOf, type PriceTable } from './pricing.js';
import { asModel, nativeOptionsOf, planNative, type LlmProvider } from './provider.js';
import { parseAgentReply } from './reply.js';
import { SCRIPT_KEY } from './scripted.js';
import { DEFAULT_MODELS, type LlmSettings } from './settings.js';
import { toolParameters, type OfferedTool, type ToolHost } from './tools.js';
import { describeAgentSpan, endChatSpan, endToolSpan, failSpan, startChatSpan, startToolSpan } from './trace.js';

export interface LlmAgentOptions {
  workflow: WorkflowModel;
  agentId: string;
  blueprint: Blueprint | undefined;
  settings: LlmSettings;
  /** The provider (or how to make it: may throw an AgentError such as `llm_missing_key`). */
  provider: LlmProvider | (() => LlmProvider | Promise<LlmProvider>);
  compiler: SchemaCompiler;
  prices: PriceTable;
  /** Tool references offered to the model (the blueprint's `tools`, else the declaration's). */
  tools?: readonly string[] | undefined;
  toolHost?: ToolHost | undefined;
  /** Waits (rate limits); injected so tests never sleep. Rejects when the signal aborts. */
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  now: () => number;
  /** Model turns spent on tool calls before the attempt fails (default 8). */
  maxToolRounds?: number | undefined;
  /** Rate-limit waits inside one attempt before failing it as `llm_rate_limited` (default 2). */
  rateLimitWaits?: number | undefined;
  /** A longer retry-after fails the attempt at once (the phase's retry policy takes over). Default 60 s. */
  maxRateLimitWaitMs?: number | undefined;
  /** The most of one tool result the model is given, in UTF-8 bytes (default 100,000; BATON_MCP_MAX_RESULT_BYTES). */
  maxToolResultBytes?: number | undefined;
  /** The run's calls in flight (shared by its LLM agents): parallel calls never overspend a budget together. */
  inFlight?: InFlightCosts | undefined;
}

export const DEFAULT_MAX_TOOL_RESULT_BYTES = 100_000;

export function llmAgent(o: LlmAgentOptions): AgentHandler {
  return async (ctx) => {
    const held: Held = { release: undefined };
    try {
      return await runLlm(o, ctx, held);
    } finally {
      held.release?.();
    }
  };
}

/** The worst case of the call in flight, held in the run's InFlightCosts until its cost is counted. */
interface Held {
  release: (() => void) | undefined;
}

async function runLlm(o: LlmAgentOptions, ctx: AgentContext, held: Held): Promise<JsonObject> {
  const who = `agent '${o.agentId}'`;
  const bp = o.blueprint;
  const phase = o.workflow.byName.get(ctx.phase);
  // the attempt is an agent invocation from its start: one that fails before its provider exists (a bad
  // input, a missing key) is traced as one too; named again below once the provider says its model
  describeAgentSpan(ctx, o.agentId, o.settings.provider, o.settings.model ?? DEFAULT_MODELS[o.settings.provider]);

  // 1. parameters_schema, before any model call
  if (bp?.parametersSchema) {
    const c = o.compiler.compile(bp.parametersSchema);
    if (!c.ok) throw llmError('llm_config_invalid', `${who}: parameters_schema does not compile: ${c.problems[0]?.message ?? ''}`, {}, false);
    const errors = c.validator.validate(ctx.input);
    if (errors.length > 0) {
      // the message names what is wrong (it is what `baton run` prints): a count alone sent the user to the event log
      const shown = errors.slice(0, 5).map((e) => `${e.path}: ${e.message}`);
      const more = errors.length > shown.length ? `; and ${errors.length - shown.length} more` : '';
      throw llmError('parameters_schema_validation_failed', `${who}: the input does not match parameters_schema: ${shown.join('; ')}${more} (no model call was made)`, validationDetails(errors), false);
    }
  }

  // 2. the contract and the conversation
  const built = buildContract(phase, bp, o.compiler);
  if (!built.ok) throw llmError('llm_config_invalid', `${who}: ${built.message}`, validationDetails(built.errors), false);
  const contract = built.contract;
  let user: string;
  if (bp?.prompt !== undefined) {
    const r = renderTemplate(bp.prompt, ctx.input);
    if (!r.ok) throw llmError('llm_config_invalid', `${who}: the prompt template names ${r.unknown.map((u) => `{{${u}}}`).join(', ')}, not in the phase's inputs`, { unknown: r.unknown }, false);
    user = r.text;
  } else user = phaseMessage(phase, ctx.input);
  const agentDecl = o.workflow.agents?.[o.agentId];
  const description = bp?.description ?? agentDecl?.description;
  const intro = o.settings.systemPrompt || (description ? `You are ${o.agentId}: ${description}` : `You are ${o.agentId}, an agent in the workflow "${o.workflow.info.name}".`);
  const system = `${intro}\n\n${contract.mode === 'data' ? outputSection(contract.schema) : textSection()}`;
  const messages: LanguageModelV3Message[] = [
    { role: 'system', content: system },
    { role: 'user', content: [{ type: 'text', text: user }] },
  ];

  let provider: LlmProvider;
  try {
    provider = typeof o.provider === 'function' ? await o.provider() : o.provider;
  } catch (e) {
    throw providerFailure(e, who, o.now());
  }
  const model = asModel(provider);
  describeAgentSpan(ctx, o.agentId, provider.name, model.modelId);

  // 3. native structured output where the provider has it for this schema
  let responseFormat: LanguageModelV3CallOptions['responseFormat'];
  let providerOptions: NonNullable<LanguageModelV3CallOptions['providerOptions']> = { [SCRIPT_KEY]: { phase: ctx.phase, agent: ctx.agent } };
  if (contract.mode === 'data') {
    const plan = planNative(provider.structuredOutput, contract.schema);
    if (plan.native) {
      responseFormat = { type: 'json', schema: plan.schema, name: 'output' };
      providerOptions = { ...providerOptions, ...(nativeOptionsOf(provider) ?? {}) };
      ctx.record('structured_output', { provider: provider.name, mode: provider.structuredOutput });
    } else {
      ctx.record('structured_output_fallback', { provider: provider.name, reason: plan.reason });
    }
  }

  // 4. tools
  let offered: OfferedTool[] = [];
  if (o.tools && o.tools.length > 0) {
    if (!o.toolHost) throw llmError('llm_config_invalid', `${who}: declares tools but the workflow has no \`mcp\` servers`, { tools: [...o.tools] }, false);
    const r = await o.toolHost.offer(o.tools, ctx.signal);
    offered = r.tools;
    for (const s of r.skipped) ctx.record('tool_not_offered', { tool: s.ref, reason: s.reason });
  }
  const sdkTools: LanguageModelV3FunctionTool[] = offered.map((t) => ({ type: 'function', name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), inputSchema: toolParameters(t.inputSchema) as never }));

  const price = priceOf(model.modelId, o.prices);
  if (!price) ctx.record('price_unknown', { model: model.modelId, note: 'calls are not costed or budgeted; add the model to llm.x-prices' });
  let retriesLeft = bp?.maxOutputRetries ?? 1;
  const maxRetries = retriesLeft;
  let toolRounds = 0;
  let rateWaits = 0;
  let transportRetries = 0;
  let call = 0;
  const timeoutMs = o.settings.requestTimeoutMs;

  // the agent contract's `resources.tokenBudget`: tokens (in and out) one attempt may spend
  const tokenBudget = o.workflow.agents?.[o.agentId]?.contract?.resources.tokenBudget;
  let tokensUsed = 0;
  for (;;) {
    if (tokenBudget !== undefined && tokensUsed >= tokenBudget) {
      throw llmError('llm_token_budget_exceeded', `${who}: the attempt has used ${tokensUsed} tokens, its contract's tokenBudget is ${tokenBudget}; no further call was made`, { tokens_used: tokensUsed, token_budget: tokenBudget }, false);
    }
    // budget: the worst case (the whole prompt in, max_tokens out) must fit what is left, and what is left once
    // the run's other calls in flight have cost their worst: else this one waits for one of them to be counted
    if (price) {
      const estimate = costUsd(price, Math.ceil((JSON.stringify(messages).length + JSON.stringify(sdkTools).length) / 4), o.settings.maxTokens);
      for (;;) {
        const remaining = ctx.remainingBudgetUsd();
        if (remaining === undefined) break;
        if (estimate > remaining) {
          throw llmError('llm_budget_exceeded', `${who}: the next model call could cost up to $${estimate.toFixed(6)}, more than the $${Math.max(0, remaining).toFixed(6)} left in the budget; it was not made`, { estimated_usd: estimate, remaining_usd: remaining }, false);
        }
        const others = o.inFlight?.reserved ?? 0;
        if (o.inFlight === undefined || others === 0 || estimate <= remaining - others) {
          held.release = o.inFlight?.hold(estimate);
          break;
        }
        await o.inFlight.changed(ctx.signal).catch(() => {
          throw new AgentError('Aborted', `${who}: the attempt was aborted`, {}, true);
        });
      }
    }
    if (ctx.signal.aborted) throw new AgentError('Aborted', `${who}: the attempt was aborted`, {}, true);
    call++;
    const started = o.now();
    let res: LanguageModelV3GenerateResult;
    // a provider that accepts the connection and never answers: the call is aborted at the timeout
    // (network time, a real timer: the injected sleep is for waits Baton chooses, such as rate limits)
    const callCtl = new AbortController();
    let timedOut = false;
    const span = startChatSpan(ctx, provider.name, model.modelId, call, { maxTokens: o.settings.maxTokens, temperature: o.settings.temperature, messages });
    const timer = setTimeout(() => {
      timedOut = true;
      callCtl.abort(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    try {
      res = await model.doGenerate({
        prompt: messages,
        maxOutputTokens: o.settings.maxTokens,
        temperature: o.settings.temperature,
        ...(responseFormat ? { responseFormat } : {}),
        ...(sdkTools.length > 0 ? { tools: sdkTools, toolChoice: { type: 'auto' } } : {}),
        providerOptions,
        abortSignal: AbortSignal.any([ctx.signal, callCtl.signal]),
      });
    } catch (e) {
      // nothing was spent: the others waiting on this call's worst case may go
      held.release?.();
      held.release = undefined;
      if (ctx.signal.aborted) {
        failSpan(span, 'Aborted', 'the attempt was aborted');
        throw new AgentError('Aborted', `${who}: the attempt was aborted`, {}, true);
      }
      const f = timedOut ? llmError('llm_transport_error', `${who}: the provider did not answer within ${timeoutMs} ms (llm.x-request_timeout_ms)`, { timeout_ms: timeoutMs }, true) : providerFailure(e, who, o.now());
      failSpan(span, f.code, f.message);
      const after = f.details['retry_after_ms'];
      if (f.code === 'llm_rate_limited' && rateWaits < (o.rateLimitWaits ?? 2)) {
        const wait = typeof after === 'number' ? after : 1000 * 2 ** rateWaits;
        if (wait <= (o.maxRateLimitWaitMs ?? 60_000)) {
          rateWaits++;
          ctx.record('rate_limit_wait', { call, wait_ms: wait, status: 429 });
          await o.sleep(wait, ctx.signal);
          continue;
        }
      }
      if (f.code === 'llm_transport_error' && transportRetries < o.settings.transportRetries) {
        // transport failures are the network's weather: bounded retries with backoff, then the phase's policy;
        // an overloaded provider's retry-after (503, 529) is waited out when it is short, else the phase's
        // retry policy takes over at once (and waits at least that long)
        const wait = Math.max(1000 * 2 ** transportRetries, typeof after === 'number' ? after : 0);
        if (wait <= (o.maxRateLimitWaitMs ?? 60_000)) {
          transportRetries++;
          ctx.record('transport_retry', { call, wait_ms: wait, message: f.message });
          await o.sleep(wait, ctx.signal);
          continue;
        }
      }
      ctx.record('llm_error', { call, code: f.code, message: f.message });
      throw f;
    } finally {
      clearTimeout(timer);
    }
    // a provider that reports no usage (some OpenAI-compatible servers) is not free: its tokens are estimated
    // as the budget check does (~4 characters a token), so spend and budgets still count, and the event says so
    const estimated = res.usage.inputTokens.total === undefined || res.usage.outputTokens.total === undefined;
    const inTok = res.usage.inputTokens.total ?? Math.ceil((JSON.stringify(messages).length + JSON.stringify(sdkTools).length) / 4);
    const outTok = res.usage.outputTokens.total ?? Math.ceil(res.content.reduce((n, c) => n + (c.type === 'text' ? c.text.length : c.type === 'tool-call' ? c.input.length : 0), 0) / 4);
    tokensUsed += inTok + outTok;
    endChatSpan(ctx, span, res, inTok, outTok);
    const usd = price ? costUsd(price, inTok, outTok) : 0;
    ctx.record('llm_call', { call, provider: provider.name, model: model.modelId, input_tokens: inTok, output_tokens: outTok, cost_usd: usd, finish_reason: res.finishReason.unified, ...(estimated ? { usage_estimated: true } : {}), duration_ms: o.now() - started });
    if (usd > 0) ctx.reportCost(usd);
    // counted now in what the run has spent: its worst case is no longer held
    held.release?.();
    held.release = undefined;
    if (res.warnings.length > 0) ctx.record('provider_warnings', { call, warnings: res.warnings.map((w) => JSON.stringify(w)) });

    const text = res.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('');
    const toolCalls = res.content.flatMap((c) => (c.type === 'tool-call' && !c.providerExecuted ? [c] : []));
    const finish = res.finishReason.unified;

    if (finish === 'content-filter') throw llmError('llm_refusal', `${who}: the model refused (content filter)`, { call, text: text.slice(0, 2000) }, false);

    if (toolCalls.length > 0 && finish !== 'length') {
      if (++toolRounds > (o.maxToolRounds ?? 8)) throw llmError('llm_tool_loop', `${who}: more than ${o.maxToolRounds ?? 8} rounds of tool calls`, { rounds: toolRounds - 1 }, false);
      messages.push({ role: 'assistant', content: [...(text ? [{ type: 'text' as const, text }] : []), ...toolCalls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.toolCallId, toolName: c.toolName, input: safeJson(c.input) }))] });
      const results: LanguageModelV3ToolResultPart[] = [];
      for (const c of toolCalls) results.push(await runTool(o, ctx, offered, c.toolCallId, c.toolName, c.input));
      messages.push({ role: 'tool', content: results });
      continue;
    }

    if (text.trim() === '') {
      if (finish === 'length') throw llmError('llm_truncated', `${who}: the reply hit max_tokens (${o.settings.maxTokens}) before any text`, { max_tokens: o.settings.maxTokens, output_tokens: outTok }, false);
      throw llmError('llm_empty_reply', `${who}: the model returned an empty reply`, { call, finish_reason: finish }, true);
    }

    if (contract.mode === 'text') {
      if (finish === 'length') throw llmError('llm_truncated', `${who}: the reply was cut at max_tokens (${o.settings.maxTokens})`, { max_tokens: o.settings.maxTokens, output_tokens: outTok, text: text.slice(0, 2000) }, false);
      ctx.record('result', { result_text: text });
      return contract.key !== undefined ? textOutput(contract.key, text) : { result_text: text };
    }

    const parsed = parseAgentReply(text, contract.validate);
    if (parsed.ok) {
      if (parsed.repairs.length > 0) ctx.record('json_repair', { call, repairs: parsed.repairs, source: parsed.source });
      const data = parsed.value as JsonObject;
      ctx.record('result', { result_data: data });
      return outputOf(data);
    }
    if (finish === 'length') {
      if (retriesLeft > 0) {
        retriesLeft--;
        ctx.record('truncation_reprompt', { call, max_tokens: o.settings.maxTokens });
        messages.push({ role: 'assistant', content: [{ type: 'text', text }] });
        messages.push({ role: 'user', content: [{ type: 'text', text: truncationText(o.settings.maxTokens) }] });
        continue;
      }
      throw llmError('llm_truncated', `${who}: the reply was cut at max_tokens (${o.settings.maxTokens}) before the JSON was complete`, { max_tokens: o.settings.maxTokens, output_tokens: outTok, ...validationDetails(parsed.errors) }, false);
    }
    if (retriesLeft > 0) {
      retriesLeft--;
      ctx.record('output_reprompt', { call, ...validationDetails(parsed.errors) });
      messages.push({ role: 'assistant', content: [{ type: 'text', text }] });
      messages.push({ role: 'user', content: [{ type: 'text', text: repromptText(parsed.errors, contract.schema) }] });
      continue;
    }
    const first = parsed.errors[0];
    throw llmError(
      'output_schema_validation_failed',
      `${who}: output did not match the schema after ${maxRetries} ${maxRetries === 1 ? 'retry' : 'retries'}${first ? ` (${first.path}: ${first.message}${parsed.errors.length > 1 ? `, and ${parsed.errors.length - 1} more` : ''})` : ''}`,
      validationDetails(parsed.errors),
      true,
    );
  }
}

async function runTool(o: LlmAgentOptions, ctx: AgentContext, offered: readonly OfferedTool[], id: string, name: string, input: string): Promise<LanguageModelV3ToolResultPart> {
  const tool = offered.find((t) => t.name === name);
  const args = safeJson(input);
  if (!tool || !o.toolHost) {
    // never called: the model named a tool it was not offered
    ctx.record('tool_call_refused', { tool: name, arguments: isPlainObject(args) ? args : {}, reason: 'not offered to this agent' });
    return { type: 'tool-result', toolCallId: id, toolName: name, output: { type: 'error-text', value: `tool '${name}' is not available; use only the tools you were given` } };
  }
  const parsed = toolArguments(input);
  if (!parsed.ok) {
    // never run with the arguments dropped (a write_file called with {}): the model is told and may call again
    ctx.record('tool_call_refused', { tool: tool.ref, arguments: {}, reason: parsed.reason });
    return { type: 'tool-result', toolCallId: id, toolName: name, output: { type: 'error-text', value: `the tool was not called: ${parsed.reason}; call it again with a JSON object of arguments` } };
  }
  const started = o.now();
  const span = startToolSpan(ctx, name, tool.ref, id, parsed.value);
  try {
    const r = await o.toolHost.call(tool, parsed.value, ctx.signal);
    // a tool that answers megabytes would overflow the model's context (a rejected call, or a large bill):
    // the model gets the head and a note saying what was cut
    const bytes = Buffer.byteLength(r.text);
    const cap = o.maxToolResultBytes ?? DEFAULT_MAX_TOOL_RESULT_BYTES;
    const text = bytes > cap ? `${headOf(r.text, cap)}\n\n[cut by Baton: the tool returned ${bytes} bytes; only the first ${cap} are shown]` : r.text;
    endToolSpan(ctx, span, text, r.isError);
    ctx.record('tool_call', { tool: tool.ref, arguments: parsed.value, result_bytes: bytes, ...(bytes > cap ? { truncated_to_bytes: cap } : {}), is_error: r.isError, duration_ms: o.now() - started });
    return { type: 'tool-result', toolCallId: id, toolName: name, output: r.isError ? { type: 'error-text', value: text } : { type: 'text', value: text } };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    // a server's error (a JSON-RPC error) is in the tool's words, like a result: in the trace only with the content opt-in
    failSpan(span, e instanceof AgentError ? e.code : 'tool_error', e instanceof AgentError || ctx.trace?.captureContent === true ? message : toolFailure(e));
    if (e instanceof AgentError) throw e;
    ctx.record('tool_call', { tool: tool.ref, arguments: parsed.value, result_bytes: 0, is_error: true, error: message, duration_ms: o.now() - started });
    return { type: 'tool-result', toolCallId: id, toolName: name, output: { type: 'error-text', value: `the tool failed: ${message}` } };
  }
}

/** A failed tool call as a trace may say it without the content opt-in: the error's kind and JSON-RPC code. */
function toolFailure(e: unknown): string {
  const code = isPlainObject(e) || e instanceof Error ? (e as { code?: unknown }).code : undefined;
  return `the tool call failed (${e instanceof Error ? e.name : typeof e}${typeof code === 'number' || typeof code === 'string' ? ` ${code}` : ''})`;
}

/** The first `max` UTF-8 bytes of `text`, never half a character. */
function headOf(text: string, max: number): string {
  const buf = Buffer.from(text.slice(0, max), 'utf8');
  let end = Math.min(max, buf.length);
  // back up over continuation bytes (10xxxxxx) to the start of the character that would be split
  if (end < buf.length) while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** A tool call's arguments: a JSON object, or nothing at all (a tool without parameters). */
function toolArguments(input: string): { ok: true; value: JsonObject } | { ok: false; reason: string } {
  if (input.trim() === '') return { ok: true, value: {} };
  let v: unknown;
  try {
    v = JSON.parse(input);
  } catch {
    return { ok: false, reason: `its arguments are not valid JSON (${input.length > 200 ? `${input.slice(0, 200)}...` : input})` };
  }
  return isPlainObject(v) ? { ok: true, value: v as JsonObject } : { ok: false, reason: `its arguments are ${Array.isArray(v) ? 'a list' : v === null ? 'null' : `a ${typeof v}`}, not a JSON object` };
}

function safeJson(s: string): JsonObject {
  try {
    const v: unknown = JSON.parse(s);
    return isPlainObject(v) ? (v as JsonObject) : {};
  } catch {
    return {};
  }
}

export type { Contract };

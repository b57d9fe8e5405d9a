/**
 * The scripted provider: a real `LanguageModelV3` that plays replies from a file, per phase or per
 * agent, in order: text, tool calls, a finish reason, token usage, or an HTTP error (thrown as the
 * AI SDK's `APICallError`, exactly as a real provider would). The enforcement loop cannot tell it
 * from OpenAI or Anthropic, so tests and offline examples run the whole loop.
 *
 * File (YAML or JSON):
 *   structured_output: none | openai-strict | anthropic   # which native mode to pretend (default none)
 *   phases: { <phase>: [reply, ...] }                      # used first
 *   agents: { <agent>: [reply, ...] }
 * reply: { text?, tool_calls?: [{tool: mcp:server/tool | name, arguments}], finish?: stop|length|content-filter,
 *          usage?: {input, output}, error?: {status, message?, retry_after?} }
 */
import { readFileSync } from 'node:fs';
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Content, LanguageModelV3GenerateResult } from '@ai-sdk/provider';
import { isPlainObject, type JsonObject } from '../../core/json.js';
import { loadOptional } from '../../core/optional.js';
import { modelToolName } from './names.js';
import type { LlmProvider, StructuredOutput } from './provider.js';
import { parseYamlValue } from '../../workflow/source.js';

export interface ScriptedReply {
  text?: string | undefined;
  toolCalls?: { tool: string; arguments: JsonObject }[] | undefined;
  finish?: 'stop' | 'length' | 'content-filter' | undefined;
  usage?: { input: number; output: number } | undefined;
  error?: { status: number; message?: string; retryAfterS?: number } | undefined;
}

export interface Script {
  structuredOutput: StructuredOutput;
  phases: Record<string, ScriptedReply[]>;
  agents: Record<string, ScriptedReply[]>;
}

/** The options key carrying who is calling (ignored by real providers). */
export const SCRIPT_KEY = 'baton-scripted';

export type ScriptResult = { ok: true; script: Script } | { ok: false; message: string };

export function loadScript(path: string): ScriptResult {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    return { ok: false, message: `cannot read replies file ${path}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}` };
  }
  let raw: unknown;
  try {
    raw = parseYamlValue(text);
  } catch (e) {
    return { ok: false, message: `${path}: not YAML or JSON (${(e as Error).message.split('\n')[0]})` };
  }
  return parseScript(raw, path);
}

export function parseScript(raw: unknown, where = 'replies'): ScriptResult {
  if (!isPlainObject(raw)) return { ok: false, message: `${where}: expected a mapping with \`phases:\` or \`agents:\`` };
  const so = raw['structured_output'] ?? 'none';
  if (so !== 'none' && so !== 'openai-strict' && so !== 'anthropic') return { ok: false, message: `${where}: structured_output must be none, openai-strict or anthropic` };
  const lists: Record<'phases' | 'agents', Record<string, ScriptedReply[]>> = { phases: {}, agents: {} };
  for (const section of ['phases', 'agents'] as const) {
    const s = raw[section];
    if (s === undefined || s === null) continue;
    if (!isPlainObject(s)) return { ok: false, message: `${where}: \`${section}\` must map names to lists of replies` };
    for (const [name, list] of Object.entries(s)) {
      if (!Array.isArray(list)) return { ok: false, message: `${where}: ${section}.${name} must be a list of replies` };
      const replies: ScriptedReply[] = [];
      for (const [i, r] of list.entries()) {
        const parsed = parseReply(r);
        if (typeof parsed === 'string') return { ok: false, message: `${where}: ${section}.${name}[${i}]: ${parsed}` };
        replies.push(parsed);
      }
      lists[section][name] = replies;
    }
  }
  return { ok: true, script: { structuredOutput: so, phases: lists.phases, agents: lists.agents } };
}

function parseReply(r: unknown): ScriptedReply | string {
  if (typeof r === 'string') return { text: r };
  if (!isPlainObject(r)) return 'a reply is a string or a mapping';
  const out: ScriptedReply = {};
  if (r['text'] !== undefined) {
    if (typeof r['text'] === 'string') out.text = r['text'];
    else out.text = JSON.stringify(r['text']); // a YAML mapping written as the reply: its JSON text
  }
  if (r['tool_calls'] !== undefined) {
    if (!Array.isArray(r['tool_calls'])) return '`tool_calls` must be a list';
    out.toolCalls = [];
    for (const c of r['tool_calls']) {
      if (!isPlainObject(c) || typeof c['tool'] !== 'string') return 'each tool call needs `tool` (mcp:server/tool)';
      out.toolCalls.push({ tool: c['tool'], arguments: isPlainObject(c['arguments']) ? (c['arguments'] as JsonObject) : {} });
    }
  }
  const f = r['finish'];
  if (f !== undefined) {
    if (f !== 'stop' && f !== 'length' && f !== 'content-filter') return '`finish` must be stop, length or content-filter';
    out.finish = f;
  }
  const u = r['usage'];
  if (isPlainObject(u) && typeof u['input'] === 'number' && typeof u['output'] === 'number') out.usage = { input: u['input'], output: u['output'] };
  const e = r['error'];
  if (e !== undefined) {
    if (!isPlainObject(e) || typeof e['status'] !== 'number') return '`error` needs a numeric `status`';
    out.error = { status: e['status'], ...(typeof e['message'] === 'string' ? { message: e['message'] } : {}), ...(typeof e['retry_after'] === 'number' ? { retryAfterS: e['retry_after'] } : {}) };
  }
  if (out.text === undefined && out.toolCalls === undefined && out.error === undefined && out.finish === undefined) return 'a reply needs `text`, `tool_calls`, `error` or `finish`';
  return out;
}

/** A scripted model over one script. Its cursors live here: one model per run plays each list once. */
export class ScriptedModel {
  readonly specificationVersion = 'v3' as const;
  readonly provider = 'scripted';
  readonly modelId: string;
  readonly supportedUrls = {};
  /** @internal Every call's options, in order (tests read the prompts, tools and response formats). */
  readonly calls: LanguageModelV3CallOptions[] = [];
  private readonly cursors = new Map<string, number>();

  constructor(
    private readonly script: Script,
    modelId = 'scripted',
  ) {
    this.modelId = modelId;
  }

  /** @internal (typed by `@ai-sdk/provider`, which the published types do not name) */
  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    this.calls.push(options);
    const who = options.providerOptions?.[SCRIPT_KEY] ?? {};
    const phase = typeof who['phase'] === 'string' ? who['phase'] : '';
    const agent = typeof who['agent'] === 'string' ? who['agent'] : '';
    const key = this.script.phases[phase] ? `phase:${phase}` : `agent:${agent}`;
    const list = this.script.phases[phase] ?? this.script.agents[agent];
    if (!list) throw new ScriptExhaustedError(`the replies file has no replies for phase '${phase}' or agent '${agent}'`);
    const i = this.cursors.get(key) ?? 0;
    const reply = list[i];
    if (!reply) throw new ScriptExhaustedError(`the replies file has ${list.length} ${list.length === 1 ? 'reply' : 'replies'} for ${key.replace(':', " '")}', and call ${i + 1} asked for another`);
    this.cursors.set(key, i + 1);
    if (reply.error) {
      const headers: Record<string, string> = reply.error.retryAfterS !== undefined ? { 'retry-after': String(reply.error.retryAfterS) } : {};
      // the AI SDK's own error class, loaded only when a script plays an HTTP error
      const { APICallError } = await loadOptional('@ai-sdk/provider', 'LLM agents', () => import('@ai-sdk/provider'));
      throw new APICallError({
        message: reply.error.message ?? `scripted HTTP ${reply.error.status}`,
        url: 'scripted://',
        requestBodyValues: {},
        statusCode: reply.error.status,
        responseHeaders: headers,
        isRetryable: reply.error.status === 429 || reply.error.status >= 500,
      });
    }
    const content: LanguageModelV3Content[] = [];
    if (reply.text !== undefined) content.push({ type: 'text', text: reply.text });
    for (const [n, c] of (reply.toolCalls ?? []).entries()) {
      content.push({ type: 'tool-call', toolCallId: `call_${i}_${n}`, toolName: modelToolName(c.tool), input: JSON.stringify(c.arguments) });
    }
    const inputChars = JSON.stringify(options.prompt).length;
    const outputChars = (reply.text ?? '').length + JSON.stringify(reply.toolCalls ?? []).length;
    const usage = reply.usage ?? { input: Math.ceil(inputChars / 4), output: Math.ceil(outputChars / 4) };
    const finish = reply.finish ?? (reply.toolCalls?.length ? 'tool-calls' : 'stop');
    return {
      content,
      finishReason: { unified: finish, raw: finish },
      usage: { inputTokens: { total: usage.input, noCache: usage.input, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: usage.output, text: usage.output, reasoning: undefined } },
      warnings: [],
    };
  }

  doStream(): never {
    throw new Error('the scripted provider does not stream (Baton calls doGenerate)');
  }
}

/** The script ran out: a test or example asked for more calls than it scripted. */
export class ScriptExhaustedError extends Error {
  override readonly name = 'ScriptExhaustedError';
}

export function scriptedProvider(script: Script, modelId?: string): LlmProvider & { model: ScriptedModel } {
  // still an AI SDK LanguageModelV3 (checked here: the class does not name the interface in the published types)
  const model: ScriptedModel & LanguageModelV3 = new ScriptedModel(script, modelId);
  return { name: 'scripted', model, structuredOutput: script.structuredOutput };
}

/**
 * The failure codes of LLM agents (docs/llm-agents.md lists them). Each is an AgentError with a
 * stable `code` and a `retryable` flag the phase's retry policy reads: rate limits and transport
 * errors are retryable, a refusal or a bad key is not.
 */
import type { APICallError } from '@ai-sdk/provider';
import { BatonError } from '../../core/errors.js';
import { AgentError } from '../../engine/agent.js';
import type { SchemaError } from '../../workflow/json-schema.js';
import { ScriptExhaustedError } from './scripted.js';

export const LLM_FAILURE_CODES = [
  'output_schema_validation_failed',
  'parameters_schema_validation_failed',
  'llm_refusal',
  'llm_empty_reply',
  'llm_truncated',
  'llm_rate_limited',
  'llm_transport_error',
  'llm_auth_failed',
  'llm_request_rejected',
  'llm_budget_exceeded',
  'llm_token_budget_exceeded',
  'llm_missing_key',
  'llm_config_invalid',
  'llm_script_exhausted',
  'llm_tool_loop',
  'mcp_server_failed',
] as const;

export type LlmFailureCode = (typeof LLM_FAILURE_CODES)[number];

export function llmError(code: LlmFailureCode, message: string, details: Record<string, unknown>, retryable: boolean): AgentError {
  return new AgentError(code, message, details, retryable);
}

/** Errors an event or a failure keeps (the count says how many there were): a stored event stays small. */
export const RECORDED_MAX_ERRORS = 100;

/** `validation_errors` in the spec's form (`$.severity: 'critical' is not one of [...]`), plus the structured list; the first RECORDED_MAX_ERRORS, with `error_count`. */
export function validationDetails(errors: readonly SchemaError[]): Record<string, unknown> {
  const kept = errors.slice(0, RECORDED_MAX_ERRORS);
  return { validation_errors: kept.map((e) => `${e.path}: ${e.message}`), errors: kept.map((e) => ({ ...e })), ...(errors.length > kept.length ? { error_count: errors.length } : {}) };
}

/** Milliseconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(headers: Record<string, string> | undefined, now: number): number | undefined {
  if (!headers) return undefined;
  const get = (k: string): string | undefined => headers[k] ?? Object.entries(headers).find(([h]) => h.toLowerCase() === k)?.[1];
  const ms = get('retry-after-ms');
  if (ms !== undefined && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const ra = get('retry-after');
  if (ra === undefined) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(ra)) return Math.max(0, Number(ra) * 1000);
  const at = Date.parse(ra);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** The `error.message` (or `error` string) of a JSON error body, cut to 500 characters. */
function errorMessageOf(body: string | undefined): string | undefined {
  if (body === undefined || !body.includes('error')) return undefined;
  try {
    const v: unknown = JSON.parse(body);
    const err = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)['error'] : undefined;
    const msg = typeof err === 'string' ? err : typeof err === 'object' && err !== null ? (err as Record<string, unknown>)['message'] : undefined;
    return typeof msg === 'string' && msg.trim() !== '' ? msg.slice(0, 500) : undefined;
  } catch {
    return undefined;
  }
}

/** OpenAI's `{"error": {"code": "insufficient_quota"}}` (also as `type`): billing, not a rate. */
function quotaExhausted(body: string | undefined): boolean {
  if (body === undefined || !body.includes('insufficient_quota')) return false;
  try {
    const v: unknown = JSON.parse(body);
    const err = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)['error'] : undefined;
    if (typeof err !== 'object' || err === null) return false;
    const { code, type } = err as Record<string, unknown>;
    return code === 'insufficient_quota' || type === 'insufficient_quota';
  } catch {
    return false;
  }
}

/**
 * The AI SDK's `APICallError.isInstance`, without loading the SDK: its errors carry a marker symbol
 * (so the check also holds across two copies of the package).
 */
function isApiCallError(e: unknown): e is APICallError {
  const marker = Symbol.for('vercel.ai.error.AI_APICallError');
  return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[marker] === true;
}

/** A provider call's exception as a run failure. */
export function providerFailure(e: unknown, who: string, now: number): AgentError {
  if (isApiCallError(e)) {
    const status = e.statusCode;
    const base = { status: status ?? null, url: e.url, ...(e.responseBody ? { response: e.responseBody.slice(0, 2000) } : {}) };
    const after = retryAfterMs(e.responseHeaders, now);
    const afterText = after !== undefined ? ` (retry after ${Math.ceil(after / 1000)} s)` : '';
    const afterDetail = after !== undefined ? { retry_after_ms: after } : {};
    if (status === 429) {
      // OpenAI answers an account with no credit left with a 429 too: waiting does not help, paying does
      if (quotaExhausted(e.responseBody)) return llmError('llm_request_rejected', `${who}: the provider refused the request: the account's quota is used up (HTTP 429 insufficient_quota): ${e.message}`, { ...base, quota_exhausted: true }, false);
      return llmError('llm_rate_limited', `${who}: rate limited by the provider${afterText}: ${e.message}`, { ...base, ...afterDetail }, true);
    }
    // the provider's words say which: a wrong key (401), or a key without access to this model or region (403)
    if (status === 401 || status === 403) return llmError('llm_auth_failed', `${who}: the provider refused ${status === 401 ? 'the API key' : 'the request with this API key'} (HTTP ${status}): ${e.message}`, base, false);
    if (status === undefined) return llmError('llm_transport_error', `${who}: ${e.message}`, base, true);
    // the status leads: the provider's own text (`Overloaded`, `boom`) alone does not say a server failed
    // a 503 or 529 (overloaded) may say when to come back: the waits inside the attempt and the phase's retry respect it
    if (status >= 500 || status === 408) return llmError('llm_transport_error', `${who}: the provider answered HTTP ${status}${afterText}: ${e.message}`, { ...base, ...afterDetail }, true);
    // a 2xx whose body could not be read (not JSON, cut off): a broken proxy or server, not a refusal of the request
    if (status >= 200 && status < 300) {
      // Baton asks for one whole reply; a server (or proxy) that streams regardless is named as such
      const type = Object.entries(e.responseHeaders ?? {}).find(([h]) => h.toLowerCase() === 'content-type')?.[1] ?? '';
      const streamed = /text\/event-stream/i.test(type) || /^\s*(data|event):/.test(e.responseBody ?? '');
      // some gateways (OpenRouter, LiteLLM) answer an upstream failure as HTTP 200 with `{"error": {...}}`: its message is the news
      const said = streamed ? undefined : errorMessageOf(e.responseBody);
      const why = streamed ? 'an event stream (streaming), where Baton asks for one whole reply (`stream: false`): the server at the base URL ignores that' : said !== undefined ? `an error instead of a reply: ${said}` : `a body that is not a valid reply: ${e.message}`;
      return llmError('llm_transport_error', `${who}: the provider answered HTTP ${status} with ${why}`, { ...base, ...(streamed ? { streamed: true } : {}) }, true);
    }
    // a 404 is a model the provider does not have (`The model \`gpt-9\` does not exist`, Ollama's `model "x" not
    // found, try pulling it first`): the base URL was right, so the hint below would send the user the wrong way
    const said = errorMessageOf(e.responseBody);
    if (status === 404 && said !== undefined && /\bmodel\b/i.test(said)) return llmError('llm_request_rejected', `${who}: the provider answered HTTP 404: ${said} (check llm.model)`, base, false);
    // else most often a base URL without its version path (`http://host:11434` for `http://host:11434/v1`)
    if (status === 404) return llmError('llm_request_rejected', `${who}: the provider answered HTTP 404 for ${e.url}: ${e.message} (check llm.x-base_url or the provider's *_BASE_URL: it usually ends in /v1)`, base, false);
    return llmError('llm_request_rejected', `${who}: the provider rejected the request (HTTP ${status}): ${e.message}`, base, false);
  }
  if (e instanceof ScriptExhaustedError) return llmError('llm_script_exhausted', `${who}: ${e.message}`, {}, false);
  if (e instanceof BatonError && e.code === 'missing-package') return llmError('llm_config_invalid', `${who}: ${e.message}`, {}, false);
  if (e instanceof AgentError) return e;
  const msg = e instanceof Error ? e.message : String(e);
  // a body that is not JSON, or not the shape the provider's protocol has (AI_JSONParseError, AI_TypeValidationError)
  const name = e instanceof Error ? e.name : '';
  if (name === 'AI_JSONParseError' || name === 'AI_TypeValidationError') return llmError('llm_transport_error', `${who}: the provider's reply is not a valid response: ${msg.slice(0, 500)}`, {}, true);
  // fetch failures (connection refused, reset, DNS) arrive as TypeError or AI SDK wrappers without a status
  return llmError('llm_transport_error', `${who}: ${msg}`, {}, true);
}

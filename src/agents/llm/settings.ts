/**
 * The model settings of one LLM agent: spec defaults, then the workflow's `llm` block, then the
 * blueprint's `llm` overrides. Provider defaults follow the spec's provider table.
 */
import { MAX_TIMER_MS } from '../../core/clock.js';
import { isPlainObject, type JsonObject } from '../../core/json.js';
import { llmSetting } from '../../workflow/blueprint.js';
import type { Blueprint, WorkflowModel } from '../../workflow/model.js';

export interface LlmSettings {
  /** openai | anthropic | openai-compatible | env | scripted */
  provider: string;
  /** undefined: the provider's default model. */
  model: string | undefined;
  temperature: number;
  maxTokens: number;
  /** The workflow's global system prompt, then the blueprint's. */
  systemPrompt: string;
  /** `x-base_url`: where the provider listens (openai-compatible servers, proxies, tests). */
  baseUrl: string | undefined;
  /** `x-replies`: the scripted provider's replies file (also the offline fallback of `provider: env`). */
  replies: string | undefined;
  /** `x-structured_outputs`: an openai-compatible server that supports strict JSON schema. */
  structuredOutputs: boolean;
  /** `x-prices`, raw. */
  prices: unknown;
  /** `x-request_timeout_ms`: how long one model call may go unanswered before it counts as a transport failure. */
  requestTimeoutMs: number;
  /** `x-transport_retries`: transport failures (no answer, reset, a body that is not JSON) retried within an attempt. */
  transportRetries: number;
}

/** Five minutes: a long structured reply fits; a provider that accepted the connection and went silent does not hold a run forever. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 300_000;
export const DEFAULT_TRANSPORT_RETRIES = 2;

export const DEFAULT_MODELS: Readonly<Record<string, string>> = {
  openai: 'gpt-5.2',
  anthropic: 'claude-sonnet-4-20250514',
  env: 'gpt-5.2',
};

export function resolveSettings(workflow: WorkflowModel, blueprint: Blueprint | undefined): LlmSettings {
  const base: JsonObject = workflow.llm ?? {};
  const over: JsonObject = blueprint?.llm ?? {};
  // a blueprint naming another provider keeps none of the workflow's model, base URL or structured-output flag
  const pick = (k: string): unknown => llmSetting(over, base, k);
  const str = (k: string): string | undefined => {
    const v = pick(k);
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const num = (k: string): number | undefined => {
    const v = pick(k);
    return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
  };
  const systemPrompt = [typeof base['system_prompt'] === 'string' ? base['system_prompt'] : '', typeof over['system_prompt'] === 'string' ? over['system_prompt'] : '', blueprint?.systemPrompt ?? '']
    .filter((s) => s.trim() !== '')
    .join('\n\n');
  const prices = isPlainObject(base['x-prices']) || isPlainObject(over['x-prices']) ? { ...(isPlainObject(base['x-prices']) ? base['x-prices'] : {}), ...(isPlainObject(over['x-prices']) ? over['x-prices'] : {}) } : undefined;
  return {
    provider: str('provider') ?? 'openai',
    model: str('model'),
    temperature: num('temperature') ?? 0.7,
    maxTokens: num('max_tokens') ?? 4096,
    systemPrompt,
    baseUrl: str('x-base_url'),
    replies: str('x-replies'),
    structuredOutputs: pick('x-structured_outputs') === true,
    prices,
    // validated at load (1 to setTimeout's limit); clamped here too, for a model built another way
    requestTimeoutMs: Math.min(MAX_TIMER_MS, positive(num('x-request_timeout_ms')) ?? DEFAULT_REQUEST_TIMEOUT_MS),
    transportRetries: Math.min(10, Math.floor(nonNegative(num('x-transport_retries')) ?? DEFAULT_TRANSPORT_RETRIES)),
  };
}

function positive(n: number | undefined): number | undefined {
  return n !== undefined && n > 0 ? n : undefined;
}

function nonNegative(n: number | undefined): number | undefined {
  return n !== undefined && n >= 0 ? n : undefined;
}

/**
 * Providers through the Vercel AI SDK 6: `openai` (Chat Completions, strict JSON schema), `anthropic`
 * (Messages API; JSON via output format or tool use), `openai-compatible` (Ollama, vLLM, LM Studio...),
 * `env` (whichever key is set), and `scripted` (a replies file). Keys come from the environment only.
 * Each provider's package is an optional peer dependency, imported when an agent first uses it.
 */
import { resolve } from 'node:path';
import { loadOptional } from '../../core/optional.js';
import { llmError } from './failures.js';
import type { LlmProvider } from './provider.js';
import { loadScript, scriptedProvider } from './scripted.js';
import { DEFAULT_MODELS, type LlmSettings } from './settings.js';

export const PROVIDERS = ['openai', 'anthropic', 'openai-compatible', 'env', 'scripted'] as const;

export interface ProviderDeps {
  env: Readonly<Record<string, string | undefined>>;
  /** Where relative `x-replies` paths are read from (the workflow's folder). */
  cwd: string;
  /** A replies file that replaces every provider (`--replies`). */
  replies?: string;
  /** For tests: the fetch the SDK uses. */
  fetch?: typeof globalThis.fetch;
  /** Scripted providers by replies file: one per file and run, so each list is played once. */
  scripts: Map<string, LlmProvider>;
  /** Told when `provider: env` falls back to the replies file. */
  note?: (message: string) => void;
}

export async function makeProvider(s: LlmSettings, deps: ProviderDeps): Promise<LlmProvider> {
  if (deps.replies !== undefined) return scripted(resolve(deps.cwd, deps.replies), s.model, deps);
  switch (s.provider) {
    case 'openai':
      return openai(s, deps, s.model ?? DEFAULT_MODELS['openai']!);
    case 'anthropic':
      return anthropic(s, deps, s.model ?? DEFAULT_MODELS['anthropic']!);
    case 'openai-compatible':
      return compatible(s, deps);
    case 'scripted':
      if (s.replies === undefined) throw llmError('llm_config_invalid', '`provider: scripted` needs `x-replies: FILE` (or run with --replies FILE)', {}, false);
      return scripted(resolve(deps.cwd, s.replies), s.model, deps);
    case 'env': {
      if (deps.env['OPENAI_API_KEY']) return openai(s, deps, s.model ?? DEFAULT_MODELS['env']!);
      if (deps.env['ANTHROPIC_API_KEY']) return anthropic(s, deps, s.model && !s.model.startsWith('gpt-') ? s.model : DEFAULT_MODELS['anthropic']!);
      if (s.replies !== undefined) {
        deps.note?.(`provider env: neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set; playing replies from ${s.replies}`);
        return scripted(resolve(deps.cwd, s.replies), s.model, deps);
      }
      throw llmError('llm_missing_key', '`provider: env` found neither OPENAI_API_KEY nor ANTHROPIC_API_KEY in the environment', {}, false);
    }
    default:
      throw llmError('llm_config_invalid', `unknown llm provider \`${s.provider}\` (use ${PROVIDERS.join(', ')})`, { provider: s.provider }, false);
  }
}

function key(deps: ProviderDeps, name: string): string {
  const k = deps.env[name];
  if (!k) throw llmError('llm_missing_key', `${name} is not set`, { variable: name }, false);
  return k;
}

async function openai(s: LlmSettings, deps: ProviderDeps, model: string): Promise<LlmProvider> {
  const baseURL = s.baseUrl ?? deps.env['OPENAI_BASE_URL'];
  const apiKey = key(deps, 'OPENAI_API_KEY');
  const { createOpenAI } = await loadOptional('@ai-sdk/openai', 'The openai provider', () => import('@ai-sdk/openai'));
  const p = createOpenAI({ apiKey, ...(baseURL ? { baseURL } : {}), ...(deps.fetch ? { fetch: deps.fetch } : {}) });
  return { name: 'openai', model: p.chat(model), structuredOutput: 'openai-strict', nativeOptions: () => ({ openai: { strictJsonSchema: true } }) };
}

async function anthropic(s: LlmSettings, deps: ProviderDeps, model: string): Promise<LlmProvider> {
  const baseURL = s.baseUrl ?? deps.env['ANTHROPIC_BASE_URL'];
  const apiKey = key(deps, 'ANTHROPIC_API_KEY');
  const { createAnthropic } = await loadOptional('@ai-sdk/anthropic', 'The anthropic provider', () => import('@ai-sdk/anthropic'));
  const p = createAnthropic({ apiKey, ...(baseURL ? { baseURL } : {}), ...(deps.fetch ? { fetch: deps.fetch } : {}) });
  return { name: 'anthropic', model: p(model), structuredOutput: 'anthropic' };
}

async function compatible(s: LlmSettings, deps: ProviderDeps): Promise<LlmProvider> {
  const baseURL = s.baseUrl ?? deps.env['OPENAI_COMPATIBLE_BASE_URL'];
  if (!baseURL) throw llmError('llm_config_invalid', '`provider: openai-compatible` needs `x-base_url` (e.g. http://localhost:11434/v1) or OPENAI_COMPATIBLE_BASE_URL', {}, false);
  if (!s.model) throw llmError('llm_config_invalid', '`provider: openai-compatible` needs `model`', {}, false);
  const apiKey = deps.env['OPENAI_COMPATIBLE_API_KEY'];
  const { createOpenAICompatible } = await loadOptional('@ai-sdk/openai-compatible', 'The openai-compatible provider', () => import('@ai-sdk/openai-compatible'));
  const p = createOpenAICompatible({
    name: 'openai-compatible',
    baseURL,
    ...(apiKey ? { apiKey } : {}),
    supportsStructuredOutputs: s.structuredOutputs,
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
  });
  return { name: 'openai-compatible', model: p.chatModel(s.model), structuredOutput: s.structuredOutputs ? 'openai-strict' : 'none' };
}

function scripted(path: string, model: string | undefined, deps: ProviderDeps): LlmProvider {
  const hit = deps.scripts.get(path);
  if (hit) return hit;
  const r = loadScript(path);
  if (!r.ok) throw llmError('llm_config_invalid', r.message, { file: path }, false);
  const p = scriptedProvider(r.script, model ?? 'scripted');
  deps.scripts.set(path, p);
  return p;
}

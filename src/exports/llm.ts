/// <reference types="node" preserve="true" />
/**
 * `@baton-run/baton/llm`: LLM agents whose output Baton enforces. Each provider's package is an
 * optional peer dependency imported when an agent first uses it: `@ai-sdk/openai`,
 * `@ai-sdk/anthropic`, `@ai-sdk/openai-compatible` (and `@ai-sdk/provider` for the types and the
 * scripted provider's HTTP errors). A workflow with blueprints runs through the core's engine,
 * which loads these modules itself; this entry is for binding and testing LLM agents directly.
 */

/** Binding agents to models for a run (blueprints, `--llm`, `--llm-agents`). */
export { bindLlmAgents, llmAgentIds, type LlmBindOptions, type LlmBinding } from '../agents/llm/bind.js';
/** One LLM agent: the enforcement loop (structured output, extraction, repair, re-prompts, tools, cost). */
export { llmAgent, type LlmAgentOptions } from '../agents/llm/agent.js';
/** Providers by name, resolved lazily (a missing key or package fails that agent's attempt). */
export { makeProvider, PROVIDERS, type ProviderDeps } from '../agents/llm/providers.js';
export type { LlmSettings } from '../agents/llm/settings.js';
export type { LlmProvider, LanguageModelLike, StructuredOutput } from '../agents/llm/provider.js';
/** The scripted provider: replies from a file, for tests and offline examples. */
export { scriptedProvider, parseScript, loadScript, ScriptedModel, type Script, type ScriptedReply, type ScriptResult } from '../agents/llm/scripted.js';
/** Prices per model and the failure codes of LLM agents. */
export { DEFAULT_PRICES, type PriceTable, type ModelPrice } from '../agents/llm/pricing.js';
export { LLM_FAILURE_CODES, type LlmFailureCode } from '../agents/llm/failures.js';

/**
 * Binding LLM agents for a run: which agents run on a model (a blueprint, `--llm AGENT`, or
 * `--llm-agents` for every agent left unbound), their provider (resolved lazily, so a missing key
 * fails that agent's attempt, not the run's start), one MCP tool host and one scripted model per
 * replies file, shared by the run and closed with it.
 */
import { resolve } from 'node:path';
import { systemClock, type Clock } from '../../core/clock.js';
import { BatonError } from '../../core/errors.js';
import { AgentError, type AgentHandler } from '../../engine/agent.js';
import { SchemaCompiler } from '../../workflow/json-schema.js';
import { SourceFile } from '../../diagnostics/source.js';
import { parseYamlSource } from '../../workflow/source.js';
import type { WorkflowModel } from '../../workflow/model.js';
import { llmAgent } from './agent.js';
import { InFlightCosts } from './in-flight.js';
import { McpHost } from './mcp.js';
import { DEFAULT_PRICES, pricesFromConfig, type PriceTable } from './pricing.js';
import type { LlmProvider } from './provider.js';
import { makeProvider, type ProviderDeps } from './providers.js';
import { loadScript } from './scripted.js';
import { resolveSettings } from './settings.js';
export { llmAgentIds, referencedAgents } from './ids.js';

export interface LlmBindOptions {
  /** Agents run on a model even without a blueprint (`--llm AGENT`). */
  agents?: readonly string[] | undefined;
  /** Every agent still unbound runs on a model (`--llm-agents`). */
  allUnbound?: boolean | undefined;
  /** A replies file that replaces every provider (`--replies FILE`), relative to `cwd`. */
  replies?: string | undefined;
  /** Environment for keys and `${VAR}` (default: process.env). */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** The workflow's folder: relative `x-replies` and MCP servers' working directory. */
  cwd?: string | undefined;
  /** Price overrides per model, merged over the defaults and `llm.x-prices`. */
  prices?: PriceTable | undefined;
  clock?: Clock | undefined;
  /** For tests: the fetch the provider SDKs use. */
  fetch?: typeof globalThis.fetch | undefined;
  /** Told about choices a user should see (e.g. `provider: env` playing a replies file). */
  onNote?: ((message: string) => void) | undefined;
}

export interface LlmBinding {
  /** Handlers by agent id (only the agents bound here). */
  readonly handlers: Readonly<Record<string, AgentHandler>>;
  /** Stops the MCP servers started for the run. */
  close(): Promise<void>;
}

export function bindLlmAgents(model: WorkflowModel, ids: readonly string[], o: LlmBindOptions = {}): LlmBinding {
  const env = o.env ?? process.env;
  const cwd = o.cwd ?? process.cwd();
  const clock = o.clock ?? systemClock;
  if (o.replies !== undefined) {
    // read the replies file now: a bad file is a usage error before anything runs
    const r = loadScript(resolve(cwd, o.replies));
    if (!r.ok) throw new BatonError('usage', r.message);
  }
  const noted = new Set<string>();
  const note = o.onNote ? (m: string): void => void (noted.has(m) || (noted.add(m), o.onNote!(m))) : undefined;
  const deps: ProviderDeps = { env, cwd, scripts: new Map(), ...(o.replies !== undefined ? { replies: o.replies } : {}), ...(o.fetch ? { fetch: o.fetch } : {}), ...(note ? { note } : {}) };
  const compiler = new SchemaCompiler();
  const ms = (name: string): number | undefined => {
    const n = Number(env[name]);
    return env[name] !== undefined && Number.isFinite(n) && n > 0 ? n : undefined;
  };
  const startTimeoutMs = ms('BATON_MCP_START_TIMEOUT_MS');
  const callTimeoutMs = ms('BATON_MCP_CALL_TIMEOUT_MS');
  const maxToolResultBytes = ms('BATON_MCP_MAX_RESULT_BYTES');
  const host = model.mcp && Object.keys(model.mcp.servers).length > 0 ? new McpHost({ servers: model.mcp.servers, env, cwd, ...(startTimeoutMs ? { startTimeoutMs } : {}), ...(callTimeoutMs ? { callTimeoutMs } : {}) }) : undefined;
  const handlers: Record<string, AgentHandler> = {};
  const inFlight = new InFlightCosts();
  for (const id of ids) {
    const decl = model.agents?.[id];
    const bp = decl?.blueprint;
    const settings = resolveSettings(model, bp);
    const prices: PriceTable = { ...DEFAULT_PRICES, ...pricesFromConfig(settings.prices), ...(o.prices ?? {}) };
    let provider: Promise<LlmProvider> | undefined;
    const tools = bp?.tools.length ? bp.tools : (decl?.tools ?? []);
    handlers[id] = llmAgent({
      workflow: model,
      agentId: id,
      blueprint: bp,
      settings,
      // one provider per agent; a failure to make it (a missing key or package) is not kept, so the next attempt tries again
      provider: () =>
        (provider ??= makeProvider(settings, deps).catch((e: unknown) => {
          provider = undefined;
          throw e instanceof AgentError && e.code === 'llm_missing_key' ? withPlace(e, model, id, settings.provider) : e;
        })),
      compiler,
      prices,
      ...(tools.length > 0 ? { tools } : {}),
      ...(host ? { toolHost: host } : {}),
      ...(maxToolResultBytes ? { maxToolResultBytes: Math.floor(maxToolResultBytes) } : {}),
      sleep: (ms, signal) => clock.sleep(ms, signal),
      now: () => clock.now(),
      inFlight,
    });
  }
  return {
    handlers,
    close: async () => {
      await host?.close();
    },
  };
}

/**
 * A missing key, with where its provider was chosen (`llm.provider: openai at workflow.yaml:5:13`), or that no
 * provider was named (the spec's default is openai): the user is sent to the line to change, or the variable to set.
 */
function withPlace(e: AgentError, model: WorkflowModel, id: string, provider: string): AgentError {
  const own = model.agents?.[id]?.blueprint?.llm['provider'];
  const wf = model.llm?.['provider'];
  const path = typeof own === 'string' && own !== '' ? ['agents', id, 'llm', 'provider'] : typeof wf === 'string' && wf !== '' ? ['llm', 'provider'] : undefined;
  if (path === undefined) return new AgentError(e.code, `${e.message} (no llm.provider is set: the default is openai)`, { ...e.details, provider }, e.retryable);
  let at = '';
  if (model.sourceText !== undefined) {
    try {
      const range = parseYamlSource(model.sourceText).locate(path);
      const { line, column } = new SourceFile(model.file, model.sourceText).position(range[0]);
      at = ` at ${model.file}:${line}:${column}`;
    } catch {
      // positions are a courtesy: a text that no longer parses keeps the message without one
    }
  }
  return new AgentError(e.code, `${e.message} (${path.join('.')}: ${provider}${at})`, { ...e.details, provider, path: path.join('.') }, e.retryable);
}

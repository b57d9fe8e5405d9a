/**
 * The workflow model (IR): what the compiler produces and the engine consumes. Plain data plus
 * compiled types; every field already checked, defaults applied.
 */
import type { Json, JsonObject } from '../core/json.js';
import type { CompiledType, TypeRegistry } from '../types/api.js';
import type { AgentContract } from './contract/model.js';
import type { Expression } from './expr.js';

export interface WorkflowModel {
  /** The file name the workflow came from (for messages). */
  file: string;
  /** The source text it was compiled from (kept with every run: a run keeps the workflow it started with). */
  sourceText?: string;
  openintent: string;
  info: { name: string; version: string; description?: string };
  governance: Governance;
  /** Declared agents, or undefined when the document has no `agents` section. */
  agents: Record<string, AgentDecl> | undefined;
  llm: Record<string, Json> | undefined;
  types: TypeRegistry;
  /** Phases in document order. */
  phases: PhaseModel[];
  /** Phase lookup by name. */
  byName: Map<string, PhaseModel>;
  /** A topological order of phase names (stable: document order among ready phases). */
  order: string[];
  /** Top-level `x-` extension keys. */
  extensions: Record<string, Json>;
  /** The trigger's type (`x-trigger`): checked at start, and the type of `$trigger.*` inputs. Undefined: any JSON. */
  trigger?: CompiledType;
  /** The `mcp` section's tool servers (undefined when the document has none). */
  mcp?: McpConfig;
  /**
   * Which form the file was written in: `openintent` (Workflow YAML 1.0) or `steps` (the agent-contract
   * spec's `workflow: {name, version, steps}`). Both compile to this same model.
   */
  form: WorkflowForm;
  /** `$store` targets (step form): where each stored output sits in the run's `artifacts` tree. Empty in the 1.0 form. */
  artifacts: ArtifactTarget[];
}

export type WorkflowForm = 'openintent' | 'steps';

/** One segment of an artifact path: a name, or `{$item.a.b}` (a fan-out item's value, filled in per item). */
export type ArtifactSegment = string | { item: string[] };

/** `outputs: {draft: {$store: "artifacts.drafts.{$item.name}"}}`: phase `draft-sections`, key `draft`, path `drafts.{$item.name}`. */
export interface ArtifactTarget {
  phase: string;
  key: string;
  /** Segments after `artifacts.`. */
  path: ArtifactSegment[];
  /** The target as written. */
  text: string;
}

/** An AIP-16 file contract entry (`inputsFiles.<key>` / `outputsFiles.<key>`). */
export interface FileEntry {
  /** A single file name: the file sits at `<fsRoot>/<key>` while the agent runs. */
  key: string;
  /** Workspace-relative; may hold tokens (`<runId>`, `<phase>`, ...) replaced in one pass. */
  path: string;
  mode?: 'ro' | 'rw';
  contentType?: string;
}

/** Files a phase or an agent declares (AIP-16). Empty lists when none. */
export interface FileContract {
  inputs: FileEntry[];
  outputs: FileEntry[];
  /** Where the paths are relative to, when the agent says (`defineAgent({workspace})`); default: the run's workspace. */
  workspace?: string;
}

/** `tolerated_failures`: a count of items, or a percentage of them (`"10%"`). */
export type ToleratedFailures = { count: number } | { percent: number };

/** A fan-out phase (`for_each`): one task per element of an array. */
export interface ForEachModel {
  /** The reference as written (`outline.sections`, `$trigger.items`). */
  ref: string;
  source: InputSource;
  /** The element type: what `$item` is. `any` when the array's element type is unknown. */
  itemType: CompiledType;
  /** Items running at once; undefined: the run's concurrency. */
  maxParallel: number | undefined;
  /** Failed items the phase tolerates (each slot then `null`); `{count: 0}` by default. */
  toleratedFailures: ToleratedFailures;
  /** `skip_when` reads `$item`: it is evaluated per item (a skipped item's slot is `null`). */
  itemSkip: boolean;
  /** The outputs as downstream phases see them: each declared output gathered into `array<T>` (`array<T | null>` when slots may be null). */
  gathered: OutputDecl[] | undefined;
  /** Where `for_each` is written in the source file (its own form's path), for messages. */
  at: readonly (string | number)[];
}

/**
 * `mcp.servers.<id>`: a tool server started over stdio (`command`), or one already listening that is
 * reached over MCP's streamable HTTP (`url`). `env` and `headers` values keep `${VAR}` until start.
 */
export interface McpServerDecl {
  id: string;
  /** The command of a stdio server ('' for a server reached at `url`). */
  command: string;
  args: string[];
  env: Record<string, string>;
  /** A streamable HTTP server's endpoint (`http://127.0.0.1:3000/mcp`); then no process is started. */
  url?: string | undefined;
  /** HTTP headers sent to a `url` server (`Authorization: Bearer ${TOKEN}`). */
  headers?: Record<string, string> | undefined;
  /** undefined: every tool the server lists may be offered (still only those an agent names). */
  allowedTools: string[] | undefined;
}

export interface McpConfig {
  servers: Record<string, McpServerDecl>;
}

/**
 * An LLM agent's blueprint (agent-output-schema spec): inline under `agents.<id>` or read from
 * `x-blueprint: file.yaml|json`. Schemas are kept as written and were compiled by `baton validate`.
 */
export interface Blueprint {
  name?: string;
  description?: string;
  systemPrompt?: string;
  /** A template over ctx.input: `Review {{input.code}}`. */
  prompt?: string;
  parametersSchema?: JsonObject;
  /** Authoritative: nothing at run time replaces or loosens it. */
  outputSchema?: JsonObject;
  /** Re-prompts after an invalid reply (default 1, as the spec says). */
  maxOutputRetries: number;
  /** `mcp:server/tool` references. */
  tools: string[];
  /** Overrides of the workflow's `llm` block (provider, model, temperature, max_tokens, system_prompt). */
  llm: JsonObject;
  /** The file it came from, when `x-blueprint` named one. */
  file?: string;
}

export interface Governance {
  requireApproval?: {
    when?: Expression;
    approvers: string[];
    timeoutHours?: number;
    onTimeout: 'escalate' | 'abort' | 'proceed';
  };
  maxCostUsd?: number;
  timeoutHours?: number;
  escalation?: { contact?: string; afterHours?: number };
  accessReview?: { onRequest: 'approve' | 'deny' | 'defer'; approvers: string[]; timeoutHours?: number };
}

/** `x-a2a: {url, skill?, token_env?, streaming?}`: an agent reached over A2A. */
export interface A2aDecl {
  /** The agent's base URL (its card is at `/.well-known/agent-card.json` under it) or the card's own URL (ending in `.json`). */
  url: string;
  /** The card's skill to ask for (sent as the message's `skill` metadata); checked by `baton check`. */
  skill?: string;
  /** An environment variable holding a bearer token sent as `Authorization: Bearer ...`. */
  tokenEnv?: string;
  /** false: never stream, even when the card says it can (default: stream when the card says so). */
  streaming?: boolean;
}

export interface AgentDecl {
  id: string;
  description?: string;
  capabilities: string[];
  defaultPermission?: 'read' | 'write' | 'admin';
  approvalRequired: boolean;
  /** `x-command`: run this agent as a subprocess (a string is run through the shell, a list is argv). */
  command?: string | string[];
  /** `x-mode`: 'once' (a process per task, the default) or 'serve' (long-lived, JSON lines). */
  mode?: 'once' | 'serve';
  /** `x-a2a`: call this agent over the Agent2Agent protocol (src/agents/a2a.ts). */
  a2a?: A2aDecl;
  /** All `x-` keys as written. */
  extensions: Record<string, Json>;
  /** `tools: [mcp:server/tool, ...]` as declared (offered when the agent runs on a model). */
  tools?: string[];
  /** Set when the declaration (or its `x-blueprint` file) carries blueprint fields: an LLM agent. */
  blueprint?: Blueprint;
  /** `version`: the agent's own version (checked against a contract's `minAgentVersion`). */
  version?: string;
  /** The agent's contract (`x-contract` file or mapping, or a blueprint's schemas): src/workflow/contract. */
  contract?: AgentContract;
  /** Agent-level AIP-16 `inputsFiles` / `outputsFiles` (undefined when it declares none). */
  files?: FileContract;
}

/** Where an input value comes from. `path` reaches into the value (`research.summary.title` -> ['summary','title']). */
export type InputSource =
  | { kind: 'phase'; phase: string; key: string; path: string[] }
  | { kind: 'trigger'; key: string; path: string[] }
  | { kind: 'initial_state'; key: string; path: string[] }
  /** `$item[.path]`: the current element of a `for_each` phase. */
  | { kind: 'item'; path: string[] }
  /** `$index`: the current element's 0-based position. */
  | { kind: 'index' };

export interface InputBinding {
  /** Local key in ctx.input. */
  name: string;
  /** The mapping expression as written: `research.findings`, `$trigger.quarter`. */
  ref: string;
  source: InputSource;
  /** The type of the value, computed from the upstream output declaration (`any` when unknown). */
  type: CompiledType;
  /** False when the upstream output is optional (`required: false`): a missing value is then `UnresolvableInputError`... at claim time only if absent. */
  upstreamOptional: boolean;
}

export interface OutputDecl {
  key: string;
  type: CompiledType;
  required: boolean;
}

export interface RetryPolicy {
  maxAttempts: number;
  backoff: 'constant' | 'linear' | 'exponential';
  initialDelayMs: number;
  maxDelayMs: number | undefined;
  /** Empty means: every error is retryable. */
  retryableErrors: string[];
  fallbackAgent: string | undefined;
}

export interface CostTracking {
  enabled: boolean;
  budgetUsd: number | undefined;
  alertAtPercent: number | undefined;
}

export interface PhaseModel {
  name: string;
  title: string;
  description: string | undefined;
  assign: string;
  dependsOn: string[];
  constraints: string[];
  initialState: JsonObject;
  /** undefined when the phase declares no `inputs` (ctx.input is then {}). */
  inputs: InputBinding[] | undefined;
  /** undefined when the phase declares no `outputs` (anything goes, RFC-0024 §9). */
  outputs: OutputDecl[] | undefined;
  /** The computed type of ctx.input: a record of the bound input types. */
  inputType: CompiledType;
  /** A record type of the declared outputs (undefined when no outputs are declared). */
  outputType: CompiledType | undefined;
  skipWhen: Expression | undefined;
  retry: RetryPolicy;
  costTracking: CostTracking | undefined;
  /** `x-timeout_ms` / `timeout_ms`: per-attempt timeout. */
  timeoutMs: number | undefined;
  leasing: Record<string, Json> | undefined;
  attachments: { filename: string; contentType?: string }[];
  /** Normalised permissions (shorthand expanded to full form), or undefined. */
  permissions: Permissions | undefined;
  /** Phase-level `x-` extension keys. */
  extensions: Record<string, Json>;
  /** `for_each`: a fan-out phase (undefined for an ordinary phase). */
  forEach?: ForEachModel;
  /** Phase-level AIP-16 `inputsFiles` / `outputsFiles` (undefined when the phase declares none). */
  files?: FileContract;
}

export type PermissionLevel = 'read' | 'write' | 'admin';

export interface Permissions {
  policy: 'open' | 'restricted' | 'private';
  default: PermissionLevel;
  allow: { agent: string; level: PermissionLevel; expires?: string }[];
  delegate?: { to: string[]; level: PermissionLevel };
  context: 'auto' | 'none' | string[];
}

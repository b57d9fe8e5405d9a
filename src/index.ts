/// <reference types="node" preserve="true" />
/**
 * Baton's public API (the core: compile, validate, run, the embedded SQLite store): explicit named
 * exports, one line of doc each. Optional capabilities live behind subpaths, each needing an optional
 * peer dependency: `@baton-run/baton/postgres` (pg), `/llm` (@ai-sdk/*), `/mcp`
 * (@modelcontextprotocol/sdk), `/typescript` (tsx). docs/package.md lists them.
 */

/** Reads and compiles a workflow file: the model (when valid) and every diagnostic. */
export { loadWorkflow, parseWorkflow, type CompileResult, type CompileSuccess, type CompileFailure, type CompileOptions } from './workflow/compile.js';
/** The throwing edge over the compiler, with RFC-0024 helpers and `toPortfolioSpec()`. */
export { WorkflowSpec, toPortfolioSpec, type IntentSpec, type PortfolioSpec } from './api/spec.js';
/** RFC-0024 runtime checks as pure functions on a compiled phase. */
export { resolveTaskInputs, validateClaimInputs, validateTaskOutputs, checkTaskOutputs, tryResolveTaskInputs, type ClaimOptions, type ResolveOptions, type UpstreamOutputs, type OutputCheck } from './workflow/runtime.js';
/** The named errors of RFC-0024, each with `toJSON()` equal to its event payload. */
export {
  WorkflowError,
  MissingOutputError,
  OutputTypeMismatchError,
  UnresolvableInputError,
  UpstreamIntentSuspendedError,
  InputWiringError,
  WorkflowValidationError,
  type OutputIssue,
  type WorkflowErrorPayload,
  type MissingOutputPayload,
  type OutputTypeMismatchPayload,
  type UnresolvableInputPayload,
  type UpstreamIntentSuspendedPayload,
  type InputWiringPayload,
  type WorkflowValidationPayload,
} from './workflow/errors.js';
/** Stops a run when a phase or run budget is exceeded. */
export { BudgetExceededError, type BudgetExceededPayload } from './engine/errors.js';
/** Runs a workflow end to end with executor-owned wiring. */
export { runWorkflow, type RunOptions, type AgentBinding } from './api/run.js';
/** The engine: start, run, resume, serve (worker), approve, deny, respond, cancel, inspect runs in a store. */
export { createEngine, Engine, unboundAgents, newRunId, type EngineOptions, type StartRunOptions, type DriveOptions, type RunInspection } from './api/engine.js';
/** A run handle (`engine.start()`): id, result(), cancel(), status(), and events({ after }) as an async iterator. */
export { runEvents, type RunHandle, type RunEventsOptions } from './api/handle.js';
/** Workflow types for `createEngine<Workflow>` (the `Workflow` interface `baton types` writes). */
export type { WorkflowTypes, AnyWorkflow, AgentsOption, TriggerOf, UntypedHandler } from './api/typed.js';
/** The worker loop, its defaults and the named fault points tests crash at. */
export { Worker, DEFAULT_CONCURRENCY, DEFAULT_LEASE_MS, FAULT_POINTS, type FaultPoint, type FaultPlan, type WorkerOptions, type WorkerTuning } from './engine/worker.js';
/** The decisions as a pure function of run state and facts, and the plan they read. */
export { decide, type Fact, type FactResult, type Claimed, type Outcome, type Decisions } from './engine/decide.js';
export { planOf, type Plan } from './engine/plan.js';
/** AIP-16 file contracts at run time: the staging port, its local-disk implementation, the tokens of file paths. */
export { expandPath, FileRefused, type FileStager, type ScratchRoot, type LeftoverRoot, type StageScope, type FileDigest, type FileProvenance } from './engine/files.js';
export { localFileStager } from './engine/files-local.js';
/** The agent port. */
export { AgentError, type AgentContext, type AgentHandler, type ClosableAgent, type InputRequest } from './engine/agent.js';
/** Converts an agent's return value to JSON (cycles, depth, getters): the output rules of every attempt. */
export { toJson, MAX_OUTPUT_DEPTH, type JsonConversion } from './engine/attempt.js';
/** JSON values as Baton types them (agent outputs, inputs, triggers, answers to input gates). */
export type { Json, JsonObject } from './core/json.js';
/** Event log and run state. */
export type { RunEvent, RunEventType, FailureRecord, TaskStatus, RunStatus, GateKind } from './engine/events.js';
export { replay, runStatusOf, type RunState, type PhaseState, type GateState } from './engine/state.js';
export { toResult, type RunResult, type PhaseResult, type GateResult, type SuspendedPhase } from './engine/result.js';
/** Agent contracts in TypeScript: AIP-16's defineIO, and defineAgent (a handler carrying its contract). */
export { defineIO, defineAgent, contractOfHandler, FS_ROOT, type IODefinition, type IOHandle, type FileContractEntry, type AgentDefinition, type AgentOutput, type DefinedAgent, type TypedContext, type SchemaLike } from './agents/define.js';
/** Standard Schema V1 (standardschema.dev), vendored: what zod, valibot, arktype and others implement. */
export type { StandardSchemaV1, StandardSchemaProps, StandardResult, StandardIssue, StandardOutput } from './core/standard-schema.js';
/** Agent contracts: the model, contract files, JSON Schema subtyping (docs/contracts.md). */
export type { AgentContract, ErrorHandling as ContractErrorHandling, FileEffect } from './workflow/contract/model.js';
export { loadContractFile, type LoadedContractFile } from './workflow/contract/load.js';
export type { ContractReport, BindingReport, EdgeReport } from './workflow/contract/check.js';
export { isSubschema, type SubschemaResult, type SubschemaOptions, type SchemaFinding, type Verdict } from './types/subschema.js';
/** Stores: the port and the in-memory store. */
export type { RunStore, RunRecord, RunFilter, TaskRow, WorkflowRecord, Commit, WorkHint, ActivityCounts } from './engine/ports.js';
export { MemoryStore } from './store/memory.js';
/** A run in the agent-contract spec's workflow-state shape (`baton show --state`). */
export { workflowState, type WorkflowStateDoc } from './api/workflow-state.js';
/** Opens the store a spec names: a SQLite file path (default `.baton/baton.db`), `postgres://...`, or `memory`. */
export { openStore, parseStoreSpec, DEFAULT_STORE, type OpenStoreOptions, type StoreSpec } from './api/store.js';
/** The embedded SQLite store, for direct use (options such as the sync level); PostgreSQL: `@baton-run/baton/postgres`. */
export { openSqliteStore, SqliteStore, type SqliteStoreOptions } from './store/sqlite.js';
/** Agent adapters: subprocesses (once or serve) and stubs built from output types. */
export { subprocessAgent, type SubprocessOptions } from './agents/subprocess.js';
/** An agent reached over A2A (what `x-a2a` binds; needs the optional peer `@a2a-js/sdk`). */
export { a2aAgent, type A2aAgentOptions } from './agents/a2a.js';
export { stubAgent, stubAgents } from './agents/stub.js';
/** LLM agents: a model's reply parsed against a schema (extracted, repaired, validated; never coerced). */
export { parseAgentReply, type ParsedReply, type ReplySchema, type RepairKind, type SchemaError } from './agents/llm/reply.js';
export { SchemaCompiler, type SchemaValidator } from './workflow/json-schema.js';
/** A remote agent of `baton serve` (docs/server.md): pulls its agent's tasks over HTTP, with the global fetch only. */
export { createRemoteAgent, type RemoteAgent, type RemoteAgentOptions, type RemoteAgentContext, type OutputRejection, type ClaimRejection } from './server/remote-client.js';
/** Traces (docs/telemetry.md): the port createEngine's `telemetry` takes, W3C traceparent helpers, and the telemetry the OTEL_* variables configure (OpenTelemetry loaded only then; `@baton-run/baton/otel` for more). */
export { parseTraceparent, formatTraceparent, type SpanContextIds, type Telemetry, type AttemptTrace, type SpanHandle, type SpanAttributes } from './engine/telemetry.js';
export { telemetryFromEnv, telemetryConfigured } from './telemetry/env.js';
/** Time as a port: the system clock and a manual clock for tests. */
export { systemClock, ManualClock, type Clock } from './core/clock.js';
/** Faults (misuse, infrastructure), with a stable code. */
export { BatonError } from './core/errors.js';
export type { ErrorCode } from './core/codes.js';
/** Diagnostics: data, rendering and the closed list of codes. */
export type { Diagnostic, Severity } from './diagnostics/diagnostic.js';
export { renderDiagnostic, diagnosticToJson, type RenderOptions, type JsonDiagnostic } from './diagnostics/render.js';
export { SourceFile } from './diagnostics/source.js';
export { DIAGNOSTIC_CODES, type DiagnosticCode } from './core/codes.js';
/** The type language. */
export { compileTypes, parseTypeExpr } from './types/index.js';
export type { ParseResult as TypeExprParseResult } from './types/parse.js';
export type { CompiledType, TypeNode, TypeRegistry, ValueIssue } from './types/api.js';
/** The workflow model (IR). */
export type { WorkflowModel, PhaseModel, InputBinding, OutputDecl, RetryPolicy, AgentDecl, A2aDecl, Blueprint, McpConfig, McpServerDecl } from './workflow/model.js';

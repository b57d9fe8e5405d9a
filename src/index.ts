/** Baton's public API: explicit named exports, one line of doc each. */

/** Reads and compiles a workflow file: the model (when valid) and every diagnostic. */
export { loadWorkflow, parseWorkflow, type CompileResult } from './workflow/compile.js';
/** The throwing edge over the compiler, with RFC-0024 helpers and `toPortfolioSpec()`. */
export { WorkflowSpec, toPortfolioSpec, type IntentSpec, type PortfolioSpec } from './api/spec.js';
/** RFC-0024 runtime checks as pure functions on a compiled phase. */
export { resolveTaskInputs, validateClaimInputs, validateTaskOutputs, checkTaskOutputs, tryResolveTaskInputs, type ClaimOptions, type ResolveOptions, type UpstreamOutputs } from './workflow/runtime.js';
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
} from './workflow/errors.js';
/** Stops a run when a phase or run budget is exceeded. */
export { BudgetExceededError } from './engine/errors.js';
/** Runs a workflow end to end with executor-owned wiring. */
export { runWorkflow, type RunOptions, type AgentBinding } from './api/run.js';
/** The executor the durable layer drives, and its default concurrency. */
export { Executor, DEFAULT_CONCURRENCY, type ExecutorOptions } from './engine/executor.js';
/** The agent port. */
export { AgentError, type AgentContext, type AgentHandler, type ClosableAgent } from './engine/agent.js';
/** Event log and run state. */
export type { RunEvent, RunEventType, FailureRecord, TaskStatus, RunStatus } from './engine/events.js';
export { replay, toResult, type RunResult, type PhaseResult, type RunState, type PhaseState } from './engine/state.js';
/** Stores: the port and the in-memory store. */
export type { RunStore, RunMeta } from './engine/ports.js';
export { MemoryStore } from './store/memory.js';
/** Agent adapters: subprocesses (once or serve) and stubs built from output types. */
export { subprocessAgent, type SubprocessOptions } from './agents/subprocess.js';
export { stubAgent, stubAgents } from './agents/stub.js';
/** Time as a port: the system clock and a manual clock for tests. */
export { systemClock, ManualClock, type Clock } from './core/clock.js';
/** Faults (misuse, infrastructure), with a stable code. */
export { BatonError } from './core/errors.js';
/** Diagnostics: data, rendering and the closed list of codes. */
export type { Diagnostic, Severity } from './diagnostics/diagnostic.js';
export { renderDiagnostic, diagnosticToJson } from './diagnostics/render.js';
export { SourceFile } from './diagnostics/source.js';
export { DIAGNOSTIC_CODES, type DiagnosticCode } from './core/codes.js';
/** The type language. */
export { compileTypes, parseTypeExpr } from './types/index.js';
export type { CompiledType, TypeNode, TypeRegistry, ValueIssue } from './types/api.js';
/** The workflow model (IR). */
export type { WorkflowModel, PhaseModel, InputBinding, OutputDecl, RetryPolicy, AgentDecl } from './workflow/model.js';

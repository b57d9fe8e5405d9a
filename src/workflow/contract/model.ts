/**
 * The agent contract (docs/contracts.md): what an agent accepts, returns, touches and does on
 * failure. One model whichever way it was written: a contract file (`x-contract: contracts/x.yaml`),
 * an inline `x-contract` mapping, an LLM blueprint's `parameters_schema` / `output_schema`, or
 * `defineAgent(...)` in TypeScript.
 */
import type { FileContract } from '../model.js';
import type { JsonObject } from '../../core/json.js';
import type { Path } from '../../core/path.js';

export const CONTRACT_VERSION = '1.0.0';

/** Where a part of a contract was written: a path in the workflow (`file` undefined) or in a contract file. */
export interface Loc {
  /** The contract file (resolved path), or undefined for the workflow itself. */
  file?: string;
  path: Path;
}

export interface SchemaDecl {
  schema: JsonObject;
  at: Loc;
}

export interface FileEffect {
  /** Workspace-relative path or glob; `{name}` placeholders stand for a value of the phase's input. */
  path: string;
  description?: string;
  at: Loc;
  /**
   * An AIP-16 file (`inputsFiles` / `outputsFiles`, here through `defineIO`): Baton stages and syncs it. Absent:
   * a `sideEffects` entry, a file the agent reads or writes itself.
   */
  synced?: true;
}

export interface ExternalCall {
  /** A service name or URL, as declared. */
  name: string;
  at: Loc;
}

export type InputFailureAction = 'reject';
export type PartialAction = 'return_partial' | 'fail';
export type TimeoutAction = 'checkpoint_and_retry' | 'retry' | 'fail';
export type FailureAction = 'escalate_to_user' | 'fallback' | 'retry' | 'fail';

export interface ErrorHandling {
  onInputValidationFailure?: { action: InputFailureAction; message?: string };
  onPartialCompletion?: { action: PartialAction; requiresFlags: string[] };
  onTimeout?: { action: TimeoutAction; maxRetries: number };
  onAgentFailure?: { action: FailureAction; fallbackAgent?: string };
}

export interface Resources {
  /** As written (`"5-15 minutes"`). */
  estimatedTime?: string;
  /** Parsed: the range in milliseconds (`max` is the default attempt timeout's base). */
  estimatedMs?: { min: number; max: number };
  tokenBudget?: number;
  memoryRequired?: string;
}

export interface AgentContract {
  contractVersion: string;
  /** The agent id the contract names (may differ from the declaration's key: a warning). */
  agentId?: string;
  workflowStep?: string;
  input?: SchemaDecl;
  output?: SchemaDecl;
  sideEffects: { filesWritten: FileEffect[]; filesRead: FileEffect[]; externalCalls: ExternalCall[] };
  resources: Resources;
  errorHandling: ErrorHandling;
  compatibility: { minAgentVersion?: string; minAgentVersionAt?: Loc; requiresContext: string[]; providesContext: string[] };
  /** A `defineAgent` side whose Standard Schema has no JSON Schema converter: why (checked at run time only). */
  unchecked?: { input?: string; output?: string };
  /** AIP-16 `inputsFiles` / `outputsFiles` the agent declares (staged and synced by the engine: src/engine/files.ts). */
  files?: FileContract;
  /** How it was written. */
  origin: { kind: 'file' | 'inline' | 'blueprint' | 'typescript'; file?: string; at: Loc; workflowAt?: Path };
}

export function emptyContract(origin: AgentContract['origin']): AgentContract {
  return {
    contractVersion: CONTRACT_VERSION,
    sideEffects: { filesWritten: [], filesRead: [], externalCalls: [] },
    resources: {},
    errorHandling: {},
    compatibility: { requiresContext: [], providesContext: [] },
    origin,
  };
}

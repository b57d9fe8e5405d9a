/**
 * The closed list of diagnostic codes. Stable, kebab-case, documented in docs/diagnostics.md.
 * Tests assert these codes (and positions), never message prose.
 */
export const DIAGNOSTIC_CODES = [
  // YAML
  'yaml-syntax',
  'duplicate-key',
  'invalid-character',
  'not-utf8',
  'too-deep',
  'alias-limit',
  // document structure
  'missing-field',
  'wrong-type',
  'invalid-value',
  'unknown-key',
  'ignored-section',
  'unsupported-version',
  'empty-workflow',
  // graph
  'unknown-dependency',
  'duplicate-dependency',
  'duplicate-output',
  'dependency-cycle',
  'undeclared-agent',
  // RFC-0024 §8 input wiring (InputWiringError)
  'input-unknown-phase',
  'input-not-dependency',
  'input-undeclared-output',
  'input-bad-syntax',
  // edge typing
  'input-path-invalid',
  'input-optional-output',
  // type language
  'unknown-type',
  'recursive-type',
  'invalid-type',
  // expressions (skip_when, require_approval.when)
  'expression-syntax',
  'expression-unknown-name',
  // LLM agents: blueprints and MCP tools
  'invalid-schema',
  'template-unknown-name',
  'output-schema-mismatch',
  'mcp-unknown-server',
  'mcp-tool-not-allowed',
  // agent contracts (src/workflow/contract)
  'input-schema-missing',
  'input-schema-mismatch',
  'input-schema-unknown-key',
  'schema-not-comparable',
  'context-not-provided',
  'agent-version-mismatch',
  'side-effect-conflict',
  'contract-mismatch',
  // names JavaScript objects cannot keep (`__proto__`)
  'reserved-name',
  // fan-out (`for_each`, `$item`, `$index`)
  'for-each-not-array',
  'for-each-untyped',
  'item-outside-for-each',
  'fan-out-shared-write',
  'fan-out-setting-unused',
  // retry
  'retry-setting-unused',
  'item-may-be-null',
  // AIP-16 file contracts (`inputsFiles` / `outputsFiles`)
  'path-escape',
  'unknown-token',
  // the contract spec's step form (`$store` / `$ref` artifacts)
  'unknown-artifact',
  'artifact-conflict',
  // A2A agents (`x-a2a`): their agent cards, read by `baton check` only
  'a2a-card-unreachable',
  'a2a-unknown-skill',
  'a2a-mode-mismatch',
  // files
  'file-unreadable',
] as const;

export type DiagnosticCode = (typeof DIAGNOSTIC_CODES)[number];

/** Codes of faults (BatonError): misuse, infrastructure, bugs. */
export type ErrorCode =
  | 'internal'
  | 'usage'
  | 'invalid-workflow'
  | 'unbound-agent'
  | 'agent-protocol'
  | 'store'
  /** A store: the run id is taken (`baton run --run-id` twice). */
  | 'run-exists'
  /** A store: no run (or gate) with that id. */
  | 'unknown-run'
  | 'unknown-gate'
  /** A gate decision or response refused (not an approver, gate closed, a wrong answer). */
  | 'gate-refused'
  /** A store file locked by another process beyond the busy timeout. */
  | 'store-locked'
  /** A store file that is not a Baton store, or is damaged. */
  | 'store-corrupt'
  /** A store written by a newer Baton (its schema version is above ours). */
  | 'store-version'
  /** The database cannot be reached. */
  | 'store-unreachable'
  /** An optional capability whose package is not installed (the message names the install command). */
  | 'missing-package'
  /** A workflow uses something this engine cannot run yet (a `for_each` phase): refused before anything runs. */
  | 'unsupported'
  | 'fault-injected';

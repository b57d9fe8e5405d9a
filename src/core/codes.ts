/**
 * The closed list of diagnostic codes. Stable, kebab-case, documented in docs/diagnostics.md.
 * Tests assert these codes (and positions), never message prose.
 */
export const DIAGNOSTIC_CODES = [
  // YAML
  'yaml-syntax',
  'duplicate-key',
  // document structure
  'missing-field',
  'wrong-type',
  'invalid-value',
  'unknown-key',
  'unsupported-version',
  'empty-workflow',
  // graph
  'unknown-dependency',
  'duplicate-dependency',
  'dependency-cycle',
  'undeclared-agent',
  // RFC-0024 §8 input wiring (InputWiringError)
  'input-unknown-phase',
  'input-not-dependency',
  'input-undeclared-output',
  'input-bad-syntax',
  // edge typing
  'input-path-invalid',
  // type language
  'unknown-type',
  'recursive-type',
  'invalid-type',
  // expressions (skip_when, require_approval.when)
  'expression-syntax',
  'expression-unknown-name',
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
  | 'fault-injected';

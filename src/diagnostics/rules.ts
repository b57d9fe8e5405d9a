/**
 * One line about each diagnostic code and its usual severity: the rules of SARIF output
 * (`tool.driver.rules`). The full meaning of each code is in docs/diagnostics.md.
 */
import { DIAGNOSTIC_CODES, type DiagnosticCode } from '../core/codes.js';
import type { Severity } from './diagnostic.js';

export interface RuleInfo {
  summary: string;
  severity: Severity;
}

export const RULES: Readonly<Record<DiagnosticCode, RuleInfo>> = {
  'yaml-syntax': { summary: 'The text is not valid YAML 1.2, or holds more than one document', severity: 'error' },
  'duplicate-key': { summary: 'A key appears twice in one mapping', severity: 'error' },
  'invalid-character': { summary: 'The text holds a character YAML does not allow (a control character, NUL, a lone surrogate)', severity: 'error' },
  'not-utf8': { summary: 'The file’s bytes are not UTF-8', severity: 'error' },
  'too-deep': { summary: 'Collections nested more than 200 levels', severity: 'error' },
  'alias-limit': { summary: 'YAML aliases expand to more than 1,000,000 nodes, or an alias contains itself', severity: 'error' },
  'missing-field': { summary: 'A required field is absent', severity: 'error' },
  'wrong-type': { summary: 'A field has the wrong JSON shape', severity: 'error' },
  'invalid-value': { summary: 'A value of the right shape that is not allowed', severity: 'error' },
  'unknown-key': { summary: 'A key Baton does not know (x- keys are extensions)', severity: 'warning' },
  'ignored-section': { summary: 'A section or key Baton accepts and does not act on (`channels`, `leasing`, `attachments`, a type’s `default`)', severity: 'warning' },
  'unsupported-version': { summary: '`openintent` is not "1.0", or a contract’s `contractVersion` is not "1.0.0"', severity: 'error' },
  'empty-workflow': { summary: '`workflow` has no phases', severity: 'error' },
  'unknown-dependency': { summary: '`depends_on` names a phase that does not exist', severity: 'error' },
  'duplicate-dependency': { summary: 'The same phase is listed twice in one `depends_on`', severity: 'warning' },
  'duplicate-output': { summary: 'The same key is listed twice in a list of `outputs`', severity: 'warning' },
  'dependency-cycle': { summary: 'The dependency graph has a cycle', severity: 'error' },
  'undeclared-agent': { summary: 'An `assign` names an agent missing from `agents`', severity: 'warning' },
  'input-unknown-phase': { summary: 'RFC-0024 §8.1: an input mapping references a phase that does not exist', severity: 'error' },
  'input-not-dependency': { summary: 'RFC-0024 §8.2: an input mapping references a phase that is not a dependency', severity: 'error' },
  'input-undeclared-output': { summary: 'RFC-0024 §8.3: an input mapping references an output the upstream phase does not declare', severity: 'error' },
  'input-bad-syntax': { summary: 'RFC-0024 §8.4: an input mapping is not phase.key, $trigger.key or $initial_state.key', severity: 'error' },
  'input-path-invalid': { summary: 'An input mapping reaches into a value along a path its declared type does not have', severity: 'error' },
  'unknown-type': { summary: 'A type name that is neither a primitive nor declared in `types`', severity: 'error' },
  'recursive-type': { summary: 'Types that refer to each other with no base, or a record that requires itself', severity: 'error' },
  'invalid-type': { summary: 'A malformed type declaration', severity: 'error' },
  'expression-syntax': { summary: 'A condition is not a valid CEL expression', severity: 'error' },
  'expression-unknown-name': { summary: 'A condition reads a name that is not trigger, initial_state or an upstream phase', severity: 'error' },
  'invalid-schema': { summary: 'An LLM agent’s output_schema or parameters_schema is not a valid JSON Schema', severity: 'error' },
  'template-unknown-name': { summary: 'A blueprint prompt template reads a name that is not among its inputs', severity: 'error' },
  'output-schema-mismatch': { summary: 'A phase’s declared outputs do not fit its agent’s output schema', severity: 'error' },
  'mcp-unknown-server': { summary: 'A tool names an MCP server missing from `mcp.servers`', severity: 'error' },
  'mcp-tool-not-allowed': { summary: 'A tool names an MCP tool outside the server’s `allowed_tools`', severity: 'error' },
  'input-schema-missing': { summary: 'The agent’s input schema requires a key the phase never wires', severity: 'error' },
  'input-schema-mismatch': { summary: 'A wired input’s type cannot fit the agent’s input schema', severity: 'error' },
  'input-schema-unknown-key': { summary: 'The phase wires a key the agent’s input schema forbids', severity: 'error' },
  'schema-not-comparable': { summary: 'The subtyping check met keywords it cannot compare; checked only when the agent runs', severity: 'warning' },
  'context-not-provided': { summary: 'An agent requires context no upstream phase provides', severity: 'error' },
  'agent-version-mismatch': { summary: 'An agent’s version is below its contract’s minAgentVersion', severity: 'error' },
  'side-effect-conflict': { summary: 'Two phases that may run at once write the same path, or one reads what the other writes', severity: 'error' },
  'contract-mismatch': { summary: 'A contract names another agent or a step no phase of that agent runs', severity: 'warning' },
  'a2a-card-unreachable': { summary: '`baton check` could not read an `x-a2a` agent’s card (network, HTTP status, not a card)', severity: 'warning' },
  'a2a-unknown-skill': { summary: 'An `x-a2a` agent names a `skill` its card does not list', severity: 'error' },
  'a2a-mode-mismatch': { summary: 'An `x-a2a` agent’s card (or skill) takes or gives no `application/json` data parts', severity: 'error' },
  'file-unreadable': { summary: 'A file could not be read', severity: 'error' },
  'for-each-not-array': { summary: '`for_each` reads a value whose type is not an array', severity: 'error' },
  'for-each-untyped': { summary: '`for_each` reads an `array` without an element type: `$item` is `any`', severity: 'warning' },
  'item-outside-for-each': { summary: '`$item`, `$index` or an item token used in a phase without `for_each`', severity: 'error' },
  'retry-setting-unused': { summary: 'An empty `retry.retryable_errors`: it filters nothing, every retryable failure is retried', severity: 'warning' },
  'fan-out-setting-unused': { summary: '`max_parallel` or `tolerated_failures` on a phase without `for_each`: no effect', severity: 'warning' },
  'input-optional-output': { summary: 'An input reads an optional output (`required: false`): when the upstream phase does not return it, the claim is rejected and the phase fails', severity: 'warning' },
  'item-may-be-null': { summary: 'An input reads into `$item` (`$item.x`) where an item may be null (an empty slot of an upstream fan-out): such an item fails', severity: 'warning' },
  'fan-out-shared-write': { summary: 'The items of a `for_each` phase all write one file their agent writes itself (contract `sideEffects`)', severity: 'warning' },
  'path-escape': { summary: 'A file contract path leaves the workspace (absolute, or `..`)', severity: 'error' },
  'unknown-token': { summary: 'A file contract path uses a `<token>` Baton does not know', severity: 'error' },
  'unknown-artifact': { summary: 'A `$ref` reads an artifact no step stores with `$store`', severity: 'error' },
  'artifact-conflict': { summary: 'Two outputs `$store` to the same artifact, or one artifact sits inside another', severity: 'error' },
  'reserved-name': { summary: 'A name JavaScript objects cannot keep (`__proto__`) used as a key or a reference segment', severity: 'error' },
};

/** The codes in their documented order (SARIF `ruleIndex` refers to it). */
export const RULE_IDS: readonly DiagnosticCode[] = DIAGNOSTIC_CODES;

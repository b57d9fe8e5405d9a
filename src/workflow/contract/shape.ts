/** The structure of an agent contract, field by field, in the workflow checker's Shape language. */
import type { Path } from '../../core/path.js';
import { error, type Diagnostic } from '../../diagnostics/diagnostic.js';
import type { Field, Shape } from '../shape.js';
import { filesField } from '../files.js';
import { CONTRACT_VERSION } from './model.js';

const str: Field = { t: 'string' };
const nonEmpty: Field = { t: 'string', nonEmpty: true };
const strList: Shape = { t: 'list', of: { t: 'string', nonEmpty: true } };

const fileEffect: Shape = {
  t: 'union',
  options: [
    { t: 'string', nonEmpty: true },
    { t: 'object', fields: { path: { t: 'string', nonEmpty: true, required: true }, description: str, mode: { t: 'enum', values: ['ro', 'rw'] }, contentType: str } },
  ],
};

const externalCall: Shape = {
  t: 'union',
  options: [{ t: 'string', nonEmpty: true }, { t: 'object', fields: { service: nonEmpty, url: nonEmpty, description: str } }],
};

export const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

const semver: Shape = {
  t: 'custom',
  expected: 'a version `MAJOR.MINOR.PATCH`',
  check: (v: unknown, path: Path, out: Diagnostic[]) => {
    if (typeof v !== 'string') out.push(error('wrong-type', path, 'expected a version string such as "1.0.0"'));
    else if (!SEMVER.test(v)) out.push(error('invalid-value', path, `\`${v}\` is not a version \`MAJOR.MINOR.PATCH\``, { hint: 'write e.g. "1.2.0"' }));
  },
};

const contractVersion: Shape = {
  t: 'custom',
  expected: `"${CONTRACT_VERSION}"`,
  check: (v: unknown, path: Path, out: Diagnostic[]) => {
    if (typeof v !== 'string') out.push(error('wrong-type', path, `the contract version must be the string "${CONTRACT_VERSION}"`, { hint: `quote it: \`contractVersion: "${CONTRACT_VERSION}"\`` }));
    else if (v !== CONTRACT_VERSION) out.push(error('unsupported-version', path, `unsupported contract version \`${v}\`: Baton reads agent contracts ${CONTRACT_VERSION}`, { hint: `write \`contractVersion: "${CONTRACT_VERSION}"\`` }));
  },
};

const DURATION = /^\s*(\d+(?:\.\d+)?)\s*(?:-\s*(\d+(?:\.\d+)?)\s*)?(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)\s*$/i;

/** `"5-15 minutes"`, `"30s"`, `"2 hours"` -> a range in milliseconds. */
export function parseDuration(text: string): { min: number; max: number } | undefined {
  const m = DURATION.exec(text);
  if (!m) return undefined;
  const unit = m[3]!.toLowerCase();
  const scale = unit.startsWith('ms') || unit.startsWith('milli') ? 1 : unit.startsWith('h') ? 3_600_000 : unit.startsWith('m') ? 60_000 : 1000;
  const lo = Number(m[1]) * scale;
  const hi = m[2] !== undefined ? Number(m[2]) * scale : lo;
  return hi >= lo ? { min: lo, max: hi } : undefined;
}

const duration: Shape = {
  t: 'custom',
  expected: 'a duration such as "5-15 minutes"',
  check: (v: unknown, path: Path, out: Diagnostic[]) => {
    if (typeof v !== 'string') out.push(error('wrong-type', path, 'expected a duration string such as "5-15 minutes" or "30s"'));
    else if (!parseDuration(v)) out.push(error('invalid-value', path, `\`${v}\` is not a duration`, { hint: 'write e.g. "30s", "10 minutes" or "5-15 minutes"' }));
  },
};

// `required` beside `schema` (as the contract spec's own example writes it for `output`) is the schema's `required`
const schemaBlock: Shape = { t: 'object', fields: { schema: { t: 'any', required: true }, required: strList, description: str } };

export const contractFields: Record<string, Field> = {
  contractVersion,
  agentId: nonEmpty,
  workflowStep: nonEmpty,
  description: str,
  input: schemaBlock,
  output: schemaBlock,
  sideEffects: { t: 'object', fields: { filesWritten: { t: 'list', of: fileEffect }, filesRead: { t: 'list', of: fileEffect }, externalCalls: { t: 'list', of: externalCall } } },
  resources: { t: 'object', fields: { estimatedTime: duration, tokenBudget: { t: 'number', integer: true, min: 1 }, memoryRequired: str } },
  errorHandling: {
    t: 'object',
    fields: {
      onInputValidationFailure: { t: 'object', fields: { action: { t: 'enum', values: ['reject'], required: true }, message: str } },
      onPartialCompletion: { t: 'object', fields: { action: { t: 'enum', values: ['return_partial', 'fail'], required: true }, requiresFlags: strList } },
      onTimeout: { t: 'object', fields: { action: { t: 'enum', values: ['checkpoint_and_retry', 'retry', 'fail'], required: true }, maxRetries: { t: 'number', integer: true, min: 0 } } },
      onAgentFailure: { t: 'object', fields: { action: { t: 'enum', values: ['escalate_to_user', 'fallback', 'retry', 'fail'], required: true }, fallbackAgent: nonEmpty } },
    },
  },
  compatibility: { t: 'object', fields: { minAgentVersion: semver, requiresContext: strList, providesContext: strList } },
  // AIP-16 file contracts, as on a phase or an agent (../files.ts)
  inputsFiles: filesField,
  outputsFiles: filesField,
};

/** In a contract file `contractVersion` is required; inline it defaults to the current version. */
export function contractShape(inFile: boolean): Shape {
  return { t: 'object', what: 'a contract mapping', fields: inFile ? { ...contractFields, contractVersion: { ...contractVersion, required: true } } : contractFields };
}

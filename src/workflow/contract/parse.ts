/**
 * A contract value (from a file or inline) -> AgentContract. The structure is checked first (every
 * problem collected, with paths relative to `base`); then schemas are compiled with the blueprint's
 * SchemaCompiler, problems positioned inside the schema.
 */
import { isPlainObject, type JsonObject } from '../../core/json.js';
import type { Path } from '../../core/path.js';
import { didYouMean } from '../../core/suggest.js';
import { error, warning, type Diagnostic } from '../../diagnostics/diagnostic.js';
import type { SchemaCompiler } from '../json-schema.js';
import { checkShape } from '../shape.js';
import { fileContractOf } from '../files.js';
import { CONTRACT_VERSION, emptyContract, type AgentContract, type ErrorHandling, type FileEffect, type Loc } from './model.js';
import { contractShape, parseDuration } from './shape.js';

export interface ParseContractOptions {
  /** Where the contract sits: [] in a contract file, ['agents', id, 'x-contract'] inline. */
  base: Path;
  /** The contract file (undefined: inline in the workflow). */
  file?: string;
  compiler: SchemaCompiler;
}

export function parseContract(raw: unknown, opts: ParseContractOptions, out: Diagnostic[]): AgentContract | undefined {
  const { base, file, compiler } = opts;
  checkShape(raw, contractShape(file !== undefined), base, out);
  if (!isPlainObject(raw)) return undefined;
  const loc = (...p: Path): Loc => ({ ...(file !== undefined ? { file } : {}), path: [...base, ...p] });
  const c = emptyContract({ kind: file !== undefined ? 'file' : 'inline', ...(file !== undefined ? { file } : {}), at: loc() });
  if (typeof raw['contractVersion'] === 'string') c.contractVersion = raw['contractVersion'];
  if (typeof raw['agentId'] === 'string') c.agentId = raw['agentId'];
  if (typeof raw['workflowStep'] === 'string') c.workflowStep = raw['workflowStep'];
  for (const side of ['input', 'output'] as const) {
    const block = raw[side];
    if (!isPlainObject(block) || block['schema'] === undefined || block['schema'] === null) continue;
    const schema = withRequired(block['schema'], block['required'], [...base, side], out);
    const compiled = compiler.compile(schema);
    if (!compiled.ok) {
      for (const p of compiled.problems.slice(0, 5)) out.push(error('invalid-schema', [...base, side, 'schema', ...p.path], `\`${side}.schema\` is not a valid JSON Schema: ${p.message}`, { hint: 'draft-07 unless `$schema` names 2020-12; see https://json-schema.org' }));
      continue;
    }
    c[side] = { schema: schema as JsonObject, at: loc(side, 'schema') };
  }
  const se = raw['sideEffects'];
  if (isPlainObject(se)) {
    c.sideEffects.filesWritten = fileEffects(se['filesWritten'], loc, 'filesWritten');
    c.sideEffects.filesRead = fileEffects(se['filesRead'], loc, 'filesRead');
    const calls = Array.isArray(se['externalCalls']) ? se['externalCalls'] : [];
    calls.forEach((x, i) => {
      const named = isPlainObject(x) ? [x['service'], x['url']].find((v): v is string => typeof v === 'string') : undefined;
      const name = typeof x === 'string' ? x : (named ?? '');
      if (name !== '') c.sideEffects.externalCalls.push({ name, at: loc('sideEffects', 'externalCalls', i) });
    });
  }
  const res = raw['resources'];
  if (isPlainObject(res)) {
    if (typeof res['estimatedTime'] === 'string') {
      c.resources.estimatedTime = res['estimatedTime'];
      const ms = parseDuration(res['estimatedTime']);
      if (ms) c.resources.estimatedMs = ms;
    }
    if (typeof res['tokenBudget'] === 'number' && Number.isInteger(res['tokenBudget']) && res['tokenBudget'] > 0) c.resources.tokenBudget = res['tokenBudget'];
    if (typeof res['memoryRequired'] === 'string') c.resources.memoryRequired = res['memoryRequired'];
  }
  if (isPlainObject(raw['errorHandling'])) c.errorHandling = errorHandling(raw['errorHandling']);
  const compat = raw['compatibility'];
  if (isPlainObject(compat)) {
    if (typeof compat['minAgentVersion'] === 'string') {
      c.compatibility.minAgentVersion = compat['minAgentVersion'];
      c.compatibility.minAgentVersionAt = loc('compatibility', 'minAgentVersion');
    }
    c.compatibility.requiresContext = strings(compat['requiresContext']);
    c.compatibility.providesContext = strings(compat['providesContext']);
  }
  const files = fileContractOf(raw, base, { fanOut: undefined }, out);
  if (files) c.files = files;
  // a contract with shape errors still takes part in the checks against the phases (an agent version, an output
  // schema): every field above is kept only when it is well formed, so the file's other problems show in the same pass
  if (c.contractVersion !== CONTRACT_VERSION) return undefined;
  return c;
}

/**
 * `input.required` / `output.required` written beside `schema` (the contract spec's example does so for
 * its output): merged into the schema's own `required`, so every place that enforces the schema (the
 * static checks, the run-time guard, stubs, generated types) enforces it. A name the schema's
 * `properties` do not list is most likely a typo: a warning at the name. Its shape was checked already.
 */
function withRequired(schema: unknown, required: unknown, at: Path, out: Diagnostic[]): unknown {
  if (!Array.isArray(required) || !isPlainObject(schema)) return schema;
  const props = schema['properties'];
  if (isPlainObject(props)) {
    const names = Object.keys(props);
    required.forEach((name: unknown, i) => {
      if (typeof name !== 'string' || name.trim() === '' || Object.prototype.hasOwnProperty.call(props, name)) return;
      const near = didYouMean(name, names);
      out.push(warning('unknown-key', [...at, 'required', i], `\`${name}\` in \`${at.at(-1) as string}.required\` is not a property of \`${at.at(-1) as string}.schema\``, { hint: near ?? `properties: ${names.map((n) => `\`${n}\``).join(', ') || '(none)'}` }));
    });
  }
  if (!required.every((x): x is string => typeof x === 'string' && x.trim() !== '')) return schema; // reported by the shape check
  const own: unknown = schema['required'] ?? [];
  if (!Array.isArray(own)) return schema; // not a JSON Schema: compiling it says so
  return { ...schema, required: [...new Set<unknown>([...(own as unknown[]), ...required])] };
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x !== '') : [];
}

function fileEffects(v: unknown, loc: (...p: Path) => Loc, key: string): FileEffect[] {
  if (!Array.isArray(v)) return [];
  const out: FileEffect[] = [];
  v.forEach((x, i) => {
    const path = typeof x === 'string' ? x : isPlainObject(x) && typeof x['path'] === 'string' ? x['path'] : undefined;
    if (path === undefined || path === '') return;
    const description = isPlainObject(x) && typeof x['description'] === 'string' ? x['description'] : undefined;
    out.push({ path, ...(description !== undefined ? { description } : {}), at: loc('sideEffects', key, i) });
  });
  return out;
}

/** The error-handling block as the engine reads it: known actions only, defaults filled in (requiresFlags [], maxRetries). */
export function errorHandling(raw: Record<string, unknown>): ErrorHandling {
  const eh: ErrorHandling = {};
  const ivf = raw['onInputValidationFailure'];
  if (isPlainObject(ivf) && ivf['action'] === 'reject') eh.onInputValidationFailure = { action: 'reject', ...(typeof ivf['message'] === 'string' ? { message: ivf['message'] } : {}) };
  const pc = raw['onPartialCompletion'];
  if (isPlainObject(pc) && (pc['action'] === 'return_partial' || pc['action'] === 'fail')) eh.onPartialCompletion = { action: pc['action'], requiresFlags: strings(pc['requiresFlags']) };
  const to = raw['onTimeout'];
  if (isPlainObject(to) && (to['action'] === 'checkpoint_and_retry' || to['action'] === 'retry' || to['action'] === 'fail')) {
    eh.onTimeout = { action: to['action'], maxRetries: typeof to['maxRetries'] === 'number' ? to['maxRetries'] : to['action'] === 'fail' ? 0 : 1 };
  }
  const af = raw['onAgentFailure'];
  if (isPlainObject(af) && (af['action'] === 'escalate_to_user' || af['action'] === 'fallback' || af['action'] === 'retry' || af['action'] === 'fail')) {
    eh.onAgentFailure = { action: af['action'], ...(typeof af['fallbackAgent'] === 'string' ? { fallbackAgent: af['fallbackAgent'] } : {}) };
  }
  return eh;
}

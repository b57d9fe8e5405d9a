/**
 * What an LLM agent's reply must be for one phase: JSON that fits the blueprint's `output_schema`
 * AND the phase's declared `outputs` (`result_data`), or free text (`result_text`) when no schema
 * applies. With no `output_schema`, the phase's outputs are the schema; a phase whose single
 * declared output is a string takes the text.
 */
import { isPlainObject, type Json, type JsonObject } from '../../core/json.js';
import type { ValueIssue } from '../../types/api.js';
import { jsonPath, pointerToPath, repr, valueAt, type SchemaCompiler, type SchemaError } from '../../workflow/json-schema.js';
import type { Blueprint, PhaseModel } from '../../workflow/model.js';

export type Contract =
  | { mode: 'data'; schema: Record<string, unknown>; validate: (value: unknown) => SchemaError[] }
  /** `key`: the phase's single string output that receives the text (undefined: `result_text`). */
  | { mode: 'text'; key: string | undefined };

export type ContractResult = { ok: true; contract: Contract } | { ok: false; message: string; errors: SchemaError[] };

export function buildContract(phase: PhaseModel | undefined, blueprint: Blueprint | undefined, compiler: SchemaCompiler): ContractResult {
  const outputType = phase?.outputType;
  const phaseErrors = (v: unknown): SchemaError[] => (outputType && !outputType.check(v) ? issuesToErrors(outputType.issues(v), v) : []);
  if (blueprint?.outputSchema) {
    const c = compiler.compile(blueprint.outputSchema);
    if (!c.ok) return { ok: false, message: 'the blueprint output_schema does not compile', errors: c.problems.map((p) => ({ path: '$', message: p.message })) };
    const v = c.validator;
    return { ok: true, contract: { mode: 'data', schema: blueprint.outputSchema, validate: (x) => merge(v.validate(x), phaseErrors(x)) } };
  }
  const outputs = phase?.outputs;
  if (!outputs || outputs.length === 0 || !outputType) return { ok: true, contract: { mode: 'text', key: undefined } };
  if (outputs.length === 1 && outputs[0]!.type.text === 'string') return { ok: true, contract: { mode: 'text', key: outputs[0]!.key } };
  return { ok: true, contract: { mode: 'data', schema: outputType.jsonSchema(), validate: phaseErrors } };
}

/** Both contracts' errors; a path the schema already reports is not reported twice. */
function merge(schemaErrors: SchemaError[], phaseErrors: SchemaError[]): SchemaError[] {
  if (phaseErrors.length === 0) return schemaErrors;
  const seen = new Set(schemaErrors.map((e) => e.path));
  return [...schemaErrors, ...phaseErrors.filter((e) => !seen.has(e.path))];
}

/** The type language's issues, in the same form as schema errors (so a re-prompt reads the same). */
export function issuesToErrors(issues: readonly ValueIssue[], root: unknown): SchemaError[] {
  return issues.map((i) => {
    const path = pointerToPath(i.pointer);
    if (i.kind === 'required') {
      const name = String(path[path.length - 1]);
      return { path: jsonPath(path.slice(0, -1)), message: `${repr(name)} is a required property`, expected: `a property ${repr(name)} (${i.expected})`, received: 'nothing' };
    }
    const value = valueAt(root, path);
    if (i.kind === 'enum') return { path: jsonPath(path), message: `${repr(value)} is not one of ${i.expected}`, expected: `one of ${i.expected}`, received: repr(value) };
    return { path: jsonPath(path), message: `${repr(value)} is not of type ${repr(i.expected)}`, expected: i.expected, received: i.actual };
  });
}

/**
 * The agent's return value for a validated result: the object itself, or the value under
 * `result_data`. A `_cost` key is dropped: the engine reads it as spend, and a model must not set
 * its own bill (cost comes from token usage).
 */
const FENCED = /^```[A-Za-z]*[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```$/;

/**
 * The output of a phase whose single declared output `key` is a string, which takes the reply's text.
 * A reply that is exactly a JSON object giving that key a string (`{"note": "..."}`, bare or in a fenced
 * block: what many models answer whatever they are told) is that string: its JSON text reached the
 * output, and so every downstream phase, as the note itself.
 */
export function textOutput(key: string, text: string): JsonObject {
  let t = text.trim();
  const fenced = FENCED.exec(t);
  if (fenced) t = fenced[1]!.trim();
  if (t.startsWith('{') && t.endsWith('}')) {
    let v: unknown;
    try {
      v = JSON.parse(t);
    } catch {
      v = undefined; // text that only looks like an object
    }
    if (isPlainObject(v) && Object.keys(v).length === 1 && Object.prototype.hasOwnProperty.call(v, key) && typeof v[key] === 'string') return { [key]: v[key] };
  }
  return { [key]: text };
}

export function outputOf(value: unknown): JsonObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { result_data: value as Json };
  if (!Object.prototype.hasOwnProperty.call(value, '_cost')) return value as JsonObject;
  const { _cost: _dropped, ...rest } = value as JsonObject;
  return rest;
}

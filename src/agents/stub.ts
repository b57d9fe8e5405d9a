/**
 * Stub agents for dry runs (`--stub-agents`): each returns a value built from the phase's declared
 * output types, so any workflow can be run end to end before its agents exist.
 *
 * An output declared `any` (the contract spec's step form declares every output so) is sampled from
 * the assigned agent's contract instead, when it has an output schema: a workflow whose shapes live in
 * its contracts (`forEach` over `outline.sections`, `$item.name`) then fans out under stubs as it will
 * with real agents. Arrays sampled from a schema hold two elements whose strings differ
 * (`name-1`, `name-2`), so per-item `$store` targets and file paths stay distinct. Keys the contract's output
 * schema requires are sampled too (an enum's first value): the stub's output is one the contract accepts.
 */
import type { Json, JsonObject } from '../core/json.js';
import type { AgentHandler } from '../engine/agent.js';
import type { PhaseModel, WorkflowModel } from '../workflow/model.js';

export function stubAgent(model: WorkflowModel): AgentHandler {
  const samples = new Map<string, JsonObject>();
  return (ctx) => {
    let s = samples.get(ctx.phase);
    if (!s) {
      const p = model.byName.get(ctx.phase);
      s = p ? stubOutput(model, p) : {};
      samples.set(ctx.phase, s);
    }
    return structuredClone(s);
  };
}

/** Binds every agent the workflow names (assign and fallback) to the stub. */
export function stubAgents(model: WorkflowModel): Record<string, AgentHandler> {
  const h = stubAgent(model);
  const out: Record<string, AgentHandler> = {};
  for (const p of model.phases) {
    out[p.assign] = h;
    if (p.retry.fallbackAgent) out[p.retry.fallbackAgent] = h;
  }
  for (const id of Object.keys(model.agents ?? {})) out[id] = h;
  return out;
}

/** The stub's output for a phase: its declared types' sample, with `any` outputs sampled from the agent's contract. */
function stubOutput(model: WorkflowModel, p: PhaseModel): JsonObject {
  const out = p.outputType ? (p.outputType.sample() as JsonObject) : {};
  const schema = model.agents?.[p.assign]?.contract?.output?.schema;
  if (!schema) return out;
  if (!p.outputs) {
    const whole = sampleSchema(schema, '', 0, 0);
    return whole !== null && typeof whole === 'object' && !Array.isArray(whole) ? whole : out;
  }
  const props = isObject(schema['properties']) ? schema['properties'] : {};
  for (const o of p.outputs) {
    const at = props[o.key];
    if (o.type.text === 'any' && at !== undefined) out[o.key] = sampleSchema(at, o.key, 0, 0);
  }
  // what the contract requires besides (the spec's section-drafter: `draftContent`, `completionStatus`
  // from its enum), so that the stub's output is one the contract accepts
  const required = Array.isArray(schema['required']) ? schema['required'].filter((k): k is string => typeof k === 'string') : [];
  for (const k of required) if (!Object.prototype.hasOwnProperty.call(out, k)) setKey(out, k, sampleSchema(props[k] ?? extraSchema(schema), k, 0, 0));
  return out;
}

/** The schema of a key `properties` does not list (`additionalProperties`, else anything). */
const extraSchema = (schema: Record<string, Json>): Json => (isObject(schema['additionalProperties']) ? schema['additionalProperties'] : {});

function setKey(out: Record<string, Json>, k: string, value: Json): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value, enumerable: true, writable: true, configurable: true });
  else out[k] = value;
}

const isObject = (v: unknown): v is Record<string, Json> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A value that fits a JSON Schema (the subset contracts use: type, properties, required, items, enum,
 * const, default, anyOf/oneOf/allOf, minItems, minimum, minLength, format). `label` names the value
 * (its property), `index` tells array elements apart.
 */
export function sampleSchema(schema: Json, label: string, index: number, depth: number): Json {
  if (!isObject(schema) || depth > 8) return null;
  if ('const' in schema) return schema['const']!;
  if (Array.isArray(schema['enum']) && schema['enum'].length > 0) return schema['enum'][index % schema['enum'].length]!;
  if ('default' in schema && depth > 0) return schema['default']!;
  for (const k of ['oneOf', 'anyOf'] as const) {
    const alts = schema[k];
    if (Array.isArray(alts)) {
      const pick = alts.find((a) => !(isObject(a) && a['type'] === 'null')) ?? alts[0];
      if (pick !== undefined) return sampleSchema({ ...schema, [k]: undefined, ...(pick as JsonObject) } as Json, label, index, depth + 1);
    }
  }
  if (Array.isArray(schema['allOf'])) {
    const merged: Record<string, Json> = {};
    for (const part of schema['allOf']) {
      const v = sampleSchema(part, label, index, depth + 1);
      if (isObject(v)) Object.assign(merged, v);
    }
    return merged;
  }
  const declared = schema['type'];
  const type = Array.isArray(declared) ? (declared.find((t) => t !== 'null') ?? declared[0]) : declared;
  switch (type ?? (isObject(schema['properties']) ? 'object' : isObject(schema['items']) ? 'array' : undefined)) {
    case 'object': {
      const out: Record<string, Json> = {};
      const props = isObject(schema['properties']) ? schema['properties'] : {};
      for (const [k, v] of Object.entries(props)) setKey(out, k, sampleSchema(v, k, index, depth + 1));
      const required = Array.isArray(schema['required']) ? schema['required'].filter((k): k is string => typeof k === 'string') : [];
      for (const k of required) if (!Object.prototype.hasOwnProperty.call(out, k)) setKey(out, k, sampleSchema(extraSchema(schema), k, index, depth + 1));
      return out;
    }
    case 'array': {
      const n = Math.max(2, typeof schema['minItems'] === 'number' ? schema['minItems'] : 0);
      const max = typeof schema['maxItems'] === 'number' ? schema['maxItems'] : Infinity;
      return Array.from({ length: Math.min(n, max, 50) }, (_, i) => sampleSchema(schema['items'] ?? {}, label, i, depth + 1));
    }
    case 'string': {
      if (schema['format'] === 'date-time') return new Date(Date.UTC(2026, 0, 1 + index)).toISOString();
      if (schema['format'] === 'date') return new Date(Date.UTC(2026, 0, 1 + index)).toISOString().slice(0, 10);
      if (schema['format'] === 'uri' || schema['format'] === 'url') return `https://example.com/${label || 'item'}-${index + 1}`;
      if (schema['format'] === 'email') return `${label || 'someone'}-${index + 1}@example.com`;
      const s = `${label || 'sample'}-${index + 1}`;
      const min = typeof schema['minLength'] === 'number' ? schema['minLength'] : 0;
      return s.length >= min ? s : s.padEnd(min, 'x');
    }
    case 'integer':
    case 'number': {
      const min = typeof schema['minimum'] === 'number' ? schema['minimum'] : typeof schema['exclusiveMinimum'] === 'number' ? schema['exclusiveMinimum'] + 1 : 1;
      const max = typeof schema['maximum'] === 'number' ? schema['maximum'] : Infinity;
      const v = Math.min(max, min + index);
      return type === 'integer' ? Math.ceil(v) : v;
    }
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return {};
  }
}

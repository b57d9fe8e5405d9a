/**
 * The provider port of LLM agents: an AI SDK `LanguageModelV3` (the interface every AI SDK 6
 * provider implements, and Baton's scripted provider too) plus what Baton needs to know about it:
 * which native structured output it has. The enforcement loop drives `doGenerate` itself, so retries,
 * tool calls, re-prompts and cost are Baton's, the same for every provider.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';
import { isPlainObject } from '../../core/json.js';

/**
 * - `openai-strict`: OpenAI's `response_format: json_schema, strict: true` (a subset of JSON Schema:
 *   every property required, closed objects, a short keyword list);
 * - `anthropic`: Anthropic tool use / output format (the root must be an object);
 * - `none`: prompting only.
 */
export type StructuredOutput = 'openai-strict' | 'anthropic' | 'none';

/**
 * An AI SDK `LanguageModelV3`, as far as Baton's published types name it: the full interface lives
 * in `@ai-sdk/provider`, whose types a consumer may not have (they need `@types/json-schema`).
 * Every AI SDK 6 provider's model fits it.
 */
export interface LanguageModelLike {
  readonly specificationVersion: 'v3';
  readonly provider: string;
  readonly modelId: string;
  doGenerate(options: never): PromiseLike<unknown>;
}

export interface LlmProvider {
  /** `openai`, `anthropic`, `openai-compatible`, `scripted`. */
  readonly name: string;
  /** A `LanguageModelV3` (see asModel). */
  readonly model: LanguageModelLike;
  readonly structuredOutput: StructuredOutput;
  /** Provider options sent with a native structured-output call (`LanguageModelV3CallOptions['providerOptions']`). */
  nativeOptions?(): Record<string, Record<string, unknown>> | undefined;
}

/** @internal The provider's model as the AI SDK interface it is. */
export function asModel(p: LlmProvider): LanguageModelV3 {
  return p.model as unknown as LanguageModelV3;
}

/** @internal The provider's native options as the AI SDK types them. */
export function nativeOptionsOf(p: LlmProvider): LanguageModelV3CallOptions['providerOptions'] {
  return p.nativeOptions?.() as LanguageModelV3CallOptions['providerOptions'];
}

export type NativePlan = { native: true; schema: Record<string, unknown> } | { native: false; reason: string };

/** Whether the provider can enforce `schema` natively, and the schema to send (stricter, never looser). */
export function planNative(kind: StructuredOutput, schema: Record<string, unknown>): NativePlan {
  switch (kind) {
    case 'none':
      return { native: false, reason: 'the provider has no native structured output' };
    case 'anthropic':
      return schema['type'] === 'object' ? { native: true, schema } : { native: false, reason: 'the schema root is not an object (tool input must be one)' };
    case 'openai-strict': {
      if (schema['type'] !== 'object') return { native: false, reason: 'the schema root is not an object' };
      const why: string[] = [];
      const strict = toStrict(schema, '$', why, 0);
      return why.length === 0 ? { native: true, schema: strict as Record<string, unknown> } : { native: false, reason: why.slice(0, 3).join('; ') };
    }
  }
}

/** Keywords OpenAI's strict mode accepts. Anything else sends the schema back to prompting. */
const STRICT_KEYWORDS = new Set([
  '$schema', '$defs', 'definitions', '$ref', 'type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf',
  'description', 'title', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minItems', 'maxItems',
]);

function toStrict(node: unknown, at: string, why: string[], depth: number): unknown {
  // `true` / `false` as a schema (`properties: {x: true}`, `items: true`): strict mode takes schema objects only
  if (typeof node === 'boolean') why.push(`${at}: a boolean schema (\`${node}\`) is outside OpenAI's strict subset`);
  if (!isPlainObject(node)) return node;
  if (depth > 20) {
    why.push(`${at}: too deep`);
    return node;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (!STRICT_KEYWORDS.has(k)) {
      why.push(`${at}: \`${k}\` is outside OpenAI's strict subset`);
      continue;
    }
    if (k === 'properties' && isPlainObject(v)) out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, toStrict(s, `${at}.${p}`, why, depth + 1)]));
    else if ((k === '$defs' || k === 'definitions') && isPlainObject(v)) out[k] = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, toStrict(s, `#${k}/${p}`, why, depth + 1)]));
    else if (k === 'items') {
      // draft-07's tuple form (`items: [{...}, {...}]`) is not a schema strict mode accepts
      if (Array.isArray(v)) why.push(`${at}: tuple \`items\` (a list of schemas) are outside OpenAI's strict subset`);
      out[k] = toStrict(v, `${at}[]`, why, depth + 1);
    }
    else if (k === 'anyOf' && Array.isArray(v)) out[k] = v.map((s, i) => toStrict(s, `${at}|${i}`, why, depth + 1));
    else out[k] = v;
  }
  const types = Array.isArray(node['type']) ? (node['type'] as unknown[]) : [node['type']];
  const isObject = types.includes('object') || isPlainObject(node['properties']);
  // a free-form value cannot be closed: `{type: object}` (or `properties: {}` left open, or a nullable
  // `[object, null]`) closed allows only {}, and strict mode needs `items` for an array and a type (or a
  // $ref, anyOf, enum, const) for every value
  const props = isPlainObject(node['properties']) ? Object.keys(node['properties']) : undefined;
  if (isObject && (props === undefined || (props.length === 0 && node['additionalProperties'] !== false))) why.push(`${at}: a free-form object (no properties) is outside OpenAI's strict subset`);
  if (types.includes('array') && node['items'] === undefined) why.push(`${at}: an array without \`items\` is outside OpenAI's strict subset`);
  if (!['type', '$ref', 'anyOf', 'enum', 'const'].some((k) => k in node)) why.push(`${at}: a value of any type is outside OpenAI's strict subset`);
  if (isObject) {
    const req = new Set(Array.isArray(node['required']) ? node['required'] : []);
    const optional = (props ?? []).filter((p) => !req.has(p));
    if (optional.length > 0) why.push(`${at}: optional properties (${optional.slice(0, 3).join(', ')}) are outside OpenAI's strict subset`);
    const ap = node['additionalProperties'];
    if (ap !== undefined && ap !== false) why.push(`${at}: open objects (additionalProperties) are outside OpenAI's strict subset`);
    // closing an object the schema left open is stricter, never looser: what comes back still fits the full schema
    out['additionalProperties'] = false;
  }
  return out;
}

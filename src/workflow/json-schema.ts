/**
 * Blueprint JSON Schemas (`parameters_schema`, `output_schema`): compiled once with ajv (draft-07
 * unless `$schema` names 2020-12), validated without coercion, and every error reported in the
 * agent-output-schema spec's form: a JSON path (`$.comments[2].severity`) and a message
 * (`'critical' is not one of ['low', 'medium', 'high']`), plus what was expected and received.
 */
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { ajv2020 } from '../core/ajv.js';
import { isPlainObject, jsonTypeOf } from '../core/json.js';
import type { Path } from '../core/path.js';

// draft-07 (a schema that says so) loads its own Ajv class on first use; 2020-12 is the default
const draft7Ajv = (): typeof Ajv => (createRequire(import.meta.url)('ajv') as typeof import('ajv')).Ajv;

/** One validation error, as the spec's `validation_errors` carry it. */
export interface SchemaError {
  /** JSON path from the value's root: `$`, `$.comments[2].severity`. */
  path: string;
  message: string;
  /** What the schema wanted (`one of ['low', 'high']`, `number`, `a property 'summary'`). */
  expected?: string;
  /** What the value had (`'critical'`, `string`, `nothing`). */
  received?: string;
}

/** A compiled schema: `validate` returns every error, `[]` when the value fits. */
export interface SchemaValidator {
  readonly schema: Record<string, unknown>;
  readonly draft: 'draft-07' | '2020-12';
  validate(value: unknown): SchemaError[];
  /** Fast path: no error objects built. */
  check(value: unknown): boolean;
}

/** A problem with a schema itself: where in the schema (a path from its root) and what. */
export interface SchemaProblem {
  path: Path;
  message: string;
}

export type SchemaCompileResult = { ok: true; validator: SchemaValidator } | { ok: false; problems: SchemaProblem[] };

const DRAFT_2020 = /json-schema\.org\/draft\/2020-12\/schema/;

/**
 * Compiles schemas, once each (keyed by their JSON text). One per engine or validator pass: no
 * process-wide registry, so two engines never share ajv state.
 */
export class SchemaCompiler {
  private draft7: Ajv | undefined;
  private draft2020: Ajv2020 | undefined;
  private readonly cache = new Map<string, SchemaCompileResult>();

  compile(schema: unknown): SchemaCompileResult {
    if (typeof schema === 'boolean') schema = schema ? {} : { not: {} };
    if (!isPlainObject(schema)) return { ok: false, problems: [{ path: [], message: `a schema must be a mapping (JSON Schema object), got ${describeType(schema)}` }] };
    let key: string;
    try {
      key = JSON.stringify(schema);
    } catch {
      return { ok: false, problems: [{ path: [], message: 'the schema is not JSON' }] };
    }
    const hit = this.cache.get(key);
    if (hit) return hit;
    const result = this.build(schema);
    this.cache.set(key, result);
    return result;
  }

  private build(schema: Record<string, unknown>): SchemaCompileResult {
    const is2020 = typeof schema['$schema'] === 'string' && DRAFT_2020.test(schema['$schema']);
    const ajv = is2020 ? (this.draft2020 ??= new (ajv2020())(AJV_OPTIONS)) : (this.draft7 ??= new (draft7Ajv())(AJV_OPTIONS));
    const body = { ...schema };
    // draft-07 is the default: a `$schema` naming draft-07 (or nothing) is fine; others are dropped so ajv does not look them up
    if (!is2020 && typeof body['$schema'] === 'string' && !/draft-07/.test(body['$schema'])) delete body['$schema'];
    if (!ajv.validateSchema(body)) {
      // the meta-schema reports one mistake several ways (enum, anyOf branches): keep the first per place
      const seen = new Set<string>();
      const errs = (ajv.errors ?? []).filter((e) => !seen.has(e.instancePath) && seen.add(e.instancePath));
      return { ok: false, problems: errs.map((e) => ({ path: pointerToPath(e.instancePath), message: `${e.instancePath === '' ? 'schema' : `\`${e.instancePath.slice(1).replace(/\//g, '.')}\``} ${e.message ?? 'is invalid'}${describeParams(e)}` })) };
    }
    let fn: ValidateFunction;
    try {
      fn = ajv.compile(body);
    } catch (e) {
      // an unresolvable `$ref` (ajv's MissingRefError names it): point at the `$ref` that holds it
      const missing = (e as { missingRef?: unknown }).missingRef;
      const at = typeof missing === 'string' ? refPath(body, missing) : undefined;
      return { ok: false, problems: [{ path: at ?? [], message: (e as Error).message }] };
    }
    const validator: SchemaValidator = {
      schema,
      draft: is2020 ? '2020-12' : 'draft-07',
      check: (value) => fn(value),
      validate: (value) => {
        if (fn(value)) return [];
        // ajv keeps the last errors on the function: copy them out at once (STYLE: no shared state)
        return formatErrors((fn.errors ?? []), value);
      },
    };
    return { ok: true, validator };
  }
}

/** The path of the first `$ref` whose value is `ref` (or ends in it: ajv resolves it against the base id). */
function refPath(schema: unknown, ref: string): (string | number)[] | undefined {
  const stack: { v: unknown; path: (string | number)[] }[] = [{ v: schema, path: [] }];
  for (let n = 0; stack.length > 0 && n < 100_000; n++) {
    const { v, path } = stack.pop()!;
    if (Array.isArray(v)) v.forEach((x, i) => stack.push({ v: x, path: [...path, i] }));
    else if (isPlainObject(v)) {
      const r = v['$ref'];
      if (typeof r === 'string' && r !== '' && (r === ref || ref.endsWith(r))) return [...path, '$ref'];
      for (const [k, x] of Object.entries(v)) stack.push({ v: x, path: [...path, k] });
    }
  }
  return undefined;
}

const AJV_OPTIONS = { allErrors: true, strict: false, validateFormats: false, logger: false } as const;

function describeParams(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  if (e.keyword === 'enum' && Array.isArray(p['allowedValues'])) return ` (${p['allowedValues'].map((v) => repr(v)).join(', ')})`;
  if (e.keyword === 'type' && p['type'] !== undefined) return '';
  return '';
}

/** JSON Pointer (`/comments/2/severity`) to path segments (numbers for digit-only segments). */
export function pointerToPath(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^(0|[1-9]\d*)$/.test(s) ? Number(s) : s));
}

/**
 * Path segments to the path the agent output schema spec's reference validator reports: `$` for the root,
 * else `$.` and the segments joined by dots, indices included (`$.comments.2.severity`; a key is written
 * as it is). A re-prompt lists the errors by it, and `output_schema_validation_failed` details carry it.
 */
export function jsonPath(path: readonly (string | number)[]): string {
  return path.length === 0 ? '$' : `$.${path.join('.')}`;
}

/** A value as the spec's messages show it (Python-like: single-quoted strings), cut when long. */
export function repr(v: unknown, max = 80): string {
  let s: string;
  if (typeof v === 'string') s = `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  else if (Array.isArray(v)) s = `[${v.map((x) => repr(x, max)).join(', ')}]`;
  else if (v === undefined) s = 'nothing';
  else {
    try {
      s = JSON.stringify(v) ?? typeof v;
    } catch {
      s = typeof v;
    }
  }
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

function describeType(v: unknown): string {
  const t = jsonTypeOf(v);
  return t === 'object' ? 'an object' : t === 'array' ? 'an array' : t;
}

/** The value at a path of keys and indexes (undefined where the path leaves the value). */
export function valueAt(root: unknown, path: readonly (string | number)[]): unknown {
  let v = root;
  for (const seg of path) {
    // own keys only: a `__proto__` or `constructor` key of the data is data, never the prototype's
    if (v === null || typeof v !== 'object' || !Object.prototype.hasOwnProperty.call(v, seg)) return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

/** ajv errors to the spec's form. Branch noise of `anyOf`/`oneOf` is kept: the model needs every hint. */
export function formatErrors(errors: readonly ErrorObject[], root: unknown): SchemaError[] {
  const out: SchemaError[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    const path = pointerToPath(e.instancePath);
    // under `propertyNames` the value an inner keyword (pattern, maxLength) judged is a key, not the object
    const name = (e as { propertyName?: unknown }).propertyName;
    const value = typeof name === 'string' && e.keyword !== 'propertyNames' ? name : valueAt(root, path);
    const p = e.params as Record<string, unknown>;
    let err: SchemaError;
    switch (e.keyword) {
      case 'required': {
        const name = String(p['missingProperty']);
        err = { path: jsonPath(path), message: `${repr(name)} is a required property`, expected: `a property ${repr(name)}`, received: 'nothing' };
        break;
      }
      case 'enum': {
        const allowed = Array.isArray(p['allowedValues']) ? p['allowedValues'] : [];
        err = { path: jsonPath(path), message: `${repr(value)} is not one of ${repr(allowed, 400)}`, expected: `one of ${repr(allowed, 400)}`, received: repr(value) };
        break;
      }
      case 'const':
        err = { path: jsonPath(path), message: `${repr(p['allowedValue'])} was expected`, expected: repr(p['allowedValue']), received: repr(value) };
        break;
      case 'type': {
        const want = Array.isArray(p['type']) ? (p['type'] as unknown[]).join(' or ') : String(p['type']);
        err = { path: jsonPath(path), message: `${repr(value)} is not of type ${repr(want)}`, expected: want, received: jsonTypeOf(value) };
        break;
      }
      case 'additionalProperties': {
        const extra = String(p['additionalProperty']);
        err = { path: jsonPath(path), message: `Additional properties are not allowed (${repr(extra)} was unexpected)`, expected: 'no other properties', received: `a property ${repr(extra)}` };
        break;
      }
      // bounds as the spec's example words them (`$.count: -5 is less than minimum 0`), what was expected readable
      case 'minimum':
      case 'maximum':
      case 'exclusiveMinimum':
      case 'exclusiveMaximum': {
        const limit = repr(p['limit']);
        const words = { minimum: ['is less than minimum', '>='], maximum: ['is greater than maximum', '<='], exclusiveMinimum: ['is less than or equal to exclusive minimum', '>'], exclusiveMaximum: ['is greater than or equal to exclusive maximum', '<'] }[e.keyword];
        err = { path: jsonPath(path), message: `${repr(value)} ${words[0]} ${limit}`, expected: `a number ${words[1]} ${limit}`, received: repr(value) };
        break;
      }
      case 'minLength':
      case 'minItems':
      case 'maxLength':
      case 'maxItems': {
        const min = e.keyword.startsWith('min');
        const unit = e.keyword.endsWith('Length') ? 'characters' : 'items';
        err = { path: jsonPath(path), message: `${repr(value)} is too ${min ? 'short' : 'long'}`, expected: `${min ? 'at least' : 'at most'} ${repr(p['limit'])} ${unit}`, received: repr(value) };
        break;
      }
      case 'pattern':
        err = { path: jsonPath(path), message: `${repr(value)} does not match ${repr(p['pattern'])}`, expected: `a string matching ${repr(p['pattern'])}`, received: repr(value) };
        break;
      case 'multipleOf':
        err = { path: jsonPath(path), message: `${repr(value)} is not a multiple of ${repr(p['multipleOf'])}`, expected: `a multiple of ${repr(p['multipleOf'])}`, received: repr(value) };
        break;
      // the rest in the spec's (Python jsonschema's) words too, with what was expected readable: ajv's own
      // words and params (`must NOT have fewer than 2 properties`, `minProperties {"limit":2}`) reached the model
      case 'minProperties':
      case 'maxProperties': {
        const min = e.keyword === 'minProperties';
        const n = isPlainObject(value) ? Object.keys(value).length : 0;
        err = { path: jsonPath(path), message: `${repr(value)} ${min ? 'does not have enough properties' : 'has too many properties'}`, expected: `${min ? 'at least' : 'at most'} ${repr(p['limit'])} properties`, received: `${n} ${n === 1 ? 'property' : 'properties'}` };
        break;
      }
      case 'uniqueItems':
        err = { path: jsonPath(path), message: `${repr(value)} has non-unique elements`, expected: 'unique items', received: `items ${repr(p['j'])} and ${repr(p['i'])} are equal` };
        break;
      case 'dependencies':
      case 'dependentRequired': {
        const need = repr(String(p['missingProperty']));
        const given = repr(String(p['property']));
        err = { path: jsonPath(path), message: `${need} is a dependency of ${given}`, expected: `a property ${need} (required with ${given})`, received: 'nothing' };
        break;
      }
      case 'additionalItems':
        err = { path: jsonPath(path), message: `Additional items are not allowed (${repr(value)} has more than ${repr(p['limit'])})`, expected: `at most ${repr(p['limit'])} items`, received: repr(value) };
        break;
      case 'anyOf':
        err = { path: jsonPath(path), message: `${repr(value)} is not valid under any of the given schemas`, expected: 'a value matching one of the `anyOf` schemas (see the errors above)', received: repr(value) };
        break;
      case 'oneOf': {
        const passing = Array.isArray(p['passingSchemas']) ? (p['passingSchemas'] as unknown[]) : undefined;
        err = passing
          ? { path: jsonPath(path), message: `${repr(value)} is valid under more than one of the given schemas (${passing.join(' and ')})`, expected: 'a value matching exactly one of the `oneOf` schemas', received: `a value matching ${passing.length} of them` }
          : { path: jsonPath(path), message: `${repr(value)} is not valid under any of the given schemas`, expected: 'a value matching exactly one of the `oneOf` schemas (see the errors above)', received: repr(value) };
        break;
      }
      case 'not':
        err = { path: jsonPath(path), message: `${repr(value)} should not be valid under the \`not\` schema`, expected: 'a value the `not` schema rejects', received: repr(value) };
        break;
      case 'contains':
        err = { path: jsonPath(path), message: `${repr(value)} does not contain items matching the given schema`, expected: `at least ${repr(p['minContains'] ?? 1)} item${p['minContains'] === 1 || p['minContains'] === undefined ? '' : 's'} matching the \`contains\` schema`, received: repr(value) };
        break;
      case 'propertyNames':
        err = { path: jsonPath(path), message: `property name ${repr(String(p['propertyName']))} is invalid`, expected: 'property names matching the `propertyNames` schema', received: repr(String(p['propertyName'])) };
        break;
      default:
        err = { path: jsonPath(path), message: `${repr(value)} ${e.message ?? 'is invalid'}`, expected: `${e.keyword} ${JSON.stringify(p)}`, received: repr(value) };
    }
    const k = `${err.path}\u0000${err.message}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(err);
  }
  return out;
}

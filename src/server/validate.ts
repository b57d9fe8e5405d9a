/**
 * Request validation: each route's schemas (schemas.ts) compiled once with ajv, and ajv's errors
 * turned into issues a caller can act on (`{path, message}`), never ajv's own objects. Query
 * parameters arrive as strings and are coerced to the schema's types; bodies are not coerced.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { ajv2020 } from '../core/ajv.js';
import type { RouteSpec, Schema } from './schemas.js';

export interface Issue {
  /** JSON Pointer into the body (or `?name` for a query parameter, `/name` for a path parameter). */
  path: string;
  message: string;
}

export interface RouteValidators {
  params?: ValidateFunction;
  /** The query's issues (none: valid), its numbers coerced in place. */
  query?: (query: Record<string, unknown>) => Issue[];
  body?: ValidateFunction;
}

/** The two ajv instances an app's routes are compiled with (bodies as they are; queries coerced from strings). */
export interface RouteCompiler {
  plain: InstanceType<ReturnType<typeof ajv2020>>;
  coercing: InstanceType<ReturnType<typeof ajv2020>>;
}

/**
 * One pair for all the routes of an app: each ajv instance compiles the 2020-12 meta-schema the first
 * time it checks a schema (about 30 ms), and an instance per route made `baton serve` spend 2.5 s of CPU
 * starting up, all of it before the port opened.
 */
export function routeCompiler(): RouteCompiler {
  const Ajv = ajv2020();
  return {
    plain: new Ajv({ allErrors: true, strict: true, strictRequired: false }),
    coercing: new Ajv({ allErrors: true, strict: true, coerceTypes: true, strictRequired: false }),
  };
}

export function compileRoute(spec: RouteSpec, compiler: RouteCompiler = routeCompiler()): RouteValidators {
  const { plain, coercing } = compiler;
  const out: RouteValidators = {};
  if (spec.params) out.params = plain.compile({ type: 'object', properties: spec.params, required: Object.keys(spec.params) });
  if (spec.query) {
    const schema = spec.query;
    const v = coercing.compile(schema);
    const numeric = numericProperties(schema);
    out.query = (query) => {
      const written = numberSyntax(query, numeric);
      if (written.length > 0) return written;
      return v(query) ? [] : issuesOf(v.errors, 'query', schema);
    };
  }
  if (spec.body) out.body = plain.compile(spec.body);
  return out;
}

/** ajv's errors as issues: one per problem, the most useful message first (a oneOf of `required` branches says which fields). */
export function issuesOf(errors: readonly ErrorObject[] | null | undefined, where: 'body' | 'query' | 'params', schema?: Schema): Issue[] {
  const out: Issue[] = [];
  const seen = new Set<string>();
  const add = (i: Issue): void => {
    const k = `${i.path} ${i.message}`;
    if (seen.has(k)) return;
    out.push(i);
    seen.add(k);
  };
  const errs = errors ?? [];
  const hasOneOf = errs.some((e) => e.keyword === 'oneOf' && e.instancePath === '');
  for (const e of errs) {
    const path = where === 'query' ? queryPath(e) : where === 'params' ? `/${(e.instancePath.split('/')[1] ?? '') || String(e.params['missingProperty'] ?? '')}` : e.instancePath;
    switch (e.keyword) {
      case 'additionalProperties':
        add({ path: where === 'query' ? `?${String(e.params['additionalProperty'])}` : `${e.instancePath}/${String(e.params['additionalProperty'])}`, message: `unknown ${where === 'query' ? 'query parameter' : 'field'} \`${String(e.params['additionalProperty'])}\`${known(schema, e.instancePath)}` });
        break;
      case 'required':
        // the branches of a oneOf of `required` are said once, by the oneOf below
        if (hasOneOf && e.schemaPath.startsWith('#/oneOf/')) break;
        add({ path, message: `\`${String(e.params['missingProperty'])}\` is required` });
        break;
      case 'not':
        // a oneOf branch that forbids a field (`/input`: question or input): said once, by the oneOf below; ajv's "must NOT be valid" says nothing
        if (hasOneOf && e.schemaPath.startsWith('#/oneOf/')) break;
        add({ path, message: e.message ?? e.keyword });
        break;
      case 'oneOf': {
        const branches = (schema?.['oneOf'] as { required?: string[] }[] | undefined)?.map((b) => b.required?.[0]).filter((x): x is string => x !== undefined) ?? [];
        add({ path, message: branches.length > 0 ? `give exactly one of ${branches.map((b) => `\`${b}\``).join(' and ')}` : 'matches more or fewer than one of the allowed forms' });
        break;
      }
      case 'type':
        add({ path, message: `must be ${String(e.params['type']).replace(',', ' or ')}` });
        break;
      case 'pattern': {
        // a list of known words (a status filter) says which words it knows
        const said = where === 'query' ? propertyOf(schema, path.slice(1))?.['description'] : undefined;
        add({ path, message: typeof said === 'string' && said.startsWith('comma-separated') ? `must be ${said}` : `has characters or a form that are not allowed (${e.params['pattern'] as string})` });
        break;
      }
      default:
        add({ path, message: e.message ?? e.keyword });
    }
  }
  return out;
}

/** The query parameters a route takes as numbers (`number` or `integer`). */
function numericProperties(schema: Schema): string[] {
  const props = schema['properties'];
  if (!props || typeof props !== 'object' || Array.isArray(props)) return [];
  return Object.entries(props as Record<string, Schema>)
    .filter(([, s]) => s['type'] === 'number' || s['type'] === 'integer')
    .map(([k]) => k);
}

const DECIMAL = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * A number in a query is written in decimal and is finite. ajv's coercion takes whatever `Number()`
 * takes (`0x10`, ` 7`, `Infinity`, `1e400`), and its range keywords let Infinity through: `limit=1e400`
 * reached the store as a limit it refused (a 503), `wait=Infinity` answered at once.
 */
function numberSyntax(query: Record<string, unknown>, numeric: readonly string[]): Issue[] {
  const out: Issue[] = [];
  for (const k of numeric) {
    const v = query[k];
    if (typeof v !== 'string') continue;
    if (!DECIMAL.test(v)) out.push({ path: `?${k}`, message: `must be a decimal number, got \`${v.slice(0, 40)}\`` });
    else if (!Number.isFinite(Number(v))) out.push({ path: `?${k}`, message: `must be a finite number, got \`${v.slice(0, 40)}\`` });
  }
  return out;
}

function queryPath(e: ErrorObject): string {
  const name = e.instancePath.split('/')[1] ?? String(e.params['missingProperty'] ?? '');
  return `?${name}`;
}

function propertyOf(schema: Schema | undefined, name: string): Schema | undefined {
  const props = schema?.['properties'];
  if (!props || typeof props !== 'object' || Array.isArray(props)) return undefined;
  return (props as Record<string, Schema>)[name];
}

function known(schema: Schema | undefined, at: string): string {
  if (at !== '' || !schema) return '';
  const props = schema['properties'];
  if (!props || typeof props !== 'object' || Array.isArray(props)) return '';
  const names = Object.keys(props);
  return names.length > 0 ? ` (known: ${names.join(', ')})` : '';
}

/**
 * A small declarative checker for the document's structure: each field's JSON shape, required
 * fields, enums, bounds, and unknown keys (warnings with "did you mean"; `x-` keys are extensions).
 * It only reports; the model builder reads the same value afterwards and trusts what passed.
 */
import { isPlainObject, jsonTypeOf } from '../core/json.js';
import type { Path } from '../core/path.js';
import { didYouMean } from '../core/suggest.js';
import { error, warning, type Diagnostic } from '../diagnostics/diagnostic.js';
import { wrongTypeHint } from '../diagnostics/hints.js';

export type Shape =
  | { t: 'string'; nonEmpty?: boolean; timestamp?: boolean; url?: boolean }
  | { t: 'number'; min?: number; exclusiveMin?: boolean; max?: number; integer?: boolean }
  | { t: 'boolean' }
  | { t: 'enum'; values: readonly string[] }
  | { t: 'list'; of: Shape }
  | { t: 'object'; fields: Readonly<Record<string, Field>>; what?: string }
  | { t: 'map'; of: Shape }
  | { t: 'any' }
  /** The first alternative whose JSON type fits is checked; otherwise a wrong-type listing them all. */
  | { t: 'union'; options: readonly Shape[] }
  | { t: 'custom'; expected: string; check: (value: unknown, path: Path, out: Diagnostic[]) => void };

export type Field = Shape & { required?: boolean };

export function describeShape(s: Shape): string {
  switch (s.t) {
    case 'string':
      return 'a string';
    case 'number':
      return s.integer ? 'an integer' : 'a number';
    case 'boolean':
      return 'a boolean';
    case 'enum':
      return `one of ${s.values.map((v) => `\`${v}\``).join(', ')}`;
    case 'list':
      return 'a list';
    case 'object':
    case 'map':
      return 'a mapping';
    case 'any':
      return 'any value';
    case 'union':
      return s.options.map(describeShape).join(' or ');
    case 'custom':
      return s.expected;
  }
}

/** The items of a list of `s`: `strings`, `mappings`; `values` for any value or JSON data (never `JSON datas`). */
function plural(s: Shape): string {
  switch (s.t) {
    case 'enum':
      return `values among ${s.values.map((v) => `\`${v}\``).join(', ')}`;
    case 'any':
    case 'custom':
      return 'values';
    case 'union':
      return s.options.map(plural).join(' or ');
    default:
      return `${describeShape(s).replace(/^an? /, '')}s`;
  }
}

function jsonKind(s: Shape): string | undefined {
  switch (s.t) {
    case 'string':
    case 'enum':
      return 'string';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'list':
      return 'array';
    case 'object':
    case 'map':
      return 'object';
    default:
      return undefined;
  }
}

function hintFor(value: unknown, shape: Shape): string | undefined {
  switch (shape.t) {
    case 'string':
      return wrongTypeHint(value, 'string');
    case 'enum':
      return value === null ? wrongTypeHint(value, 'string') : `use ${describeShape(shape)}`;
    case 'number':
      return wrongTypeHint(value, shape.integer ? 'integer' : 'number');
    case 'boolean':
      return wrongTypeHint(value, 'boolean');
    case 'list':
      return wrongTypeHint(value, 'list');
    case 'object':
      // a file entry written as its path (`o: out/b.md`)
      if (typeof value === 'string' && shape.fields['path']?.required === true) return `write the path as an entry: \`{path: ${/^[\p{L}\p{N}_./<>-]+$/u.test(value) ? value : JSON.stringify(value)}}\``;
      return wrongTypeHint(value, 'mapping');
    case 'map':
      return wrongTypeHint(value, 'mapping');
    case 'union': {
      // the hint of the first alternative that has one (`retry: {max_attempts: "3"}` in a number-or-mapping field)
      for (const o of shape.options) {
        const h = hintFor(value, o);
        if (h) return h;
      }
      return undefined;
    }
    case 'any':
    case 'custom':
      return value === null ? wrongTypeHint(value, 'string') : undefined;
  }
}

function actualName(value: unknown): string {
  const t = jsonTypeOf(value);
  return t === 'object' ? 'a mapping' : t === 'array' ? 'a list' : t === 'null' ? 'empty (null)' : `a ${t}`;
}

function wrongType(value: unknown, shape: Shape, path: Path, expected: string, out: Diagnostic[]): void {
  // `depends_on: a` in phase `a`: the list `[a]` would be a cycle, not a fix
  const selfDependency = path.length === 3 && path[0] === 'workflow' && path[2] === 'depends_on' && value === path[1];
  const hint = selfDependency ? `a phase cannot depend on itself: list the phases \`${String(path[1])}\` waits for (\`[other]\`), or remove \`depends_on\`` : hintFor(value, shape);
  out.push(error('wrong-type', path, `expected ${expected}, got ${actualName(value)}`, hint ? { hint } : {}));
}

/**
 * Whether `value` fits `shape` with nothing to report, said without building a path: the common
 * case (a phase's strings, a list of names), which a 10,000-phase file meets some 10^5 times.
 * False means only "check it": `checkShape` decides.
 */
function plainlyFits(value: unknown, shape: Shape): boolean {
  switch (shape.t) {
    case 'any':
      return true;
    case 'string':
      return typeof value === 'string' && !shape.timestamp && !shape.url && (!shape.nonEmpty || value.trim() !== '');
    case 'boolean':
      return typeof value === 'boolean';
    case 'enum':
      return typeof value === 'string' && shape.values.includes(value);
    case 'map':
      return shape.of.t === 'any' && isPlainObject(value);
    case 'list': {
      if (!Array.isArray(value)) return false;
      for (const item of value as unknown[]) if (!plainlyFits(item, shape.of)) return false;
      return true;
    }
    case 'union': {
      // the alternative checkShape would take
      const kind = jsonTypeOf(value);
      for (const option of shape.options) {
        const k = jsonKind(option);
        if (k === kind || (k === undefined && option.t !== 'custom')) return plainlyFits(value, option);
      }
      return false;
    }
    default:
      return false;
  }
}

export function checkShape(value: unknown, shape: Shape, path: Path, out: Diagnostic[]): void {
  switch (shape.t) {
    case 'any':
      return;
    case 'string':
      if (typeof value !== 'string') return wrongType(value, shape, path, 'a string', out);
      if (shape.nonEmpty && value.trim() === '') out.push(error('invalid-value', path, 'must not be empty', { hint: (shape as Field).required ? `give it a value${exampleOf(path.at(-1))}` : 'give it a value, or remove the key' }));
      if (shape.timestamp && !isIsoTimestamp(value)) out.push(error('invalid-value', path, `\`${value}\` is not an ISO 8601 timestamp`, { hint: 'write it as `2026-12-31T00:00:00Z` (or a date: `2026-12-31`)' }));
      if (shape.url && value.trim() !== '' && !isHttpUrl(value)) out.push(error('invalid-value', path, `\`${value}\` is not an http(s) URL`, { hint: 'write it as `http://localhost:11434/v1` (scheme, host, and the API\'s version path)' }));
      return;
    case 'boolean':
      if (typeof value !== 'boolean') wrongType(value, shape, path, 'a boolean (true or false)', out);
      return;
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return wrongType(value, shape, path, shape.integer ? 'an integer' : 'a number', out);
      if (shape.integer && !Number.isInteger(value)) return wrongType(value, shape, path, 'an integer', out);
      if (shape.min !== undefined && (shape.exclusiveMin ? value <= shape.min : value < shape.min))
        out.push(error('invalid-value', path, `must be ${shape.exclusiveMin ? 'greater than' : 'at least'} ${shape.min}, got ${value}`));
      if (shape.max !== undefined && value > shape.max) out.push(error('invalid-value', path, `must be at most ${shape.max}, got ${value}`));
      return;
    }
    case 'enum': {
      if (typeof value !== 'string') return wrongType(value, shape, path, describeShape(shape), out);
      if (!shape.values.includes(value)) {
        const hint = didYouMean(value, shape.values);
        out.push(
          error('invalid-value', path, `\`${value}\` is not ${describeShape(shape)}`, hint ? { hint } : { hint: `use ${describeShape(shape)}` }),
        );
      }
      return;
    }
    case 'list':
      if (!Array.isArray(value)) return wrongType(value, shape, path, `a list of ${plural(shape.of)}`, out);
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        if (!plainlyFits(item, shape.of)) checkShape(item, shape.of, [...path, i], out);
      }
      return;
    case 'map':
      if (!isPlainObject(value)) return wrongType(value, shape, path, 'a mapping', out);
      if (shape.of.t === 'any') return; // nothing to say of any value
      for (const [k, v] of Object.entries(value)) if (!plainlyFits(v, shape.of)) checkShape(v, shape.of, [...path, k], out);
      return;
    case 'object': {
      if (!isPlainObject(value)) return wrongType(value, shape, path, shape.what ?? 'a mapping', out);
      checkObject(value, shape.fields, path, out);
      return;
    }
    case 'union': {
      const kind = jsonTypeOf(value);
      for (const option of shape.options) {
        const k = jsonKind(option);
        if (k === kind || (k === undefined && option.t !== 'custom')) return checkShape(value, option, path, out);
      }
      return wrongType(value, shape, path, describeShape(shape), out);
    }
    case 'custom':
      shape.check(value, path, out);
      return;
  }
}

/** Each field table's entries and names, listed once (the tables are constants; a phase's is read for every phase). */
const tables = new WeakMap<Readonly<Record<string, Field>>, { entries: [string, Field][]; names: string[] }>();

function tableOf(fields: Readonly<Record<string, Field>>): { entries: [string, Field][]; names: string[] } {
  let t = tables.get(fields);
  if (!t) {
    t = { entries: Object.entries(fields), names: Object.keys(fields) };
    tables.set(fields, t);
  }
  return t;
}

export function checkObject(value: Record<string, unknown>, fields: Readonly<Record<string, Field>>, path: Path, out: Diagnostic[]): void {
  const table = tableOf(fields);
  for (const [name, field] of table.entries) {
    const v = value[name];
    // one read per field; an inherited name (`constructor`) is not the document's
    if (v === undefined || !Object.prototype.hasOwnProperty.call(value, name)) {
      if (field.required) out.push(error('missing-field', path, `missing required field \`${name}\``, { target: 'key', hint: `add \`${name}:\`${exampleOf(name)}`, error: 'WorkflowValidationError', data: { field: name } }));
      continue;
    }
    if (v === null && field.required) {
      out.push(error('missing-field', [...path, name], `\`${name}\` must have a value`, { hint: `give it a value${exampleOf(name)}`, error: 'WorkflowValidationError', data: { field: name } }));
      continue;
    }
    if (v === null) continue; // an empty optional field (`description:`) reads as absent
    if (!plainlyFits(v, field)) checkShape(v, field, [...path, name], out);
  }
  reportUnknownKeys(value, table.names, path, out);
}

/** A known key that shares most of its start with `key` (`retries` -> `retry`, `timeout` -> `timeout_ms`), as a hint. */
function samePrefix(key: string, known: readonly string[]): string | undefined {
  const lk = key.toLowerCase();
  let best: string | undefined;
  let bestN = 0;
  for (const k of known) {
    let n = 0;
    while (n < lk.length && n < k.length && lk[n] === k[n]) n++;
    if (n >= 4 && n >= 0.75 * Math.min(lk.length, k.length) && n > bestN) {
      best = k;
      bestN = n;
    }
  }
  return best === undefined ? undefined : `did you mean \`${best}\`?`;
}

/** Examples for the required fields of the 1.0 form and of contracts, for the hint of a missing or empty one. */
const EXAMPLES: Readonly<Record<string, string>> = {
  name: ', e.g. `name: "Research Pipeline"`',
  assign: ', the id of the agent that runs this phase, e.g. `assign: researcher`',
  agent: ', an agent or role id, e.g. `agent: auditor`',
  level: ': `read`, `write` or `admin`',
  filename: ', e.g. `filename: report.pdf`',
  command: ', the program that serves this MCP server, e.g. `command: npx`',
  path: ', a path relative to the workspace, e.g. `path: out/report.md`',
};

function exampleOf(name: string | number | undefined): string {
  return (typeof name === 'string' && Object.prototype.hasOwnProperty.call(EXAMPLES, name) ? EXAMPLES[name] : undefined) ?? '';
}

export function reportUnknownKeys(value: Record<string, unknown>, known: readonly string[], path: Path, out: Diagnostic[]): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key) || key.startsWith('x-')) continue;
    const hint = didYouMean(key, known) ?? samePrefix(key, known);
    out.push(
      warning('unknown-key', [...path, key], `unknown key \`${key}\``, {
        target: 'key',
        hint: hint ?? 'extension keys must start with `x-`',
      }),
    );
  }
}

/** An ISO 8601 date or date-time (`2026-12-31`, `2026-12-31T00:00:00Z`, `...T10:00:00.5+02:00`) that names a real instant. */
function isIsoTimestamp(v: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/.exec(v);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const day = new Date(Date.UTC(y, mo - 1, d));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return false;
  return (m[4] === undefined || Number(m[4]) < 24) && (m[5] === undefined || Number(m[5]) < 60) && (m[6] === undefined || Number(m[6]) < 61);
}

/** An absolute http: or https: URL with a host (what a provider's base URL must be). */
function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

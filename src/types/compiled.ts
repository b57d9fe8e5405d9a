/**
 * A compiled type: JSON Schema 2020-12 (named types in `$defs`), a checker for the fast path (a tree
 * of closures that says yes or no), a precise walker for the slow path (every issue with its JSON
 * Pointer), and a sample builder. Checkers are built lazily, on first use, and cached by the registry
 * per canonical type text, so a 10,000-phase workflow pays for each distinct type once, and only if it
 * is ever validated.
 *
 * The checker answers exactly what the walker does (no issue: true), by construction: each case below
 * mirrors walk's. It was ajv, compiled from the JSON Schema: loading ajv and generating code for the
 * first type took 60-170 ms of a fresh process's first completion (every `baton run`), a few ms for
 * each further type, and ajv's answer could differ from the walker's at the edges (it needed two
 * instances and a fallback for field names such as `constructor` and `__proto__`).
 */
import { isPlainObject, jsonTypeOf, type Json } from '../core/json.js';
import type { CompiledType, TypeNode, ValueIssue } from './api.js';

export interface TypeEnv {
  /** The definition of a named type (always present for names the registry handed out). */
  resolve(name: string): TypeNode;
}

export function typeText(node: TypeNode): string {
  switch (node.kind) {
    case 'primitive':
    case 'named':
      return node.name;
    case 'array': {
      const el = typeText(node.element);
      return node.element.kind === 'nullable' || node.element.kind === 'enum' ? `array<${el}>` : `${el}[]`;
    }
    case 'record':
      return `{${node.fields.map((f) => `${f.name}${f.required ? '' : '?'}: ${typeText(f.type)}`).join(', ')}}`;
    case 'enum':
      return node.values.map((v) => JSON.stringify(v)).join(' | ');
    case 'nullable':
      return `${typeText(node.inner)} | null`;
  }
}

/** Follows named references (and aliases of aliases) to a structural node. Cycles were rejected earlier. */
export function resolveNode(node: TypeNode, env: TypeEnv): TypeNode {
  let n = node;
  for (let i = 0; n.kind === 'named' && i < 1000; i++) n = env.resolve(n.name);
  return n;
}

export class CompiledTypeImpl implements CompiledType {
  readonly text: string;
  private fast: Check | undefined;
  private schema: Record<string, unknown> | undefined;

  constructor(
    readonly node: TypeNode,
    private readonly env: TypeEnv,
  ) {
    this.text = typeText(node);
  }

  check(value: unknown): boolean {
    return (this.fast ??= checkerOf(this.node, this.env, new Map()))(value);
  }

  issues(value: unknown): ValueIssue[] {
    const out: ValueIssue[] = [];
    walk(this.node, value, '', out, this.env);
    return out;
  }

  jsonSchema(): Record<string, unknown> {
    if (this.schema) return this.schema;
    const defs = new Map<string, Record<string, unknown>>();
    const pending: string[] = [];
    const ctx: SchemaContext = {
      ref: (name) => {
        if (!defs.has(name)) {
          defs.set(name, {});
          pending.push(name);
        }
      },
    };
    const root = schemaOf(this.node, ctx);
    while (pending.length > 0) {
      const name = pending.pop()!;
      defs.set(name, schemaOf(this.env.resolve(name), ctx));
    }
    const schema: Record<string, unknown> = { $schema: 'https://json-schema.org/draft/2020-12/schema', ...root };
    if (defs.size > 0) schema['$defs'] = Object.fromEntries([...defs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    this.schema = schema;
    return schema;
  }

  sample(): Json {
    return sampleOf(this.node, this.env, 0, new Map(), false);
  }
}

interface SchemaContext {
  ref(name: string): void;
}

function schemaOf(node: TypeNode, ctx: SchemaContext): Record<string, unknown> {
  switch (node.kind) {
    case 'primitive':
      return node.name === 'any' ? {} : { type: node.name };
    case 'named':
      ctx.ref(node.name);
      return { $ref: `#/$defs/${node.name}` };
    case 'array':
      return { type: 'array', items: schemaOf(node.element, ctx) };
    case 'record': {
      const properties: Record<string, unknown> = {};
      const required: string[] = [];
      for (const f of node.fields) {
        setOwn(properties, f.name, schemaOf(f.type, ctx));
        if (f.required) required.push(f.name);
      }
      return required.length > 0 ? { type: 'object', properties, required } : { type: 'object', properties };
    }
    case 'enum':
      return { enum: [...node.values] };
    case 'nullable': {
      const inner = schemaOf(node.inner, ctx);
      if (Object.keys(inner).length === 0) return inner; // any | null is any
      if (inner['enum']) return { enum: [...(inner['enum'] as Json[]), null] };
      return { anyOf: [inner, { type: 'null' }] };
    }
  }
}

/** True when a value is JSON: plain objects, arrays without holes, finite numbers, strings, booleans, null. */
export function isJsonValue(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || !isJsonValue(value[i])) return false;
        }
        return true;
      }
      if (!isPlainObject(value)) return false;
      for (const k in value) {
        const v = value[k];
        if (v !== undefined && !isJsonValue(v)) return false; // undefined members are absent in JSON
      }
      return true;
    }
    default:
      return false;
  }
}

type Check = (value: unknown) => boolean;

const isString: Check = (v) => typeof v === 'string';
const isBoolean: Check = (v) => typeof v === 'boolean';
const isNull: Check = (v) => v === null;
const isNumber: Check = (v) => typeof v === 'number' && Number.isFinite(v);
const isInteger: Check = (v) => Number.isInteger(v);
const isJsonArray: Check = (v) => Array.isArray(v) && isJsonValue(v);
const isJsonObject: Check = (v) => isPlainObject(v) && isJsonValue(v);
const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/**
 * The fast path's checker of a type: true exactly when `walk` finds no issue (each case mirrors walk's).
 * Named types are built once per checker and reached through their slot, so a recursive type
 * (`Tree: {children: Tree[]}`) is built in finite time.
 */
function checkerOf(node: TypeNode, env: TypeEnv, named: Map<string, { fn: Check | undefined }>): Check {
  switch (node.kind) {
    case 'named': {
      let slot = named.get(node.name);
      if (!slot) {
        slot = { fn: undefined };
        named.set(node.name, slot);
        slot.fn = checkerOf(env.resolve(node.name), env, named);
      }
      if (slot.fn) return slot.fn;
      // a reference inside its own definition (still being built): through the slot
      const s = slot;
      return (v) => s.fn!(v);
    }
    case 'nullable': {
      const inner = checkerOf(node.inner, env, named);
      return (v) => v === null || inner(v);
    }
    case 'enum': {
      // walk compares with ===, and never accepts an object or an array (enum values are scalars)
      const values = new Set<unknown>(node.values);
      return (v) => (v === null || typeof v !== 'object') && values.has(v) && (typeof v !== 'number' || Number.isFinite(v));
    }
    case 'primitive':
      switch (node.name) {
        case 'any':
          return isJsonValue;
        case 'string':
          return isString;
        case 'boolean':
          return isBoolean;
        case 'null':
          return isNull;
        case 'number':
          return isNumber;
        case 'integer':
          return isInteger;
        case 'object':
          return isJsonObject;
        case 'array':
          return isJsonArray;
      }
      return () => false;
    case 'array': {
      const element = checkerOf(node.element, env, named);
      return (v) => {
        if (!Array.isArray(v)) return false;
        for (let i = 0; i < v.length; i++) if (!(i in v) ? !element(undefined) : !element(v[i])) return false;
        return true;
      };
    }
    case 'record': {
      const names = node.fields.map((f) => f.name);
      const required = node.fields.map((f) => f.required);
      const checks = node.fields.map((f) => checkerOf(f.type, env, named));
      const known = new Set(names);
      const n = names.length;
      const small = n <= 8;
      const inherited = names.map((name) => name in Object.prototype);
      return (v) => {
        if (!isPlainObject(v)) return false;
        for (let i = 0; i < n; i++) {
          const name = names[i]!;
          // an own property only: a name Object.prototype also has (`constructor`) is asked for as own
          const x = inherited[i] ? (hasOwn(v, name) ? v[name] : undefined) : v[name];
          if (x === undefined) {
            if (required[i]) return false;
            continue;
          }
          if (!checks[i]!(x)) return false;
        }
        // extra fields are accepted, but must still be JSON (walk: Object.entries, undefined members absent;
        // a plain object inherits no enumerable key, so for-in lists the same keys without making an array)
        for (const k in v) {
          if (small ? names.includes(k) : known.has(k)) continue;
          const x = v[k];
          if (x !== undefined && !isJsonValue(x)) return false;
        }
        return true;
      };
    }
  }
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function describeValue(value: unknown): string {
  const t = jsonTypeOf(value);
  if (t === 'string') {
    const s = value as string;
    return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}...` : s);
  }
  if (t === 'number' || t === 'boolean' || t === 'null') return String(value);
  if (t === 'non-finite number') return String(value);
  return t;
}

function typeIssue(pointer: string, expected: string, value: unknown): ValueIssue {
  const actual = jsonTypeOf(value);
  const isJson = actual === 'string' || actual === 'number' || actual === 'boolean' || actual === 'null' || actual === 'object' || actual === 'array';
  const where = pointer === '' ? 'the value' : `\`${pointer}\``;
  return {
    pointer,
    kind: isJson ? 'type' : 'not-json',
    expected,
    actual,
    message: isJson ? `${where}: expected ${expected}, got ${actual} ${describeValue(value)}`.replace(/ (object|array|null) \1$/, ' $1') : `${where}: expected ${expected}, got ${actual} (not JSON)`,
  };
}

/** Every place inside a value that is not JSON (`undefined` members of objects are absent), each with its pointer. */
export function jsonIssues(value: unknown, expected = 'any'): ValueIssue[] {
  const out: ValueIssue[] = [];
  walkJson(value, '', out, expected);
  return out;
}

/** Reports values that are not JSON inside an `any`/`object`/`array` position. */
function walkJson(value: unknown, pointer: string, out: ValueIssue[], expected: string): void {
  const t = jsonTypeOf(value);
  if (t === 'array') {
    const arr = value as unknown[];
    for (let i = 0; i < arr.length; i++) {
      if (!(i in arr)) out.push(typeIssue(`${pointer}/${i}`, 'any', undefined));
      else walkJson(arr[i], `${pointer}/${i}`, out, 'any');
    }
  } else if (t === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) if (v !== undefined) walkJson(v, `${pointer}/${escapePointer(k)}`, out, 'any');
  } else if (t !== 'string' && t !== 'number' && t !== 'boolean' && t !== 'null') {
    out.push(typeIssue(pointer, expected, value));
  }
}

function walk(node: TypeNode, value: unknown, pointer: string, out: ValueIssue[], env: TypeEnv, display?: string): void {
  const expected = display ?? typeText(node);
  switch (node.kind) {
    case 'named':
      // an alias chain (`Cash: Money`, `Money: number`) and `Finding | null` report the type as written
      walk(env.resolve(node.name), value, pointer, out, env, expected);
      return;
    case 'nullable':
      if (value === null) return;
      walk(node.inner, value, pointer, out, env, expected);
      return;
    case 'enum': {
      const t = jsonTypeOf(value);
      // a named enum (`RiskLevel`) is shown with its values: the message says what would pass
      const listed = typeText(node);
      const oneOf = expected === listed ? listed : `${expected} (${listed})`;
      if (t === 'object' || t === 'array' || node.values.some((v) => v === value)) {
        if (t === 'object' || t === 'array') out.push({ pointer, kind: 'enum', expected, actual: t, message: `${pointer === '' ? 'the value' : `\`${pointer}\``}: expected one of ${oneOf}, got ${t}` });
        return;
      }
      out.push({
        pointer,
        kind: t === 'non-finite number' || t === 'undefined' || t === 'function' || t === 'bigint' || t === 'symbol' || t === 'non-plain object' ? 'not-json' : 'enum',
        expected,
        actual: t,
        message: `${pointer === '' ? 'the value' : `\`${pointer}\``}: expected one of ${oneOf}, got ${describeValue(value)}`,
      });
      return;
    }
    case 'primitive': {
      const t = jsonTypeOf(value);
      switch (node.name) {
        case 'any':
          walkJson(value, pointer, out, 'any');
          return;
        case 'string':
        case 'boolean':
        case 'null':
          if (t !== node.name) out.push(typeIssue(pointer, expected, value));
          return;
        case 'number':
          if (t !== 'number') out.push(typeIssue(pointer, expected, value));
          return;
        case 'integer':
          if (t !== 'number' || !Number.isInteger(value)) out.push(typeIssue(pointer, expected, value));
          return;
        case 'object':
        case 'array':
          if (t !== node.name) out.push(typeIssue(pointer, expected, value));
          else walkJson(value, pointer, out, expected);
          return;
      }
      return;
    }
    case 'array': {
      if (!Array.isArray(value)) {
        out.push(typeIssue(pointer, expected, value));
        return;
      }
      for (let i = 0; i < value.length; i++) walk(node.element, i in value ? value[i] : undefined, `${pointer}/${i}`, out, env);
      return;
    }
    case 'record': {
      if (jsonTypeOf(value) !== 'object') {
        out.push(typeIssue(pointer, expected, value));
        return;
      }
      const obj = value as Record<string, unknown>;
      const known = new Set<string>();
      for (const f of node.fields) {
        known.add(f.name);
        const p = `${pointer}/${escapePointer(f.name)}`;
        const has = Object.prototype.hasOwnProperty.call(obj, f.name) && obj[f.name] !== undefined;
        if (!has) {
          if (f.required) out.push({ pointer: p, kind: 'required', expected: typeText(f.type), actual: 'undefined', message: `\`${p}\`: required field \`${f.name}\` (${typeText(f.type)}) is missing` });
          continue;
        }
        walk(f.type, obj[f.name], p, out, env);
      }
      // extra fields are accepted, but must still be JSON
      for (const [k, v] of Object.entries(obj)) if (!known.has(k) && v !== undefined) walkJson(v, `${pointer}/${escapePointer(k)}`, out, 'any');
      return;
    }
  }
}

const STRING_SAMPLES = ['sample', 'example', 'value'];

/**
 * Builds a fitting value. Recursion is bounded by named types, not by depth (a deep but finite type
 * gets every required field): once a named type is re-entered, the rest of that subtree is minimal
 * (arrays empty, nullables null, optional fields left out). A type with no finite value at all
 * (`Node: {next: Node}`) gets `null` where the cycle is cut; nothing can fit it.
 */
function sampleOf(node: TypeNode, env: TypeEnv, depth: number, stack: Map<string, number>, minimal: boolean): Json {
  switch (node.kind) {
    case 'primitive':
      switch (node.name) {
        case 'string':
          return STRING_SAMPLES[depth % STRING_SAMPLES.length]!;
        case 'number':
          return 1;
        case 'integer':
          return 1;
        case 'boolean':
          return true;
        case 'object':
          return {};
        case 'array':
          return [];
        case 'null':
          return null;
        case 'any':
          return 'any';
      }
      return null;
    case 'named': {
      const seen = stack.get(node.name) ?? 0;
      if (seen >= 64) return null;
      stack.set(node.name, seen + 1);
      const v = sampleOf(env.resolve(node.name), env, depth, stack, minimal || seen > 0);
      stack.set(node.name, seen);
      return v;
    }
    case 'enum':
      return node.values[0] ?? null;
    case 'nullable':
      return minimal || depth > 6 ? null : sampleOf(node.inner, env, depth, stack, minimal);
    case 'array':
      return minimal || depth > 3 ? [] : [sampleOf(node.element, env, depth + 1, stack, minimal)];
    case 'record': {
      const out: Record<string, Json> = {};
      for (const f of node.fields) {
        if (!f.required && (minimal || depth > 2)) continue;
        setOwn(out, f.name, sampleOf(f.type, env, depth + 1, stack, minimal));
      }
      return out;
    }
  }
}

/** `out[key] = value` that makes an own property even for `__proto__`. */
function setOwn<T>(out: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

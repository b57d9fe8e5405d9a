/**
 * The type registry: binds the names of a workflow's `types` block, reports every problem in it
 * (unknown names with "did you mean", alias cycles, malformed declarations), and hands out compiled
 * types cached by their canonical text.
 */
import { isPlainObject, jsonTypeOf, type Json } from '../core/json.js';
import type { Path } from '../core/path.js';
import { closest } from '../core/suggest.js';
import { error, warning, type Diagnostic } from '../diagnostics/diagnostic.js';
import { wrongTypeHint } from '../diagnostics/hints.js';
import type { CompileTypes, CompiledType, ElementLookup, PathLookup, RecordField, TypeNode, TypeRegistry } from './api.js';
import { CompiledTypeImpl, resolveNode, typeText, type TypeEnv } from './compiled.js';
import { MAX_TYPE_DEPTH, typeDepths } from './depth.js';
import { parseTypeExpr, type TypeExpr } from './parse.js';
import { stronglyConnected } from '../core/scc.js';

export const PRIMITIVES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'any', 'null'] as const;
const PRIMITIVE_SET = new Set<string>(PRIMITIVES);
/** Keys of the wrapper form `{type: T, required: false}`. */
const WRAPPER_KEYS = new Set(['type', 'required', 'nullable', 'description', 'default', 'items']);
const TYPE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** JSON Schema keywords a Baton type does not take: written beside `type`, they make the mapping a record (and its values fail as types). */
const JSON_SCHEMA_KEYWORDS = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'minLength', 'maxLength', 'pattern', 'format', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'const', 'additionalProperties', 'patternProperties', 'properties', 'oneOf', 'anyOf', 'allOf', 'not', '$ref', '$schema', 'examples', 'contentMediaType']);

const ANY: TypeNode = { kind: 'primitive', name: 'any' };

interface Decl {
  name: string;
  node: TypeNode | undefined; // undefined until built, or when the declaration is broken
}

class Registry implements TypeRegistry {
  readonly names: string[] = [];
  private readonly decls = new Map<string, Decl>();
  private readonly cache = new Map<string, CompiledTypeImpl>();
  /**
   * Type strings bound without a diagnostic, by their text: a 10,000-phase workflow writes `Finding[]`
   * thousands of times, parsed and bound once. Binding reads only which names are declared, so a
   * declaration empties it.
   */
  readonly bound = new Map<string, TypeNode>();
  /** The compiled type of each such string (what `compile` hands out for it). */
  private readonly byString = new Map<string, CompiledType>();
  readonly env: TypeEnv;

  constructor() {
    this.env = { resolve: (name) => this.decls.get(name)?.node ?? ANY };
  }

  declare(name: string): void {
    this.bound.clear();
    this.byString.clear();
    this.names.push(name);
    this.decls.set(name, { name, node: undefined });
  }

  define(name: string, node: TypeNode | undefined): void {
    const d = this.decls.get(name);
    if (d) d.node = node;
  }

  has(name: string): boolean {
    return this.decls.has(name);
  }

  definition(name: string): TypeNode | undefined {
    return this.decls.get(name)?.node;
  }

  fromNode(node: TypeNode): CompiledType {
    const key = typeText(node);
    let t = this.cache.get(key);
    if (!t) {
      t = new CompiledTypeImpl(node, this.env);
      this.cache.set(key, t);
    }
    return t;
  }

  record(fields: readonly { name: string; type: CompiledType; required: boolean }[]): CompiledType {
    // the text typeText gives the record, from each field type's own text (a record's text is its cache key)
    let key = '{';
    for (let i = 0; i < fields.length; i++) {
      const f = fields[i]!;
      key += `${i > 0 ? ', ' : ''}${f.name}${f.required ? '' : '?'}: ${f.type.text}`;
    }
    key += '}';
    return this.cache.get(key) ?? this.fromNode({ kind: 'record', fields: fields.map((f) => ({ name: f.name, type: f.type.node, required: f.required })) });
  }

  compile(expr: unknown, path: Path): { type: CompiledType | undefined; required: boolean; diagnostics: Diagnostic[] } {
    if (typeof expr === 'string') {
      const known = this.byString.get(expr);
      if (known) return { type: known, required: true, diagnostics: [] };
    }
    const diagnostics: Diagnostic[] = [];
    const r = buildTypeRef(expr, path, this, diagnostics);
    const type = r.node ? this.fromNode(r.node) : undefined;
    if (typeof expr === 'string' && type && diagnostics.length === 0) this.byString.set(expr, type);
    return { type, required: r.required, diagnostics };
  }

  elementOf(type: CompiledType): ElementLookup {
    let n = resolveNode(type.node, this.env);
    while (n.kind === 'nullable') n = resolveNode(n.inner, this.env);
    if (n.kind === 'array') return { kind: 'array', element: this.fromNode(n.element) };
    if (n.kind === 'primitive' && n.name === 'array') return { kind: 'untyped' };
    if (n.kind === 'primitive' && n.name === 'any') return { kind: 'any' };
    return { kind: 'not-array' };
  }

  lookup(type: CompiledType, segments: readonly string[]): PathLookup {
    let node: TypeNode = type.node;
    let display = type.text;
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i]!;
      let n = resolveNode(node, this.env);
      while (n.kind === 'nullable') n = resolveNode(n.inner, this.env); // `A: B | null`, `B: C | null`
      if (n.kind === 'primitive' && (n.name === 'any' || n.name === 'object')) return { ok: true, type: this.fromNode(ANY) };
      if (n.kind === 'record') {
        const f = n.fields.find((x) => x.name === seg);
        if (!f) {
          const c = closest(seg, n.fields.map((x) => x.name));
          const fields = n.fields.map((x) => `\`${x.name}\``).join(', ');
          return {
            ok: false,
            message: `\`${display}\` has no field \`${seg}\``,
            hint: c ? `did you mean \`${c}\`?` : `fields of \`${display}\`: ${fields || '(none)'}`,
            at: i,
          };
        }
        node = f.type;
        display = typeText(f.type);
        continue;
      }
      if (n.kind === 'array' || (n.kind === 'primitive' && n.name === 'array')) {
        if (!/^\d+$/.test(seg)) return { ok: false, message: `\`${display}\` is an array: \`${seg}\` is not an index`, hint: 'reach into an array element with a number: `findings.0.source`', at: i };
        node = n.kind === 'array' ? n.element : ANY;
        display = typeText(node);
        continue;
      }
      return { ok: false, message: `cannot reach \`${seg}\` inside \`${display}\`, which has no fields`, hint: 'map the whole value, or declare a record type for it', at: i };
    }
    return { ok: true, type: this.fromNode(node) };
  }
}

function typeNameHint(name: string, reg: Registry): string {
  const c = closest(name, [...reg.names, ...PRIMITIVES]);
  return c ? `did you mean \`${c}\`?` : `declare \`${name}\` under \`types:\` or use one of ${PRIMITIVES.map((p) => `\`${p}\``).join(', ')}`;
}

/** A JSON Schema keyword written beside `type` (`format: email`, `minItems: 1`): why its value was read as a type. */
function jsonSchemaKeywordHint(key: string): string {
  if (key === 'const') return '`const` is a JSON Schema keyword, and this mapping is a Baton type (a record whose fields are types): one allowed value is written `{enum: [value]}`';
  return `\`${key}\` is a JSON Schema keyword, and this mapping is a Baton type: a mapping with keys other than ${[...WRAPPER_KEYS].map((k) => `\`${k}\``).join(', ')} is a record whose fields are types. Baton types have no bounds or formats: check those in the agent, or give it a contract whose JSON Schema has them (\`x-contract\`, docs/contracts.md)`;
}

/** Binds a parsed expression; unknown names become `any` after a diagnostic, so errors do not cascade. */
function bind(expr: TypeExpr, path: Path, reg: Registry, out: Diagnostic[], offsetBase: number | undefined): TypeNode {
  switch (expr.kind) {
    case 'name': {
      if (expr.name === 'list' || expr.name === 'array') return { kind: 'primitive', name: 'array' };
      if (PRIMITIVE_SET.has(expr.name)) return { kind: 'primitive', name: expr.name as 'string' };
      if (reg.has(expr.name)) return { kind: 'named', name: expr.name };
      out.push(
        error('unknown-type', path, `unknown type \`${expr.name}\``, {
          hint: typeNameHint(expr.name, reg),
          ...(offsetBase !== undefined ? { data: { offset: offsetBase + expr.offset, length: expr.name.length } } : {}),
        }),
      );
      return ANY;
    }
    case 'array':
      return { kind: 'array', element: bind(expr.element, path, reg, out, offsetBase) };
    case 'nullable':
      return { kind: 'nullable', inner: bind(expr.inner, path, reg, out, offsetBase) };
  }
}

function fromString(text: string, path: Path, reg: Registry, out: Diagnostic[]): TypeNode | undefined {
  const known = reg.bound.get(text);
  if (known) return known;
  const p = parseTypeExpr(text);
  if (!p.ok) {
    const shown = text.length > 80 ? `${text.slice(0, 60)}…` : text; // the reason must survive a hostile length
    out.push(error('invalid-type', path, `malformed type \`${shown}\`: ${p.message}`, { hint: 'write a type such as `string`, `Finding`, `Finding[]` or `array<string>`', data: { offset: p.offset } }));
    return undefined;
  }
  const before = out.length;
  const node = bind(p.expr, path, reg, out, 0);
  if (out.length === before) reg.bound.set(text, node);
  return node;
}

function buildEnum(raw: unknown, path: Path, out: Diagnostic[]): TypeNode | undefined {
  if (!Array.isArray(raw) || raw.length === 0) {
    out.push(error('invalid-type', path, Array.isArray(raw) ? 'an enum needs at least one value' : '`enum` must be a list of values', { hint: 'write `enum: ["low", "medium", "high"]`' }));
    return undefined;
  }
  const values: Json[] = [];
  const seen = new Set<unknown>();
  let ok = true;
  raw.forEach((v, i) => {
    const t = jsonTypeOf(v);
    if (t !== 'string' && t !== 'number' && t !== 'boolean') {
      out.push(error('invalid-type', [...path, i], `enum values must be strings, numbers or booleans, not ${t}`));
      ok = false;
    } else if (seen.has(v)) {
      out.push(error('invalid-type', [...path, i], `duplicate enum value ${JSON.stringify(v)}`, { hint: 'remove the repeated value' }));
      ok = false;
    } else {
      seen.add(v);
      values.push(v as Json);
    }
  });
  return ok ? { kind: 'enum', values } : undefined;
}

function isWrapper(raw: Record<string, unknown>): boolean {
  if (!('type' in raw) || typeof raw['type'] !== 'string') return false;
  for (const k of Object.keys(raw)) if (!WRAPPER_KEYS.has(k) && !k.startsWith('x-')) return false;
  return true;
}

/**
 * A type reference in a field or output position: a type string, `{type: T, required, nullable}`,
 * `{enum: [...]}` or an inline record (`{title: string, words: integer}`).
 */
export function buildTypeRef(raw: unknown, path: Path, reg: Registry, out: Diagnostic[]): { node: TypeNode | undefined; required: boolean } {
  if (typeof raw === 'string') return { node: fromString(raw, path, reg, out), required: true };
  if (isPlainObject(raw)) {
    if ('enum' in raw) {
      for (const k of Object.keys(raw)) {
        if (k !== 'enum' && k !== 'type' && k !== 'description' && k !== 'required' && !k.startsWith('x-')) out.push(error('invalid-type', [...path, k], `unexpected \`${k}\` in an enum declaration`, { target: 'key' }));
      }
      const required = raw['required'] === false ? false : true;
      return { node: buildEnum(raw['enum'], [...path, 'enum'], out), required };
    }
    if (isWrapper(raw)) {
      let required = true;
      if ('required' in raw) {
        if (typeof raw['required'] !== 'boolean') out.push(error('wrong-type', [...path, 'required'], '`required` must be true or false', { hint: wrongTypeHint(raw['required'], 'boolean') ?? 'write `required: false` for an optional value' }));
        else required = raw['required'];
      }
      // kept as a wrapper key (so `{type: string, default: x}` is not read as a record), but validation never fills values in
      if (raw['default'] !== undefined) out.push(warning('ignored-section', [...path, 'default'], '`default` is accepted but not applied: Baton validates values and never fills them in, so an absent optional value stays absent', { target: 'key', hint: 'have the agent return the value, or read it with `has(...)` in a condition; remove `default` to silence this' }));
      let node = fromString(raw['type'] as string, [...path, 'type'], reg, out);
      if (node && raw['items'] !== undefined) {
        if (node.kind !== 'primitive' || node.name !== 'array') out.push(error('invalid-type', [...path, 'items'], '`items` applies only to `type: array`', { target: 'key' }));
        else {
          const el = buildTypeRef(raw['items'], [...path, 'items'], reg, out).node;
          node = el ? { kind: 'array', element: el } : undefined;
        }
      }
      if ('nullable' in raw) {
        if (typeof raw['nullable'] !== 'boolean') out.push(error('wrong-type', [...path, 'nullable'], '`nullable` must be true or false', { hint: wrongTypeHint(raw['nullable'], 'boolean') ?? 'write `nullable: true` to allow null' }));
        else if (raw['nullable'] && node && node.kind !== 'nullable') node = { kind: 'nullable', inner: node };
      }
      return { node, required };
    }
    return { node: buildRecord(raw, path, reg, out), required: true };
  }
  const what = raw === null || raw === undefined ? 'nothing' : `${jsonTypeOf(raw)} ${JSON.stringify(raw)}`;
  // `{type: array, requird: false}` reads as a record with fields `type` and `requird`: name the wrapper key it misspells
  const key = path.at(-1);
  const near = typeof key === 'string' && !WRAPPER_KEYS.has(key) && (typeof raw === 'boolean' || typeof raw === 'number') ? closest(key, WRAPPER_KEYS) : undefined;
  const hint = near !== undefined ? `did you mean \`${near}\`? (a mapping with a key other than ${[...WRAPPER_KEYS].map((k) => `\`${k}\``).join(', ')} is a record, whose fields are types)` : 'write a type such as `string`, `number`, `Finding` or `array<string>`';
  out.push(error('invalid-type', path, `expected a type, got ${what}`, { hint }));
  return { node: undefined, required: true };
}

/**
 * JSON Schema written where a Baton type goes (`{type: object, properties: {title: string}}`) is a record
 * with fields `type` and `properties`: valid, and then every correct value is rejected (`/summary/type`
 * missing). Say how it is read, at the JSON Schema key, with the record it likely means.
 */
function jsonSchemaLookalike(raw: Record<string, unknown>, path: Path, out: Diagnostic[]): void {
  if (typeof raw['type'] !== 'string') return;
  for (const k of ['properties', 'patternProperties', 'additionalProperties']) {
    const v = raw[k];
    if (!isPlainObject(v) && typeof v !== 'boolean') continue;
    const fields = k === 'properties' && isPlainObject(v) ? Object.entries(v).map(([f, t]) => `${f}: ${typeof t === 'string' ? t : '...'}`) : [];
    const record = fields.length > 0 ? `{${fields.join(', ')}}` : '{field: type, ...}';
    const names = Object.keys(raw).filter((x) => !x.startsWith('x-')).map((x) => `\`${x}\``);
    out.push(
      warning('unknown-key', [...path, k], `\`${k}\` is JSON Schema, not part of a Baton type: this mapping is read as a record with the fields ${names.join(', ')}, so a value needs a field named \`type\``, {
        target: 'key',
        hint: `declare the record's fields directly: \`${record}\` (optional ones as \`{type: T, required: false}\`), or name it under \`types:\``,
      }),
    );
    return;
  }
}

function buildRecord(raw: Record<string, unknown>, path: Path, reg: Registry, out: Diagnostic[]): TypeNode | undefined {
  jsonSchemaLookalike(raw, path, out);
  const schemaLike = typeof raw['type'] === 'string';
  const fields: RecordField[] = [];
  let ok = true;
  for (const [name, v] of Object.entries(raw)) {
    if (name.startsWith('x-')) continue;
    if (schemaLike && JSON_SCHEMA_KEYWORDS.has(name)) {
      // `{type: array, minItems: 1}`: the value fails as a type; say it is JSON Schema, not a bad type name
      const sub: Diagnostic[] = [];
      const r = buildTypeRef(v, [...path, name], reg, sub);
      for (const d of sub) out.push(d.severity === 'error' && d.path.length === path.length + 1 ? { ...d, hint: jsonSchemaKeywordHint(name) } : d);
      if (!r.node) ok = false;
      fields.push({ name, type: r.node ?? ANY, required: r.required });
      continue;
    }
    const r = buildTypeRef(v, [...path, name], reg, out);
    if (!r.node) ok = false;
    fields.push({ name, type: r.node ?? ANY, required: r.required });
  }
  return ok ? { kind: 'record', fields } : { kind: 'record', fields };
}

/** A named declaration: like a field reference, but a bare mapping is always a record (or an enum). */
function buildDeclaration(name: string, raw: unknown, reg: Registry, out: Diagnostic[], basePath: Path): void {
  const path = [...basePath, name];
  // a declaration's mapping is a record (`Event: {type: string, at: string}` has a field named `type`),
  // unless it is an enum or a wrapper that says so with `items` / `nullable`
  if (isPlainObject(raw) && !('enum' in raw) && !(isWrapper(raw) && ((raw['type'] === 'array' && 'items' in raw) || typeof raw['nullable'] === 'boolean'))) {
    reg.define(name, buildRecord(raw, path, reg, out));
    return;
  }
  const r = buildTypeRef(raw, path, reg, out);
  if (r.required === false) out.push(error('invalid-type', [...path, 'required'], '`required` applies to fields and outputs, not to a named type', { target: 'key' }));
  reg.define(name, r.node);
}

/**
 * Aliases that never reach a structural type (`A: B`, `B: A`) have no values: each is an error.
 * Each name is walked once (a chain of thousands of aliases is linear, not cubic), and a long cycle
 * is shown shortened in each member's message.
 */
function checkAliasCycles(reg: Registry, basePath: Path, out: Diagnostic[]): void {
  const target = (name: string): string | undefined => {
    let n = reg.definition(name);
    while (n && n.kind === 'nullable') n = n.inner;
    return n && n.kind === 'named' ? n.name : undefined;
  };
  const done = new Set<string>();
  const bad = new Set<string>();
  for (const start of reg.names) {
    if (done.has(start)) continue;
    const walk: string[] = [];
    const at = new Map<string, number>();
    let cur: string | undefined = start;
    while (cur !== undefined && !done.has(cur) && !at.has(cur)) {
      at.set(cur, walk.length);
      walk.push(cur);
      cur = target(cur);
    }
    for (const n of walk) done.add(n);
    if (cur === undefined || !at.has(cur)) continue; // reached a structure, or a chain already checked
    const cycle = walk.slice(at.get(cur));
    for (const n of cycle) bad.add(n);
    cycle.forEach((n, i) => {
      const order = [...cycle.slice(i), ...cycle.slice(0, i), n];
      const shown = order.length <= 12 ? order.join(' -> ') : `${order.slice(0, 5).join(' -> ')} -> ... (${order.length - 7} more) -> ${order.slice(-2).join(' -> ')}`;
      out.push(error('recursive-type', [...basePath, n], `type \`${n}\` is an alias of itself (${shown}) and never reaches a concrete type`, { hint: 'give one of these types a structure, e.g. a record of fields or `T[]`' }));
    });
  }
  for (const n of bad) reg.define(n, ANY);
}

/**
 * A record that requires itself (`Node: {next: Node}`), directly or through other named types, has no
 * finite value: every one needs another inside it. Only the ways a value must go count: a required
 * field, an alias, an inline record; an optional field, `T | null` and `T[]` (null, the empty array)
 * end the chain. Each type of such a cycle is an error, at the field (or alias) that continues it.
 */
function checkRequiredCycles(reg: Registry, basePath: Path, out: Diagnostic[]): void {
  interface Edge { to: string; path: Path }
  const edges = new Map<string, Edge[]>();
  const collect = (node: TypeNode | undefined, path: Path, acc: Edge[]): void => {
    if (!node) return;
    if (node.kind === 'named') acc.push({ to: node.name, path });
    else if (node.kind === 'record') for (const f of node.fields) if (f.required) collect(f.type, [...path, f.name], acc);
  };
  for (const n of reg.names) {
    const acc: Edge[] = [];
    collect(reg.definition(n), [...basePath, n], acc);
    edges.set(n, acc.filter((e) => reg.has(e.to)));
  }
  const { comp } = stronglyConnected(reg.names, (n) => edges.get(n)!.map((e) => e.to));
  const size = new Map<number, number>();
  for (const c of comp.values()) size.set(c, (size.get(c) ?? 0) + 1);
  for (const n of reg.names) {
    const c = comp.get(n)!;
    const inCycle = (e: Edge): boolean => comp.get(e.to) === c && (size.get(c)! > 1 || e.to === n);
    const edge = edges.get(n)!.find(inCycle);
    if (!edge) continue;
    // the shortest way back to `n` inside its component, for the message
    const prev = new Map<string, string>([[edge.to, n]]);
    const queue = [edge.to];
    for (let q = 0; q < queue.length && !prev.has(n) && queue.length <= 1000; q++) {
      for (const e of edges.get(queue[q]!)!) {
        if (comp.get(e.to) !== c || prev.has(e.to)) continue;
        prev.set(e.to, queue[q]!);
        queue.push(e.to);
      }
    }
    const order = [n];
    if (edge.to === n) order.push(n);
    else if (prev.has(n)) {
      const back: string[] = [];
      for (let cur: string = n; cur !== edge.to; cur = prev.get(cur)!) back.push(cur);
      order.push(edge.to, ...back.reverse());
    } else order.push(edge.to, '...', n);
    const shown = order.length <= 12 ? order.join(' -> ') : `${order.slice(0, 5).join(' -> ')} -> ... (${order.length - 7} more) -> ${order.slice(-2).join(' -> ')}`;
    out.push(
      error('recursive-type', edge.path, `type \`${n}\` requires itself (${shown}): no finite value fits it`, {
        hint: 'make the field optional (`{type: T, required: false}`), nullable (`T | null`) or a list (`T[]`)',
      }),
    );
  }
}

/** Types nested past MAX_TYPE_DEPTH through their names: one error at the deepest, and they become `any`. */
function checkTypeDepth(reg: Registry, basePath: Path, out: Diagnostic[]): void {
  const depths = typeDepths(reg.names, (n) => reg.definition(n));
  let worst: string | undefined;
  for (const n of reg.names) if ((depths.get(n) ?? 0) > MAX_TYPE_DEPTH && (worst === undefined || depths.get(n)! > depths.get(worst)!)) worst = n;
  if (worst === undefined) return;
  out.push(
    error('invalid-type', [...basePath, worst], `type \`${worst}\` nests too deeply through the types it names (limit ${MAX_TYPE_DEPTH} levels)`, {
      target: 'key',
      hint: 'a chain of hundreds of types naming each other cannot be checked; flatten it',
    }),
  );
  for (const n of reg.names) if ((depths.get(n) ?? 0) > MAX_TYPE_DEPTH) reg.define(n, ANY);
}

export const compileTypes: CompileTypes = (typesBlock, basePath) => {
  const reg = new Registry();
  const diagnostics: Diagnostic[] = [];
  if (typesBlock === undefined || typesBlock === null) return { registry: reg, diagnostics };
  if (!isPlainObject(typesBlock)) {
    diagnostics.push(error('wrong-type', basePath, '`types` must be a mapping of type names to declarations', { hint: 'write `types:` then `Finding: {source: string, confidence: number}`' }));
    return { registry: reg, diagnostics };
  }
  const entries: [string, unknown][] = [];
  for (const [name, raw] of Object.entries(typesBlock)) {
    if (name.startsWith('x-')) continue;
    if (!TYPE_NAME.test(name)) {
      diagnostics.push(error('invalid-type', [...basePath, name], `\`${name}\` is not a valid type name`, { hint: 'use letters, digits and `_`, starting with a letter', target: 'key' }));
      continue;
    }
    if (PRIMITIVE_SET.has(name) || name === 'list') {
      diagnostics.push(error('invalid-type', [...basePath, name], `\`${name}\` is a built-in type and cannot be redeclared`, { hint: 'choose another name', target: 'key' }));
      continue;
    }
    reg.declare(name);
    entries.push([name, raw]);
  }
  for (const [name, raw] of entries) buildDeclaration(name, raw, reg, diagnostics, basePath);
  checkAliasCycles(reg, basePath, diagnostics);
  checkRequiredCycles(reg, basePath, diagnostics);
  checkTypeDepth(reg, basePath, diagnostics);
  return { registry: reg, diagnostics };
};

/**
 * The compile side of fan-out: `for_each` (a wired reference to an array), `max_parallel`,
 * `tolerated_failures`, `skip_when` reading `$item`, and the types it gives: `$item` is the element
 * type of the upstream array, and downstream phases see each output gathered into `array<T>`
 * (`array<T | null>` when a slot may be empty: a tolerated failure, an item skipped, an optional output).
 * Executing items is the engine's business; until it can, the engine refuses such a workflow (plan.ts).
 */
import { isPlainObject } from '../core/json.js';
import type { Path } from '../core/path.js';
import { error, warning, type Diagnostic } from '../diagnostics/diagnostic.js';
import type { CompiledType, TypeNode, TypeRegistry } from '../types/api.js';
import type { Expression } from './expr.js';
import { tokenKind, tokensOf } from './files.js';
import type { FileContract, ForEachModel, InputBinding, OutputDecl, ToleratedFailures } from './model.js';
import type { Field } from './shape.js';
import { checkOptionalRef, resolveRef, type WiringContext } from './wiring.js';

const PERCENT = /^(\d+(?:\.\d+)?)%$/;

export const forEachFields: Record<string, Field> = {
  for_each: { t: 'string', nonEmpty: true },
  max_parallel: { t: 'number', integer: true, min: 1 },
  tolerated_failures: {
    t: 'custom',
    expected: 'a count of items or a percentage such as "10%"',
    check: (v: unknown, path: Path, out: Diagnostic[]) => {
      const hint = 'write a count (`tolerated_failures: 2`) or a percentage (`tolerated_failures: "10%"`)';
      if (typeof v === 'number') {
        if (!Number.isInteger(v) || v < 0) out.push(error('invalid-value', path, `a count of items must be an integer >= 0, got ${v}`, { hint }));
      } else if (typeof v === 'string') {
        const m = PERCENT.exec(v.trim());
        if (!m) out.push(error('invalid-value', path, `\`${v}\` is not a percentage`, { hint }));
        else if (Number(m[1]) > 100) out.push(error('invalid-value', path, `a percentage is at most 100%, got ${v}`, { hint }));
      } else out.push(error('wrong-type', path, 'expected a count of items or a percentage such as "10%"', { hint }));
    },
  },
};

/**
 * Fan-out settings that would do nothing: `for_each` left empty (`for_each:` is null, which elsewhere reads
 * as absent, but here it would run the phase once instead of per item: an error), and `max_parallel` /
 * `tolerated_failures` on a phase without `for_each` (a warning each).
 */
export function checkFanOutSettings(raw: Record<string, unknown>, at: Path, out: Diagnostic[]): void {
  if (raw['for_each'] === null) {
    out.push(error('wrong-type', [...at, 'for_each'], '`for_each` is empty: the phase would run once, not once per item', { hint: 'give it an array to fan out over (`for_each: outline.sections`), or remove the key' }));
    return;
  }
  if (raw['for_each'] !== undefined) return;
  for (const k of ['max_parallel', 'tolerated_failures']) {
    if (raw[k] === undefined || raw[k] === null) continue;
    out.push(warning('fan-out-setting-unused', [...at, k], `\`${k}\` has no effect: the phase has no \`for_each\`, so it runs once, not per item`, { target: 'key', hint: `fan the phase out with \`for_each: phase.key\`, or remove \`${k}\`` }));
  }
}

/** `tolerated_failures` as written (already checked): a count or a percentage; none by default. */
export function toleratedOf(v: unknown): ToleratedFailures {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return { count: v };
  const m = typeof v === 'string' ? PERCENT.exec(v.trim()) : null;
  if (m && Number(m[1]) <= 100) return { percent: Number(m[1]) };
  return { count: 0 };
}

/** Whether a failure may leave a slot empty. */
export function toleratesAny(t: ToleratedFailures): boolean {
  return 'count' in t ? t.count > 0 : t.percent > 0;
}

/**
 * The `for_each` of a phase: its reference resolved and typed as an input's is, then its element
 * type. Undefined when the reference does not resolve (diagnostics say why); `any` items when it is
 * not an array, so that `$item` is not reported again in every input.
 */
export function checkForEach(raw: Record<string, unknown>, at: Path, ctx: WiringContext, out: Diagnostic[]): Omit<ForEachModel, 'itemSkip' | 'gathered'> | undefined {
  const ref = raw['for_each'];
  if (typeof ref !== 'string' || ref === '') return undefined;
  const path = [...at, 'for_each'];
  if (/^\$(item|index)(?![\w])/.test(ref)) {
    // the items come from the array `for_each` names: it cannot read one of them itself
    out.push(error('item-outside-for-each', path, `\`for_each\` reads \`${ref}\`, an item of the fan-out it defines`, { hint: 'fan out over an upstream array: `for_each: outline.sections`, `$trigger.items` or `$initial_state.x`', data: { phase_name: ctx.phaseName, ref } }));
    return undefined;
  }
  const b = resolveRef(ref, '`for_each`', path, ctx, out);
  if (!b) return undefined;
  checkOptionalRef(ctx, b, '`for_each`', path, raw['skip_when'], out);
  const el = ctx.types.elementOf(b.type);
  let itemType = ctx.any;
  if (el.kind === 'array') itemType = el.element;
  else if (el.kind === 'untyped') {
    out.push(warning('for-each-untyped', path, `\`for_each\` reads \`${ref}\`, an \`array\` without an element type: \`$item\` is \`any\` and its uses are not checked`, { hint: 'declare the element type upstream: `array<Section>` or `Section[]`', data: { phase_name: ctx.phaseName, ref } }));
  } else if (el.kind === 'not-array') {
    out.push(error('for-each-not-array', path, `\`for_each\` reads \`${ref}\`, which is \`${b.type.text}\`, not an array`, { hint: 'fan out over an array: an output declared `T[]` or `array<T>`', data: { phase_name: ctx.phaseName, ref, type: b.type.text } }));
  }
  return {
    ref,
    source: b.source,
    itemType,
    maxParallel: typeof raw['max_parallel'] === 'number' && Number.isInteger(raw['max_parallel']) && raw['max_parallel'] >= 1 ? raw['max_parallel'] : undefined,
    toleratedFailures: toleratedOf(raw['tolerated_failures']),
    at: path,
  };
}

/**
 * A `for_each` over an array whose elements may be null (an upstream fan-out's gathered output with empty
 * slots: a tolerated failure, a skipped item, an optional output; or a declared `T | null`): an input that
 * reads into `$item` cannot be resolved for a null item, and that item fails (UnresolvableInputError),
 * failing the phase unless tolerated. A `skip_when` that tests `$item` against `null` is taken as the guard.
 */
export function checkNullItems(name: string, fanOut: ForEachModel, inputs: InputBinding[], skipWhen: unknown, out: Diagnostic[]): void {
  const item = fanOut.itemType;
  if (item.text === 'any' || !item.check(null)) return;
  if (typeof skipWhen === 'string' && /\$item\s*[!=]=\s*null\b|\bnull\s*[!=]=\s*\$item\b/.test(skipWhen)) return;
  for (const b of inputs) {
    if (b.source.kind !== 'item' || b.source.path.length === 0) continue;
    out.push(
      warning('item-may-be-null', ['workflow', name, 'inputs', b.name], `input \`${b.name}\` reads \`${b.ref}\`, but an item of \`${fanOut.ref}\` may be null (\`${item.text}\`): such an item cannot resolve it and fails`, {
        hint: 'skip the empty slots with `skip_when: "$item == null"`, or map the whole `$item`',
        data: { phase_name: name, ref: b.ref, item_type: item.text },
      }),
    );
  }
}

/** Each declared output gathered into an array in item order, as downstream phases see it. */
export function gatheredOutputs(outputs: OutputDecl[] | undefined, slotsMayBeNull: boolean, fromNode: (n: TypeNode) => OutputDecl['type']): OutputDecl[] | undefined {
  if (!outputs) return undefined;
  return outputs.map((o) => {
    const element: TypeNode = slotsMayBeNull || !o.required ? nullable(o.type.node) : o.type.node;
    return { key: o.key, type: fromNode({ kind: 'array', element }), required: true };
  });
}

function nullable(n: TypeNode): TypeNode {
  return n.kind === 'nullable' || (n.kind === 'primitive' && (n.name === 'any' || n.name === 'null')) ? n : { kind: 'nullable', inner: n };
}

/**
 * `$item.a.b` (and `$index`) read by `skip_when`, against the item type, as an input's `$item.a.b` is
 * (input-path-invalid): a field the item type does not have cannot be read, and every item would fail
 * (`SkipConditionError`). Under `has($item.a.b)` (there, or guarding another read) only the fields
 * before the last must exist.
 */
export function checkItemPaths(expr: Expression, path: Path, item: CompiledType, types: TypeRegistry, out: Diagnostic[]): void {
  const tested = expr.paths.filter((r) => r.tested);
  for (const read of expr.paths) {
    if (read.name !== ITEM_NAME && read.name !== INDEX_NAME) continue;
    // `has($item.a) && $item.a.b > 0`: the read is guarded by the test
    const guard = tested.find((t) => t.name === read.name && t.path.length <= read.path.length && t.path.every((x, i) => read.path[i] === x));
    const segments = guard ? guard.path.slice(0, -1) : read.path;
    if (segments.length === 0) continue;
    const type = read.name === ITEM_NAME ? item : (types.compile('integer', []).type ?? item);
    const found = types.lookup(type, segments);
    if (found.ok) continue;
    const written = `${read.name === ITEM_NAME ? '$item' : '$index'}.${read.path.join('.')}`;
    out.push(
      error('input-path-invalid', path, `\`skip_when\` reads \`${written}\`: ${found.message}; the condition cannot be evaluated and every item fails`, {
        hint: found.hint ?? 'read a field the item type declares',
        data: { ref: written, offset: read.offset, length: read.length },
      }),
    );
  }
}

/**
 * `<item>` / `<item.a.b>` in a fan-out phase's file paths, against the item type: a field the type does
 * not have, or a value that is never a string or a number (a record, an array, a boolean), cannot name a
 * file, and every item's file would be refused when it runs (input-path-invalid, on the token). `skip`
 * lists keys whose entry another declaration overrides (an agent's file the phase redeclares).
 */
export function checkItemTokens(files: FileContract | undefined, base: Path, item: CompiledType, types: TypeRegistry, out: Diagnostic[], where = '', skip?: ReadonlySet<string>): void {
  if (!files) return;
  for (const [side, list] of [['inputsFiles', files.inputs], ['outputsFiles', files.outputs]] as const) {
    for (const e of list) {
      if (skip?.has(e.key)) continue;
      for (const t of tokensOf(e.path)) {
        if (t.name === 'index' || tokenKind(t.name) !== 'item') continue;
        const segments = t.name === 'item' ? [] : t.name.slice('item.'.length).split('.');
        const found = types.lookup(item, segments);
        let message: string | undefined;
        let hint = '';
        if (!found.ok) {
          message = found.message;
          hint = found.hint ?? 'read a field the item type declares';
        } else if (!namesFile(found.type)) {
          message = `it is \`${found.type.text}\`, never a string or a number`;
          hint = 'name the file with a string or number field of the item (`<item.slug>`), or with `<index>`';
        }
        if (message === undefined) continue;
        out.push(error('input-path-invalid', [...base, side, e.key, 'path'], `\`<${t.name}>\`${where}: ${message}; no item can name its file with it, and every item's file would be refused`, { hint, data: { offset: t.offset, length: t.name.length + 2 } }));
      }
    }
  }
}

/**
 * Whether a value of this type may be a string or a number (what a file path token can hold). A null
 * names no file (the item's is refused at run time), so `S | null` over a record is never one.
 */
export function namesFile(t: CompiledType): boolean {
  if (t.check('a') || t.check(0) || t.check(0.5)) return true;
  // an enum of some strings or numbers (or a type such as one, nullable or not) accepts one of its values
  return [t.sample(), ...enumValues(t.jsonSchema())].some((v) => (typeof v === 'string' || typeof v === 'number') && t.check(v));
}

/** Every value an `enum` (or `const`) anywhere in a JSON Schema lists. */
function enumValues(schema: unknown, out: unknown[] = []): unknown[] {
  if (Array.isArray(schema)) for (const s of schema) enumValues(s, out);
  else if (isPlainObject(schema)) {
    for (const [k, v] of Object.entries(schema)) {
      if (k === 'enum' && Array.isArray(v)) out.push(...(v as unknown[]));
      else if (k === 'const') out.push(v);
      else enumValues(v, out);
    }
  }
  return out;
}

/** `$item` / `$index` in a CEL condition: CEL names cannot start with `$`, so they are read as `_item` / `_index` (same length: offsets hold). */
export const ITEM_NAME = '_item';
export const INDEX_NAME = '_index';

/**
 * Rewrites `$item` and `$index` outside string literals; lists where they were. `$trigger` and
 * `$initial_state`, as an input mapping writes them, read the names `trigger` and `initial_state`: the `$`
 * becomes a space (same length: offsets hold).
 */
export function itemAwareCondition(source: string, items = true): { text: string; uses: { name: '$item' | '$index'; offset: number }[] } {
  const uses: { name: '$item' | '$index'; offset: number }[] = [];
  let text = '';
  let quote: string | undefined;
  for (let i = 0; i < source.length; i++) {
    const ch = source[i]!;
    if (quote !== undefined) {
      text += ch;
      if (ch === '\\') {
        text += source[i + 1] ?? '';
        i++;
      } else if (ch === quote) quote = undefined;
      continue;
    }
    if (ch === '"' || ch === "'") {
      quote = ch;
      text += ch;
      continue;
    }
    if (ch === '$' && /^\$(trigger|initial_state)(?![\w])/.test(source.slice(i, i + 15)) && !/[\w.]$/.test(text)) {
      text += ' ';
      continue;
    }
    const m = ch === '$' && items ? /^\$(item|index)(?![\w])/.exec(source.slice(i, i + 7)) : null;
    if (m) {
      uses.push({ name: `$${m[1]}` as '$item' | '$index', offset: i });
      text += `_${m[1]}`;
      i += m[0].length - 1;
      continue;
    }
    text += ch;
  }
  return { text, uses };
}

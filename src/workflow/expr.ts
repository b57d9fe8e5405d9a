/**
 * The condition language of `skip_when` and `governance.require_approval.when`: CEL, through
 * @marcbachmann/cel-js (safe by construction: no prototype access, no I/O, not Turing complete).
 * Parsed once at compile time; evaluated by the engine against plain JSON data.
 */
import { createRequire } from 'node:module';

// cel-js is loaded on the first expression, not with the core (a workflow without skip_when never
// needs it); require() of this ES module is synchronous on Node ^20.19 and >= 22.12 (engines), as parsing is
type Cel = typeof import('@marcbachmann/cel-js');
let env: InstanceType<Cel['Environment']> | undefined;
const celParse = (source: string): ReturnType<Cel['parse']> => (env ??= environment()).parse(source);

/**
 * The library's default environment (names not declared are `dyn`), plus arithmetic between the numbers
 * data brings and integer literals. JSON numbers reach CEL as doubles, and CEL defines no `double % int`
 * or `double + int`: `$index % 2 == 0`, `$item.words * 2 > 100` or `count + 1 == 3` failed to evaluate
 * ("no such overload"). Mixed operands compute as doubles; `%` by zero is an error, as for CEL's ints.
 */
function environment(): InstanceType<Cel['Environment']> {
  const cel = createRequire(import.meta.url)('@marcbachmann/cel-js') as Cel;
  const e = new cel.Environment({ unlistedVariablesAreDyn: true });
  const num = (x: unknown): number => (typeof x === 'bigint' ? Number(x) : (x as number));
  const ops: Record<string, (a: number, b: number) => number> = {
    '+': (a, b) => a + b,
    '-': (a, b) => a - b,
    '*': (a, b) => a * b,
    '/': (a, b) => a / b,
    '%': (a, b) => {
      if (b === 0) throw new Error('modulus by zero');
      return a % b;
    },
  };
  for (const [op, f] of Object.entries(ops)) {
    const sigs = (op === '%' ? ['double % int', 'int % double', 'double % double'] : [`double ${op} int`, `int ${op} double`]).map((x) => `${x}: double`);
    for (const sig of sigs) e.registerOperator(sig, (a: unknown, b: unknown) => f(num(a), num(b)));
  }
  return e;
}

export interface Expression {
  /** The expression as written. */
  readonly source: string;
  /** Top-level names the expression reads (`risk` in `risk.category == 'HIGH'`), macro variables excluded. */
  readonly names: readonly string[];
  /** Each `name.field` it reads from a top-level name, where (offset and length of `name.field` in the source). */
  readonly fields: readonly FieldRead[];
  /** The `name.field`s it tests with `has(name.field)`. */
  readonly tested: ReadonlySet<string>;
  /** Each whole `name.a.b` it reads from a top-level name (the longest chain of fields), where, and whether `has(...)` tests it. */
  readonly paths: readonly PathRead[];
  /** Evaluates against a context of JSON values. Throws ExpressionError on a runtime error. */
  evaluate(context: Record<string, unknown>): unknown;
}

export interface FieldRead {
  name: string;
  field: string;
  offset: number;
  length: number;
}

export interface PathRead {
  name: string;
  path: readonly string[];
  offset: number;
  length: number;
  /** `has(name.a.b)`: the last field may be absent. */
  tested: boolean;
}

export class ExpressionError extends Error {
  override readonly name = 'ExpressionError';
}

export type ExpressionParse =
  | { ok: true; expression: Expression }
  | { ok: false; message: string; /** offset into the source of the error */ offset: number };

const MACROS_BINDING_VAR = new Set(['exists', 'all', 'exists_one', 'map', 'filter']);

interface CelNode {
  op: string;
  args: unknown;
}

function isNode(v: unknown): v is CelNode {
  return typeof v === 'object' && v !== null && 'op' in v;
}

interface Collected {
  names: Set<string>;
  fields: FieldRead[];
  tested: Set<string>;
  /** By the offset of the chain's name: its longest chain. */
  paths: Map<number, PathRead>;
  testedNodes: Set<unknown>;
}

/** `name.a.b` read from a top-level (unbound) name, with its span. */
function pathOf(node: CelNode, bound: ReadonlySet<string>, tested: boolean): PathRead | undefined {
  const path: string[] = [];
  let n: unknown = node;
  while (isNode(n) && n.op === '.' && Array.isArray(n.args)) {
    const [target, field] = n.args as unknown[];
    if (typeof field !== 'string') return undefined;
    path.unshift(field);
    n = target;
  }
  if (!isNode(n) || n.op !== 'id' || typeof n.args !== 'string' || bound.has(n.args)) return undefined;
  const start = (n as { start?: number }).start;
  const end = (node as { end?: number }).end;
  if (typeof start !== 'number' || typeof end !== 'number') return undefined;
  return { name: n.args, path, offset: start, length: end - start, tested };
}

/** `name.field` of a select on a top-level (unbound) name, with the select's span. */
function fieldOf(node: CelNode, bound: ReadonlySet<string>): FieldRead | undefined {
  if (node.op !== '.' || !Array.isArray(node.args)) return undefined;
  const [target, field] = node.args as unknown[];
  if (!isNode(target) || target.op !== 'id' || typeof target.args !== 'string' || bound.has(target.args) || typeof field !== 'string') return undefined;
  const start = (target as { start?: number }).start;
  const end = (node as { end?: number }).end;
  if (typeof start !== 'number' || typeof end !== 'number') return undefined;
  return { name: target.args, field, offset: start, length: end - start };
}

function collectNames(node: unknown, bound: ReadonlySet<string>, out: Collected): void {
  if (Array.isArray(node)) {
    for (const n of node) collectNames(n, bound, out);
    return;
  }
  if (!isNode(node)) return;
  if (node.op === 'id') {
    if (typeof node.args === 'string' && !bound.has(node.args)) out.names.add(node.args);
    return;
  }
  const read = fieldOf(node, bound);
  if (read) out.fields.push(read);
  const chain = node.op === '.' ? pathOf(node, bound, out.testedNodes.has(node)) : undefined;
  if (chain && chain.path.length > (out.paths.get(chain.offset)?.path.length ?? 0)) out.paths.set(chain.offset, chain);
  const args = Array.isArray(node.args) ? (node.args as unknown[]) : [node.args];
  // has(name.field): the field is tested before it is read
  if (node.op === 'call' && args[0] === 'has' && Array.isArray(args[1]) && isNode(args[1][0])) {
    const tested = fieldOf(args[1][0], bound);
    if (tested) out.tested.add(`${tested.name}.${tested.field}`);
    out.testedNodes.add(args[1][0]);
  }
  if (node.op === 'rcall' && typeof args[0] === 'string' && MACROS_BINDING_VAR.has(args[0])) {
    // rcall [name, receiver, [var, body...]]: the receiver reads outer names, the body binds `var`.
    const rest = args.slice(1);
    const receiver = rest[0];
    collectNames(receiver, bound, out);
    const macroArgs = Array.isArray(rest[1]) ? (rest[1] as unknown[]) : [];
    const v = macroArgs[0];
    const inner = new Set(bound);
    if (isNode(v) && v.op === 'id' && typeof v.args === 'string') inner.add(v.args);
    collectNames(macroArgs.slice(1), inner, out);
    return;
  }
  for (const a of args) collectNames(a, bound, out);
}

function firstLine(e: unknown): string {
  return String((e as { message?: string }).message ?? e).split('\n')[0] ?? 'evaluation failed';
}

/** A JSON value for cel-js: objects holding a `constructor` key become Maps (field access and `has()` read them alike). */
function celValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(celValue);
  if (v === null || typeof v !== 'object' || v instanceof Map) return v;
  const entries = Object.entries(v).map(([k, x]): [string, unknown] => [k, celValue(x)]);
  return Object.prototype.hasOwnProperty.call(v, 'constructor') ? new Map(entries) : Object.fromEntries(entries);
}

/** Parses a condition once (its names collected for the compiler's checks); JSON numbers are evaluated as CEL doubles (see environment()). */
export function parseExpression(source: string): ExpressionParse {
  if (source.trim() === '') return { ok: false, message: 'empty expression', offset: 0 };
  let fn: ((ctx?: Record<string, unknown>) => unknown) & { ast: unknown };
  try {
    fn = celParse(source);
  } catch (e) {
    // the parser recurses: a long chain of operators (`!!!!...`) overflows the stack; say what it means
    if (e instanceof RangeError) return { ok: false, message: 'the expression is nested too deeply', offset: 0 };
    const err = e as { message?: string; node?: { start?: number; pos?: number } };
    const first = String(err.message ?? 'syntax error').split('\n')[0] ?? 'syntax error';
    return { ok: false, message: first, offset: err.node?.start ?? err.node?.pos ?? 0 };
  }
  const collected: Collected = { names: new Set(), fields: [], tested: new Set(), paths: new Map(), testedNodes: new Set() };
  try {
    collectNames(fn.ast, new Set(), collected);
  } catch (e) {
    if (e instanceof RangeError) return { ok: false, message: 'the expression is nested too deeply', offset: 0 };
    throw e;
  }
  const expression: Expression = {
    source,
    names: [...collected.names],
    fields: collected.fields,
    tested: collected.tested,
    paths: [...collected.paths.values()],
    evaluate(context) {
      try {
        return fn(context);
      } catch (e) {
        // cel-js tells a map by its `constructor`: data with a "constructor" key (an item, an output) is not
        // one to it ("Unsupported type: object"). Such objects are handed over as Maps, only then: the usual
        // context is passed as it is, without a copy per evaluation
        if ((e as { code?: unknown }).code === 'unsupported_type' && context !== undefined) {
          try {
            return fn(celValue(context) as Record<string, unknown>);
          } catch (again) {
            throw new ExpressionError(firstLine(again));
          }
        }
        throw new ExpressionError(firstLine(e));
      }
    },
  };
  return { ok: true, expression };
}

/**
 * The type expression grammar (strings in `outputs` and `types`):
 *
 *   type    := postfix ('|' 'null')?
 *   postfix := atom ('[]')*
 *   atom    := IDENT | IDENT '<' type '>'      (array<T>, list<T>)
 *
 * Names are left unresolved here; the registry binds them.
 */

export type TypeExpr =
  | { kind: 'name'; name: string; offset: number }
  | { kind: 'array'; element: TypeExpr }
  | { kind: 'nullable'; inner: TypeExpr };

export type ParseResult = { ok: true; expr: TypeExpr } | { ok: false; message: string; offset: number };

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/y;
/** Arrays nested in one type expression: a string can nest without limit, and every later stage recurses. */
export const MAX_TYPE_NESTING = 64;
export const ARRAY_CONSTRUCTORS = new Set(['array', 'list']);

export function parseTypeExpr(text: string): ParseResult {
  let pos = 0;
  const ws = (): void => {
    while (pos < text.length && (text[pos] === ' ' || text[pos] === '\t')) pos++;
  };
  const fail = (message: string): ParseResult => ({ ok: false, message, offset: pos });
  let nesting = 0; // arrays enclosing the current position
  const tooDeep = (): ParseResult => fail(`arrays nested too deeply (limit ${MAX_TYPE_NESTING})`);

  function type(): TypeExpr | ParseResult {
    const inner = postfix();
    if ('ok' in inner) return inner;
    ws();
    if (text[pos] === '|') {
      pos++;
      ws();
      IDENT.lastIndex = pos;
      const m = IDENT.exec(text);
      if (!m || m[0] !== 'null') return fail('only `| null` may follow a type (`T | null` makes it nullable)');
      pos += 4;
      return { kind: 'nullable', inner };
    }
    return inner;
  }

  function postfix(): TypeExpr | ParseResult {
    const outer = nesting;
    let t = atom();
    if ('ok' in t) return t;
    const base = outer + depthOf(t);
    for (let suffixes = 1; ; suffixes++) {
      ws();
      if (text.startsWith('[]', pos)) {
        if (base + suffixes > MAX_TYPE_NESTING) return tooDeep();
        pos += 2;
        t = { kind: 'array', element: t };
      } else if (text[pos] === '[') {
        return fail('expected `[]` (an array of the type before it)');
      } else return t;
    }
  }

  function atom(): TypeExpr | ParseResult {
    ws();
    const start = pos;
    IDENT.lastIndex = pos;
    const m = IDENT.exec(text);
    if (!m) return fail(pos >= text.length ? 'expected a type name' : `unexpected \`${text[pos]}\` where a type name was expected`);
    pos += m[0].length;
    ws();
    if (text[pos] === '<') {
      if (!ARRAY_CONSTRUCTORS.has(m[0])) {
        pos = start;
        return fail(`\`${m[0]}<...>\` is not a type constructor; use \`array<T>\` or \`T[]\``);
      }
      pos++;
      if (++nesting > MAX_TYPE_NESTING) return tooDeep();
      const el = type();
      nesting--;
      if ('ok' in el) return el;
      ws();
      if (text[pos] !== '>') return fail('expected `>` to close `array<...>`');
      pos++;
      return { kind: 'array', element: el };
    }
    return { kind: 'name', name: m[0], offset: start };
  }

  if (text.trim() === '') return { ok: false, message: 'empty type', offset: 0 };
  const t = type();
  if ('ok' in t) return t;
  ws();
  if (pos < text.length) return fail(`unexpected \`${text.slice(pos)}\` after the type`);
  return { ok: true, expr: t };
}

/** Array levels of a parsed expression (iterative: bounded by MAX_TYPE_NESTING anyway). */
function depthOf(t: TypeExpr): number {
  let d = 0;
  for (let x: TypeExpr = t; x.kind !== 'name'; x = x.kind === 'array' ? x.element : x.inner) if (x.kind === 'array') d++;
  return d;
}

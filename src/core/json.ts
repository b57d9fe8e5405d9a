/** JSON values as Baton sees them: what crosses a phase boundary, the store and the wire. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** The JSON type name of a runtime value, as reported in `actual_type` (RFC-0024 §4.2). */
export type JsonTypeName = 'string' | 'number' | 'boolean' | 'null' | 'object' | 'array';

/**
 * Names the JSON type of any runtime value. Values that are not JSON (undefined, functions, NaN,
 * Infinity, class instances such as Date) get a descriptive non-JSON name so that error messages
 * say what actually came back.
 */
export function jsonTypeOf(value: unknown): JsonTypeName | 'undefined' | 'non-finite number' | 'function' | 'bigint' | 'symbol' | 'non-plain object' {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'number':
      return Number.isFinite(value) ? 'number' : 'non-finite number';
    case 'boolean':
      return 'boolean';
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'function';
    case 'bigint':
      return 'bigint';
    case 'symbol':
      return 'symbol';
    case 'object':
      return isPlainObject(value) ? 'object' : 'non-plain object';
  }
  return 'non-plain object';
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Own-property lookup that never reaches the prototype chain (`constructor`, `__proto__`). */
export function ownGet(obj: unknown, key: string): unknown {
  if (obj === null || typeof obj !== 'object') return undefined;
  return Object.prototype.hasOwnProperty.call(obj, key) ? (obj as Record<string, unknown>)[key] : undefined;
}

export function hasOwn(obj: unknown, key: string): boolean {
  return obj !== null && typeof obj === 'object' && Object.prototype.hasOwnProperty.call(obj, key);
}

/** A deep copy of a JSON value (faster than structuredClone for the small values phases pass). */
export function cloneJson<T extends Json>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const out = new Array<Json>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = cloneJson(value[i]!);
    return out as T;
  }
  const out: { [key: string]: Json } = {};
  const obj: { [key: string]: Json } = value;
  // for-in over own keys, in Object.keys' order: no array of keys made per object (a phase's inputs are copied for every attempt)
  for (const k in obj) {
    if (!Object.prototype.hasOwnProperty.call(obj, k)) continue;
    // `out.__proto__ = v` would set the prototype and drop the key: JSON's "__proto__" is an ordinary key
    if (k === '__proto__') Object.defineProperty(out, k, { value: cloneJson(obj[k]!), enumerable: true, writable: true, configurable: true });
    else out[k] = cloneJson(obj[k]!);
  }
  return out as T;
}

/**
 * Where JSON.parse stopped, from its error, as 1-based line and column when the error says (`at position
 * N`, or the end of the text when it ran out). V8 names no position for an unexpected token (`[1,]`,
 * `{"a": tru}`, a byte order mark): the text is then scanned for its first error, so a trailing comma on
 * line 40 is reported there too. The reason comes without Node's position words or its copy of the text
 * (which spans lines when the text does).
 */
export function jsonSyntaxError(err: unknown, text: string): { line: number; column: number; reason: string } | { line?: undefined; column?: undefined; reason: string } {
  const full = err instanceof Error ? err.message : String(err);
  const m = /\bat position (\d+)/.exec(full);
  const ended = /^Unexpected end of JSON input/.test(full);
  const reason = ended
    ? 'the text ends before the value does'
    : (/^(Unexpected token .*?), (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s.exec(full)?.[1] ?? full.split('\n')[0]!)
        .replace(/\s*\(line \d+ column \d+\)/, '')
        .replace(/\s*in JSON at position \d+/, '');
  const lower = reason.charAt(0).toLowerCase() + reason.slice(1);
  const offset = m ? Math.min(Number(m[1]), text.length) : ended ? text.length : firstJsonError(text);
  if (offset === undefined) return { reason: lower };
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: offset - start + 1, reason: lower };
}

/** The offset of the first character where `text` stops being JSON (RFC 8259), or undefined when it is JSON (or too deep to scan). */
export function firstJsonError(text: string): number | undefined {
  let i = 0;
  const n = text.length;
  const fail = (): never => {
    throw new JsonScanStop(i);
  };
  const space = (): void => {
    for (let c = text.charCodeAt(i); c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d; c = text.charCodeAt(++i));
  };
  const digits = (): void => {
    if (!(text[i]! >= '0' && text[i]! <= '9')) fail();
    while (text[i]! >= '0' && text[i]! <= '9') i++;
  };
  const string = (): void => {
    i++; // the opening quote
    for (;;) {
      if (i >= n) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) return void i++;
      if (c < 0x20) fail();
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail();
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else fail();
      } else i++;
    }
  };
  const value = (depth: number): void => {
    if (depth > 1000) throw new JsonScanStop(undefined);
    space();
    const c = text[i];
    if (c === '{') {
      i++;
      space();
      if (text[i] === '}') return void i++;
      for (;;) {
        space();
        if (text[i] !== '"') fail();
        string();
        space();
        if (text[i] !== ':') fail();
        i++;
        value(depth + 1);
        space();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return void i++;
        else fail();
      }
    }
    if (c === '[') {
      i++;
      space();
      if (text[i] === ']') return void i++;
      for (;;) {
        value(depth + 1);
        space();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return void i++;
        else fail();
      }
    }
    if (c === '"') return string();
    for (const word of ['true', 'false', 'null']) {
      if (c === word[0]) {
        for (const ch of word) {
          if (text[i] !== ch) fail();
          i++;
        }
        return;
      }
    }
    if (c === '-') i++;
    if (text[i] === '0') i++;
    else digits();
    if (text[i] === '.') {
      i++;
      digits();
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++;
      if (text[i] === '+' || text[i] === '-') i++;
      digits();
    }
  };
  try {
    value(0);
    space();
    return i < n ? i : undefined;
  } catch (e) {
    if (e instanceof JsonScanStop) return e.offset;
    throw e;
  }
}

/** How the scan stops (an error object: the lint's rule; never leaves firstJsonError). */
class JsonScanStop extends Error {
  constructor(readonly offset: number | undefined) {
    super('not JSON');
  }
}

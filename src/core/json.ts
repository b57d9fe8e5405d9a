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
 * N`, or the end of the text when it ran out; V8 names no position for an unexpected token), and the
 * reason without Node's own position words.
 */
export function jsonSyntaxError(err: unknown, text: string): { line: number; column: number; reason: string } | { line?: undefined; column?: undefined; reason: string } {
  const message = (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
  const m = /\bat position (\d+)/.exec(message);
  const ended = /^Unexpected end of JSON input/.test(message);
  const reason = ended
    ? 'the text ends before the value does'
    : message
        .replace(/\s*\(line \d+ column \d+\)/, '')
        .replace(/\s*in JSON at position \d+/, '')
        .replace(/^(Unexpected token .*?), ".*" is not valid JSON$/s, '$1');
  const lower = reason.charAt(0).toLowerCase() + reason.slice(1);
  if (!m && !ended) return { reason: lower };
  const offset = m ? Math.min(Number(m[1]), text.length) : text.length;
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, column: offset - start + 1, reason: lower };
}

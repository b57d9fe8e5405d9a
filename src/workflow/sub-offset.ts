/**
 * Positions inside a scalar: a diagnostic about part of a string (a condition's name, a path's token) carries
 * `data.offset` / `data.length` in the string's value; here they become a range in the source text.
 */
import { isPlainObject } from '../core/json.js';
import type { Path } from '../core/path.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';

/** Expression diagnostics point inside the string: shift by the offset (and the opening quote). */
export function withSubOffset(d: Diagnostic, r: readonly [number, number], text: string, doc: unknown): readonly [number, number] {
  const sub = d.data?.['offset'];
  if (typeof sub !== 'number') return r;
  const len = typeof d.data?.['length'] === 'number' ? Math.max(1, d.data['length']) : 1;
  const value = valueAtPath(doc, d.path);
  if (typeof value === 'string' && sub >= value.length && r[1] > r[0]) {
    // the end of the value (an expression cut short: `a.k > 3 &&`): after its last character as written, or at
    // the closing quote; a block scalar's end would otherwise land inside the next line's indentation
    let end = r[1];
    while (end > r[0] + 1 && /\s/.test(text[end - 1]!)) end--;
    const closing = text[r[0]] === '"' || text[r[0]] === "'" ? text[r[0]] : undefined;
    const start = closing !== undefined && text[end - 1] === closing ? end - 1 : end;
    return [start, start + 1];
  }
  const written = typeof value === 'string' ? writtenAt(value, sub, len, text, r) : undefined;
  if (written !== undefined) return [written, written + len];
  const quoted = text[r[0]] === '"' || text[r[0]] === "'" ? 1 : 0;
  const start = Math.min(r[0] + quoted + sub, r[1]);
  return [start, Math.max(start + 1, Math.min(r[1], start + len))];
}

function valueAtPath(doc: unknown, path: Path): unknown {
  let v = doc;
  for (const seg of path) {
    if (Array.isArray(v) && typeof seg === 'number') v = v[seg];
    else if (isPlainObject(v) && typeof seg === 'string' && Object.prototype.hasOwnProperty.call(v, seg)) v = v[seg];
    else return undefined;
  }
  return v;
}

/**
 * Where `value.slice(sub, sub + len)` is written in the scalar's source `text[r]`. Escapes (`\"`, `\u00e9`, `''`),
 * folded lines and a block scalar's indentation move offsets but not words: the text is found as the same
 * occurrence of itself in the source, when it occurs there as often as in the value (else undefined).
 */
function writtenAt(value: string, sub: number, len: number, text: string, r: readonly [number, number]): number | undefined {
  const needle = value.slice(sub, sub + len);
  if (needle.length !== len || /\s/.test(needle)) return undefined;
  const starts = (s: string): number[] => {
    const out: number[] = [];
    for (let i = s.indexOf(needle); i !== -1; i = s.indexOf(needle, i + needle.length)) out.push(i);
    return out;
  };
  const k = starts(value).indexOf(sub);
  const inSource = starts(text.slice(r[0], r[1]));
  if (k === -1 || inSource.length !== starts(value).length) return undefined;
  return r[0] + inSource[k]!;
}

/**
 * Repairing broken JSON from a model. `jsonrepair` does the rewriting; this file names what was
 * wrong (each kind is recorded in the run's events) and refuses repairs that would invent data:
 * a value cut inside a string or after a key is not completed. Types are never coerced: `"5"`
 * stays a string, and the schema decides.
 */
import { createRequire } from 'node:module';
import { rewrite } from './rewrite.js';

// loaded on the first reply that needs repairing (its CommonJS build: synchronous)
let repairer: typeof import('jsonrepair') | undefined;
const jsonrepair = (text: string): string => (repairer ??= createRequire(import.meta.url)('jsonrepair') as typeof import('jsonrepair')).jsonrepair(text);

export type RepairKind =
  | 'trailing_comma'
  | 'comment'
  | 'single_quotes'
  | 'unquoted_key'
  | 'unquoted_string'
  | 'python_literal'
  | 'curly_quotes'
  | 'missing_comma'
  | 'truncated'
  | 'control_character'
  | 'other';

export type ParseOutcome = { ok: true; value: unknown; repairs: RepairKind[] } | { ok: false; message: string };

const PY_LITERALS = new Set(['True', 'False', 'None']);
const JSON_LITERALS = new Set(['true', 'false', 'null']);

/** Parses JSON text, repairing it when needed. Never throws. */
export function parseJsonLenient(text: string): ParseOutcome {
  try {
    return { ok: true, value: JSON.parse(text), repairs: [] };
  } catch (e) {
    // the fast path: one linear rewrite of the usual breakage
    const fast = rewrite(text);
    if (fast && !fast.ok) return { ok: false, message: fast.refuse };
    if (fast?.ok) {
      try {
        return { ok: true, value: JSON.parse(fast.text), repairs: fast.kinds.length > 0 ? fast.kinds : ['other'] };
      } catch {
        // fall through to the general repairer
      }
    }
    const scan = scanBreakage(text);
    if (scan.refuse) return { ok: false, message: scan.refuse };
    let repaired: string;
    try {
      repaired = jsonrepair(text);
    } catch {
      return { ok: false, message: `not JSON (${(e as Error).message})` };
    }
    try {
      const value: unknown = JSON.parse(repaired);
      return { ok: true, value, repairs: scan.kinds.length > 0 ? scan.kinds : ['other'] };
    } catch {
      return { ok: false, message: `not JSON (${(e as Error).message})` };
    }
  }
}

interface Scan {
  kinds: RepairKind[];
  refuse?: string;
}

/** One linear pass over the text naming the kinds of breakage (outside JSON strings). */
export function scanBreakage(s: string): Scan {
  const kinds = new Set<RepairKind>();
  const n = s.length;
  let depth = 0;
  let valueEnded = false; // a value just ended: the next value needs a comma first
  let i = 0;
  while (i < n) {
    const ch = s[i]!;
    if (ch === '"') {
      if (valueEnded) kinds.add('missing_comma');
      const end = skipString(s, i, '"');
      if (end < 0) return { kinds: [...kinds], refuse: 'the reply is cut inside a string' };
      i = end;
      valueEnded = true;
      continue;
    }
    if (ch === "'" || ch === '\u2018' || ch === '\u201c') {
      if (valueEnded) kinds.add('missing_comma');
      kinds.add(ch === "'" ? 'single_quotes' : 'curly_quotes');
      const close = ch === "'" ? "'" : ch === '\u2018' ? '\u2019' : '\u201d';
      const end = skipString(s, i, close);
      if (end < 0) return { kinds: [...kinds], refuse: 'the reply is cut inside a string' };
      i = end;
      valueEnded = true;
      continue;
    }
    if (ch === '/' && (s[i + 1] === '/' || s[i + 1] === '*')) {
      kinds.add('comment');
      if (s[i + 1] === '/') {
        const nl = s.indexOf('\n', i);
        i = nl < 0 ? n : nl;
      } else {
        const close = s.indexOf('*/', i + 2);
        i = close < 0 ? n : close + 2;
      }
      continue;
    }
    if (ch === '#') {
      kinds.add('comment');
      const nl = s.indexOf('\n', i);
      i = nl < 0 ? n : nl;
      continue;
    }
    if (ch === '{' || ch === '[') {
      if (valueEnded) kinds.add('missing_comma');
      depth++;
      valueEnded = false;
      i++;
      continue;
    }
    if (ch === '}' || ch === ']') {
      depth--;
      valueEnded = true;
      i++;
      continue;
    }
    if (ch === ',') {
      if (nextSignificant(s, i + 1) === '}' || nextSignificant(s, i + 1) === ']') kinds.add('trailing_comma');
      valueEnded = false;
      i++;
      continue;
    }
    if (ch === ':') {
      valueEnded = false;
      i++;
      continue;
    }
    if (isWordStart(ch)) {
      let j = i + 1;
      while (j < n && isWordPart(s[j]!)) j++;
      const word = s.slice(i, j);
      if (valueEnded) kinds.add('missing_comma');
      if (nextSignificant(s, j) === ':') kinds.add('unquoted_key');
      else if (PY_LITERALS.has(word)) kinds.add('python_literal');
      else if (!JSON_LITERALS.has(word)) kinds.add('unquoted_string');
      i = j;
      valueEnded = nextSignificant(s, j) !== ':';
      continue;
    }
    if (ch === '-' || (ch >= '0' && ch <= '9')) {
      if (valueEnded) kinds.add('missing_comma');
      let j = i + 1;
      while (j < n && /[\d.eE+-]/.test(s[j]!)) j++;
      i = j;
      valueEnded = true;
      continue;
    }
    i++;
  }
  if (depth > 0) {
    const last = lastSignificant(s);
    if (last === ':') return { kinds: [...kinds], refuse: 'the reply is cut after a key, before its value' };
    kinds.add('truncated');
  }
  return { kinds: [...kinds] };
}

/** Index after the closing quote, or -1 when the string never closes. */
function skipString(s: string, i: number, close: string): number {
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j]!;
    if (c === '\\') j++;
    else if (c === close) return j + 1;
  }
  return -1;
}

function nextSignificant(s: string, i: number): string | undefined {
  for (let j = i; j < s.length; j++) {
    const c = s[j]!;
    if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') return c;
  }
  return undefined;
}

function lastSignificant(s: string): string | undefined {
  for (let j = s.length - 1; j >= 0; j--) {
    const c = s[j]!;
    if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') return c;
  }
  return undefined;
}

function isWordStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_' || c === '$';
}

function isWordPart(c: string): boolean {
  return isWordStart(c) || (c >= '0' && c <= '9') || c === '-';
}

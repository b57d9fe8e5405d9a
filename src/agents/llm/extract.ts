/**
 * Finding JSON in a model's reply: the whole reply, fenced blocks, and objects or arrays embedded in
 * prose. Every scan is linear in the reply and bounded in candidates, so a hostile reply cannot
 * make it hang; nothing here throws.
 */

export type CandidateKind = 'plain' | 'fenced' | 'embedded';

export interface Candidate {
  kind: CandidateKind;
  text: string;
  /** Offset in the reply (orders candidates: the last one wins among equals). */
  start: number;
}

/** More candidates than this are not looked at (a reply is an answer, not a haystack). */
const MAX_CANDIDATES = 64;
const FENCE = /```[ \t]*([A-Za-z0-9_+-]*)[^\n`]*\n([\s\S]*?)(?:\n[ \t]*```|$(?![\s\S]))/g;

export function findCandidates(reply: string): Candidate[] {
  const out: Candidate[] = [];
  const trimmed = reply.trim();
  // the whole reply is a candidate when it starts like a JSON value (prose starting with "The" is not one)
  if (trimmed !== '' && (/^[[{"\d-]/.test(trimmed) || /^(true|false|null|True|False|None)$/.test(trimmed))) out.push({ kind: 'plain', text: trimmed, start: reply.indexOf(trimmed[0]!) });

  // fenced blocks (an unterminated fence runs to the end: a truncated reply)
  const seen = new Set(out.map((c) => c.text));
  const covered: [number, number][] = [];
  FENCE.lastIndex = 0;
  for (let m = FENCE.exec(reply); m !== null && out.length < MAX_CANDIDATES; m = FENCE.exec(reply)) {
    const lang = (m[1] ?? '').toLowerCase();
    const body = (m[2] ?? '').trim();
    if (m[0].length === 0) FENCE.lastIndex++;
    if (body === '' || (lang !== '' && !/^(json[c5]?|javascript|js|yaml|text)$/.test(lang)) || seen.has(body)) continue;
    seen.add(body);
    covered.push([m.index, m.index + m[0].length]);
    out.push({ kind: 'fenced', text: body, start: m.index });
  }

  // objects and arrays in prose, outside fences, non-overlapping
  let i = 0;
  let c = 0;
  const n = reply.length;
  while (i < n && out.length < MAX_CANDIDATES) {
    if (c < covered.length && i >= covered[c]![0]) {
      i = Math.max(i, covered[c]![1]);
      c++;
      continue;
    }
    const ch = reply.charCodeAt(i);
    if (ch === 123 /* { */ || (ch === 91 /* [ */ && looksLikeArrayStart(reply, i))) {
      const end = balancedEnd(reply, i, c < covered.length ? covered[c]![0] : n);
      const text = reply.slice(i, end);
      const key = text.trim();
      if (!seen.has(key)) {
        seen.add(key);
        out.push({ kind: 'embedded', text, start: i });
      }
      i = end;
      continue;
    }
    i++;
  }
  return out.sort((a, b) => a.start - b.start);
}

/** `[` followed by something JSON-like (not `[1]` citations or `[x]` checkboxes alone: those fail later anyway). */
function looksLikeArrayStart(s: string, i: number): boolean {
  for (let j = i + 1; j < s.length && j < i + 64; j++) {
    const ch = s[j]!;
    if (ch === ' ' || ch === '\n' || ch === '\r' || ch === '\t') continue;
    return ch === '{' || ch === '[' || ch === '"' || ch === ']' || ch === '-' || (ch >= '0' && ch <= '9') || ch === 't' || ch === 'f' || ch === 'n';
  }
  return false;
}

/**
 * The end of the bracketed value starting at `start`: string-aware (double and single quotes),
 * stopping at `limit`. An unbalanced value runs to the limit (a truncated tail, repaired later).
 */
export function balancedEnd(s: string, start: number, limit: number): number {
  let depth = 0;
  let quote = 0;
  for (let i = start; i < limit; i++) {
    const ch = s.charCodeAt(i);
    if (quote !== 0) {
      if (ch === 92 /* \ */) i++;
      else if (ch === quote) quote = 0;
      else if (ch === 10 && quote === 39) quote = 0; // an apostrophe in prose, not a string
      continue;
    }
    if (ch === 34 /* " */) quote = 34;
    else if (ch === 39 /* ' */ && depth > 0 && isQuoteStart(s, i)) quote = 39;
    else if (ch === 123 || ch === 91) depth++;
    else if (ch === 125 || ch === 93) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return limit;
}

/** A single quote opens a string only after `{ [ , :` (so "don't" in a value is not a string start). */
function isQuoteStart(s: string, i: number): boolean {
  for (let j = i - 1; j >= 0; j--) {
    const ch = s[j]!;
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') continue;
    return ch === '{' || ch === '[' || ch === ',' || ch === ':';
  }
  return false;
}

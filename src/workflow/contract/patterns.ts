/**
 * Workspace path patterns, as side effects declare them, and whether two of them may name one file.
 * A pattern is a path with wildcards: `*` (any characters within a segment), `?` (one character),
 * `**` (anything, across segments) and placeholders `{name}` (a value of the phase's input, or an
 * item token `<index>` / `<item.x>` already written as `{index}` / `{item.x}`: one or more characters
 * within a segment). Every other character stands for itself (the run's tokens, `<runId>`, are the same
 * for every phase of a run, so they compare as text).
 */

type Token = { k: 'lit'; c: string } | { k: 'one' } | { k: 'star' } | { k: 'any' } | { k: 'dig' } | { k: 'digs' };

/** A placeholder: `{name}`. */
export const PLACEHOLDER = /\{[^{}]*\}/;

/** Whether the pattern names one fixed file: no placeholder, no wildcard. */
export function isLiteral(p: string): boolean {
  return !PLACEHOLDER.test(p) && !/[*?]/.test(p);
}

function tokens(p: string): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < p.length; i++) {
    const ch = p[i]!;
    if (ch === '*' && p[i + 1] === '*') {
      out.push({ k: 'any' });
      i++;
      if (p[i + 1] === '/') i++; // `a/**/b` also matches `a/b`
    } else if (ch === '*') out.push({ k: 'star' });
    else if (ch === '?') out.push({ k: 'one' });
    else if (ch === '{' && p.indexOf('}', i) > i) {
      const end = p.indexOf('}', i);
      // an item's index is digits; any other value: at least one character
      if (p.slice(i + 1, end) === 'index') out.push({ k: 'dig' }, { k: 'digs' });
      else out.push({ k: 'one' }, { k: 'star' });
      i = end;
    } else out.push({ k: 'lit', c: ch });
  }
  return out;
}

/** Whether one character can match both tokens (`any` takes `/`, `one` and `star` do not). */
function meet(a: Token, b: Token): boolean {
  if (a.k === 'lit' && b.k === 'lit') return a.c === b.c;
  if (a.k === 'lit') return litMeets(a.c, b);
  if (b.k === 'lit') return litMeets(b.c, a);
  return true; // every wildcard takes a digit
}

/** Whether the character `c` matches the wildcard `w` (`any` takes `/`, `one` and `star` do not; digits only digits). */
function litMeets(c: string, w: Token): boolean {
  if (w.k === 'dig' || w.k === 'digs') return c >= '0' && c <= '9';
  return w.k === 'any' || c !== '/';
}

const repeats = (t: Token): boolean => t.k === 'star' || t.k === 'any' || t.k === 'digs';

/**
 * May the two patterns name the same file: is there a path both match? Placeholders and globs are
 * wildcards, so `out/{index}.txt` meets `out/{index}.txt` and `out/0.txt`, but not `out/{index}.md`,
 * and `a/{x}.md` never meets `b/{x}.md`. Decided exactly, over the pair of positions in both patterns.
 */
export function patternsOverlap(a: string, b: string): boolean {
  if (a === b) return true;
  const ta = tokens(a);
  const tb = tokens(b);
  const width = tb.length + 1;
  const seen = new Uint8Array((ta.length + 1) * width);
  const stack: number[] = [0];
  seen[0] = 1;
  const push = (i: number, j: number): void => {
    const s = i * width + j;
    if (seen[s] === 0) {
      seen[s] = 1;
      stack.push(s);
    }
  };
  while (stack.length > 0) {
    const s = stack.pop()!;
    const i = Math.floor(s / width);
    const j = s % width;
    if (i === ta.length && j === tb.length) return true;
    const x = ta[i];
    const y = tb[j];
    // a wildcard that repeats may match nothing
    if (x && repeats(x)) push(i + 1, j);
    if (y && repeats(y)) push(i, j + 1);
    // one character both match
    if (x && y && meet(x, y)) {
      const ni = repeats(x) ? i : i + 1;
      const nj = repeats(y) ? j : j + 1;
      if (ni !== i || nj !== j) push(ni, nj);
    }
  }
  return false;
}

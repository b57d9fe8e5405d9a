/** Damerau-Levenshtein (optimal string alignment) distance, for "did you mean" hints. */
export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  if (m === 0) return n;
  if (n === 0) return m;
  let prev2: number[] = new Array<number>(n + 1).fill(0);
  let prev: number[] = Array.from({ length: n + 1 }, (_, j) => j);
  let cur: number[] = new Array<number>(n + 1).fill(0);
  for (let i = 1; i <= m; i++) {
    cur[0] = i;
    for (let j = 1; j <= n; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, (prev2[j - 2] ?? 0) + 1);
      cur[j] = v;
    }
    [prev2, prev, cur] = [prev, cur, prev2];
  }
  return prev[n] ?? 0;
}

/**
 * editDistance when it is at most `max`, else `max + 1`, without computing the rest: a length gap
 * larger than `max` answers at once, and the table stops once two rows in a row exceed `max` (no
 * later cell can come back under it). Hints compare every unknown name with every known one, so
 * this is what keeps a file with thousands of typos from taking seconds.
 */
export function editDistanceWithin(a: string, b: string, max: number): number {
  const m = a.length;
  const n = b.length;
  if (Math.abs(m - n) > max) return max + 1;
  if (m === 0 || n === 0) return Math.max(m, n);
  if (rows[0]!.length <= n) for (let k = 0; k < 3; k++) rows[k] = new Int32Array(2 * n + 2);
  let prev2 = rows[0]!;
  let prev = rows[1]!;
  let cur = rows[2]!;
  for (let j = 0; j <= n; j++) prev[j] = j;
  let prevMin = 0;
  for (let i = 1; i <= m; i++) {
    cur[0] = i;
    let rowMin = i;
    const ai = a.charCodeAt(i - 1);
    const ai1 = i > 1 ? a.charCodeAt(i - 2) : -1;
    for (let j = 1; j <= n; j++) {
      const bj = b.charCodeAt(j - 1);
      let v = prev[j - 1]! + (ai === bj ? 0 : 1);
      const del = prev[j]! + 1;
      if (del < v) v = del;
      const ins = cur[j - 1]! + 1;
      if (ins < v) v = ins;
      if (j > 1 && ai1 === bj && ai === b.charCodeAt(j - 2)) {
        const t = prev2[j - 2]! + 1;
        if (t < v) v = t;
      }
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max && prevMin > max) return max + 1;
    prevMin = rowMin;
    const t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  const d = prev[n]!;
  return d > max ? max + 1 : d;
}
/** Rows reused across calls (hints compare thousands of pairs). */
const rows: Int32Array[] = [new Int32Array(64), new Int32Array(64), new Int32Array(64)];

/** The closest candidate within a distance that scales with the word's length, or undefined. */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.max(1, Math.min(3, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestD = Infinity;
  const lw = word.toLowerCase();
  for (const c of candidates) {
    const lc = c.toLowerCase();
    const d = lc === lw ? 0 : editDistanceWithin(lw, lc, Math.min(limit, bestD));
    if (d < bestD || (d === bestD && best !== undefined && c < best)) {
      best = c;
      bestD = d;
    }
  }
  return bestD <= limit ? best : undefined;
}

export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const c = closest(word, candidates);
  return c === undefined ? undefined : `did you mean \`${c}\`?`;
}

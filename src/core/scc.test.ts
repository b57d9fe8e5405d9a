import { describe, expect, test } from 'vitest';
import { stronglyConnected } from './scc.js';

const graph = (edges: Record<string, string[]>) => (n: string): string[] => edges[n] ?? [];

describe('stronglyConnected', () => {
  test('cycles are one component each; components come out successors first', () => {
    const { comp, comps } = stronglyConnected(['a', 'b', 'c', 'd', 'e'], graph({ a: ['b'], b: ['c', 'a'], c: ['d'], d: ['c'], e: ['e'] }));
    expect(comps.map((m) => [...m].sort())).toEqual([['c', 'd'], ['a', 'b'], ['e']]);
    expect(comp.get('a')).toBe(comp.get('b'));
    expect(comp.get('c')).not.toBe(comp.get('a'));
  });

  test('a chain of 100,000 nodes does not overflow the stack', () => {
    const n = 100_000;
    const names = Array.from({ length: n }, (_, i) => `n${i}`);
    const { comps } = stronglyConnected(names, (v) => {
      const i = Number(v.slice(1));
      return i + 1 < n ? [`n${i + 1}`] : ['n0'];
    });
    expect(comps).toHaveLength(1);
    expect(comps[0]).toHaveLength(n);
  });
});

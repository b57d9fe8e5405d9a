import { describe, expect, test } from 'vitest';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { checkGraph, topologicalOrder, type GraphPhase } from './graph.js';

const phase = (name: string, deps: string[] = [], title?: string): GraphPhase => ({ name, title, dependsOn: deps.map((d, index) => ({ name: d, index })) });

describe('checkGraph', () => {
  test("the spec's Example Validation Errors, in its words", () => {
    const out: Diagnostic[] = [];
    checkGraph([phase('research'), phase('synthesis', ['resarch']), phase('a', ['b']), phase('b', ['c']), phase('c', ['a'])], out);
    expect(out.map((d) => d.message)).toEqual(["Phase 'synthesis' depends on unknown phase 'resarch'", 'Circular dependency detected: a -> b -> c -> a']);
    expect(out[1]?.hint).toBe('Remove one of the dependencies to break the cycle');
  });

  test('prints the whole cycle once, at the closing entry', () => {
    const out: Diagnostic[] = [];
    checkGraph([phase('a', ['c']), phase('b', ['a']), phase('c', ['b'])], out);
    expect(out.map((d) => [d.code, d.data?.['cycle']])).toEqual([['dependency-cycle', ['a', 'c', 'b', 'a']]]);
  });

  test('a self-dependency is a cycle, whose hint says a phase cannot depend on itself', () => {
    const out: Diagnostic[] = [];
    checkGraph([phase('a', ['a'])], out);
    expect(out.map((d) => d.code)).toEqual(['dependency-cycle']);
    expect(out[0]?.hint).toBe('a phase cannot depend on itself: remove `a` from its depends_on');
  });

  test('two separate cycles are both reported', () => {
    const out: Diagnostic[] = [];
    checkGraph([phase('a', ['b']), phase('b', ['a']), phase('c', ['d']), phase('d', ['c'])], out);
    expect(out.filter((d) => d.code === 'dependency-cycle')).toHaveLength(2);
  });

  test('a title used as a dependency gets a hint naming the phase', () => {
    const out: Diagnostic[] = [];
    checkGraph([phase('research', [], 'Gather Research'), phase('b', ['Gather Research'])], out);
    expect(out[0]?.code).toBe('unknown-dependency');
    expect(out[0]?.hint).toContain('`research`');
    expect(out[0]?.path).toEqual(['workflow', 'b', 'depends_on', 0]);
  });

  test('the hint never offers the phase itself (depending on it would be a cycle)', () => {
    const out: Diagnostic[] = [];
    checkGraph([phase('a', ['b'], 'b'), phase('c', ['zz']), phase('d', [])], out);
    expect(out.map((d) => d.code)).toEqual(['unknown-dependency', 'unknown-dependency']);
    expect(out[0]?.hint).not.toContain('`a`');
    expect(out[1]?.hint).toBe('Available phases: a, d');
    const alone: Diagnostic[] = [];
    checkGraph([phase('a', ['b'])], alone);
    expect(alone[0]?.hint).not.toContain('`a`?');
  });

  test('a 20,000-phase chain does not overflow the stack', () => {
    const phases = Array.from({ length: 20_000 }, (_, i) => phase(`p${i}`, i === 0 ? [] : [`p${i - 1}`]));
    const out: Diagnostic[] = [];
    const edges = checkGraph(phases, out);
    expect(out).toEqual([]);
    expect(topologicalOrder(phases.map((p) => p.name), edges).slice(0, 3)).toEqual(['p0', 'p1', 'p2']);
  });
});

describe('topologicalOrder', () => {
  test('dependencies come first, document order among ready phases', () => {
    const edges = new Map([
      ['report', ['a', 'b']],
      ['a', []],
      ['b', ['a']],
    ]);
    expect(topologicalOrder(['report', 'a', 'b'], edges)).toEqual(['a', 'b', 'report']);
  });
});

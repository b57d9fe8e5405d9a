import { describe, expect, test } from 'vitest';
import { parseInputRef } from './wiring.js';

describe('parseInputRef', () => {
  test.each([
    ['research.findings', { kind: 'phase', phase: 'research', key: 'findings', path: [] }],
    ['research.summary.title', { kind: 'phase', phase: 'research', key: 'summary', path: ['title'] }],
    ['$trigger.quarter', { kind: 'trigger', key: 'quarter', path: [] }],
    ['$initial_state.source', { kind: 'initial_state', key: 'source', path: [] }],
    ['fetch-hr.head_count', { kind: 'phase', phase: 'fetch-hr', key: 'head_count', path: [] }],
    ['$item', { kind: 'item', path: [] }],
    ['$item.outline.title', { kind: 'item', path: ['outline', 'title'] }],
    ['$index', { kind: 'index' }],
    // a name in any script (YAML keys are Unicode; a phase named so must be reachable)
    ['調査.結果', { kind: 'phase', phase: '調査', key: '結果', path: [] }],
    ['café.résumé.titre_1', { kind: 'phase', phase: 'café', key: 'résumé', path: ['titre_1'] }],
    ['$item.नाम', { kind: 'item', path: ['नाम'] }],
  ])('%s', (ref, source) => {
    expect(parseInputRef(ref)).toEqual({ ok: true, source });
  });

  test.each(['findings', '$trigger.', '$trigger', '$initial_state.', '$env.HOME', 'a..b', ' research.x', 'research.', '.x', '', '$index.x', '$item..x', '$items.x', 'a b.x', 'a.b c', 'a.-x', '調査.🙂'])('rejects %j', (ref) => {
    expect(parseInputRef(ref).ok).toBe(false);
  });
});

describe('an output whose name has a dot', () => {
  test('its reference says why it cannot be wired, not "did you mean" another key', async () => {
    const { parseWorkflow } = await import('./compile.js');
    const r = parseWorkflow(`openintent: "1.0"
info: {name: dots}
workflow:
  a: {assign: x, outputs: {a.b: string, o: object}}
  b: {assign: x, depends_on: [a], inputs: {v: a.a.b}}
`);
    expect(r.diagnostics.map((d) => d.code)).toEqual(['input-undeclared-output']);
    expect(r.diagnostics[0]!.hint).toContain('output `a.b` of `a` has a `.` in its name');
  });
});

describe('a bare name where `phase.key` goes', () => {
  test('an output of a dependency is named with its phase; a phase is asked for a key', async () => {
    const { parseWorkflow } = await import('./compile.js');
    const r = parseWorkflow(`openintent: "1.0"
info: {name: bare}
workflow:
  research: {assign: x, outputs: {findings: array, sources: array}}
  b: {assign: x, depends_on: [research], inputs: {f: findings, r: research}}
`);
    expect(r.diagnostics.map((d) => [d.code, d.hint])).toEqual([
      ['input-bad-syntax', 'name the phase that produces it: `research.findings`'],
      ['input-bad-syntax', '`research` is a phase: name one of its outputs, `research.findings`, `research.sources`'],
    ]);
    expect(r.diagnostics[0]!.data).toMatchObject({ suggestion: 'name the phase that produces it: `research.findings`' });
  });
});

import { describe, expect, test } from 'vitest';
import { SourceFile } from '../diagnostics/source.js';
import { parseYamlSource } from './source.js';

describe('parseYamlSource', () => {
  test('values follow the YAML 1.2 core schema', () => {
    const r = parseYamlSource('a: 0b11\nb: 1_000\nc: 0o14\nd: 0x1F\ne: yes\nf: 2026-01-01\ng: ~\nh: 1.5e3\ni: .inf\n');
    expect(r.diagnostics).toEqual([]);
    expect(r.value).toEqual({ a: '0b11', b: '1_000', c: 12, d: 31, e: 'yes', f: '2026-01-01', g: null, h: 1500, i: Infinity });
  });

  test('merge keys (`<<: *defaults`, as YAML 1.1 loaders read them): local keys win, a quoted `"<<"` is a plain key', () => {
    const r = parseYamlSource('d: &d {assign: w, retry: {max_attempts: 2}}\ne: &e {title: T}\na: {<<: *d, assign: x}\nb:\n  <<: [*d, *e]\nc: {"<<": 1}\n');
    expect(r.diagnostics).toEqual([]);
    expect(r.value).toMatchObject({ a: { assign: 'x', retry: { max_attempts: 2 } }, b: { assign: 'w', retry: { max_attempts: 2 }, title: 'T' }, c: { '<<': 1 } });
  });

  test('a problem inside merged content is located at the `<<` entry, wherever it stands; local keys first', () => {
    const text = 'd: &d {assign: w, retry: {backoff: fast}}\ne: &e {<<: *d, title: T}\na: {title: A, <<: *d, assign: x}\nb:\n  title: U\n  <<: [*e]\nc: {"<<": *d}\n';
    const r = parseYamlSource(text);
    const src = new SourceFile('f', text);
    const at = (path: (string | number)[]): { line: number; column: number } => src.position(r.locate(path)[0]);
    expect(at(['a', 'retry', 'backoff'])).toEqual({ line: 3, column: 15 });
    expect(at(['a', 'assign'])).toEqual({ line: 3, column: 31 });
    // through a merge of a merge
    expect(at(['b', 'retry', 'backoff'])).toEqual({ line: 6, column: 3 });
    expect(at(['b', 'title'])).toEqual({ line: 5, column: 10 });
    // a quoted "<<" is a plain key: nothing is merged through it
    expect(at(['c', 'assign'])).toEqual({ line: 7, column: 4 });
  });

  test('locates keys and values lazily', () => {
    const text = 'workflow:\n  a:\n    depends_on: [x, y]\n';
    const r = parseYamlSource(text);
    const src = new SourceFile('f', text);
    expect(src.position(r.locate(['workflow', 'a', 'depends_on', 1])[0])).toEqual({ line: 3, column: 21 });
    expect(src.position(r.locate(['workflow', 'a'], 'key')[0])).toEqual({ line: 2, column: 3 });
    // a missing leaf points at the deepest node that exists
    expect(src.position(r.locate(['workflow', 'a', 'nope'])[0])).toEqual({ line: 3, column: 5 });
  });

  test('duplicate keys report both places', () => {
    const r = parseYamlSource('a: 1\nb:\n  c: 1\n  c: 2\n');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['duplicate-key']);
    expect(r.diagnostics[0]!.range).toEqual([17, 18]);
    expect(r.diagnostics[0]!.related?.[0]?.range).toEqual([10, 11]);
  });

  test('several documents are refused', () => {
    const r = parseYamlSource('a: 1\n---\nb: 2\n');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['yaml-syntax']);
  });

  test('syntax errors are positioned, never thrown', () => {
    const r = parseYamlSource('a: [1, 2\nb: 3\n');
    expect(r.diagnostics.length).toBeGreaterThan(0);
    expect(r.diagnostics.every((d) => d.code === 'yaml-syntax' && d.range !== undefined)).toBe(true);
  });
});

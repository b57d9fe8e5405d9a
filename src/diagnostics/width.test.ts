import { describe, expect, test } from 'vitest';
import { error } from './diagnostic.js';
import { renderDiagnostic } from './render.js';
import { SourceFile } from './source.js';
import { cells, displayWidth, TAB_WIDTH } from './width.js';

describe('display width', () => {
  test.each([
    ['abc', 3],
    ['研究', 4], // wide CJK
    ['ｱ', 1], // halfwidth katakana
    ['🎉', 2],
    ['👨‍👩‍👧', 2], // one ZWJ sequence
    ['🇯🇵', 2], // a flag: two regional indicators
    ['e\u0301', 1], // a combining mark takes no column
    ['\t', TAB_WIDTH],
    ['\x1b', 4], // printed as the escape \x1B
    ['한국어', 6],
  ])('%j is %i columns', (s, w) => {
    expect(displayWidth(s)).toBe(w);
  });

  test('cells keep their offsets in the line', () => {
    expect(cells('a研🎉b').map((c) => [c.offset, c.width])).toEqual([
      [0, 1],
      [1, 2],
      [2, 2],
      [4, 1],
    ]);
  });
});

/** The frame of a diagnostic over `TARGET` in `line` (after a context line), and where its caret sits. */
function frame(line: string, width?: number): { source: string; caret: string; caretAt: number; carets: number } {
  const text = `ctx: 1\n${line}\n`;
  const start = text.indexOf('TARGET');
  const d = error('unknown-key', [], 'm', { range: [start, start + 'TARGET'.length] });
  const out = renderDiagnostic(d, new SourceFile('f.yaml', text), { color: false, ...(width !== undefined ? { width } : {}) }).split('\n');
  const source = out[2]!.slice('2 | '.length);
  const caret = out[3]!.slice('  | '.length);
  return { source, caret, caretAt: caret.indexOf('^'), carets: caret.trim().length };
}

describe('carets line up under wide characters', () => {
  test.each([
    ['CJK', 'name: 研究 の TARGET'],
    ['emoji', 'title: "🎉🎉 ok" TARGET'],
    ['ZWJ and flags', 'x: "👨‍👩‍👧 🇯🇵" TARGET'],
    ['combining marks', 'x: "e\u0301e\u0301e\u0301" TARGET'],
    ['tabs', 'x:\t{a: 1,\tb: TARGET}'],
    ['a control character', 'x: "\x1b[2J" TARGET'],
    ['Hangul', 'x: 한국어 TARGET'],
  ])('%s', (_name, line) => {
    const f = frame(line);
    const before = f.source.slice(0, f.source.indexOf('TARGET'));
    expect(f.caretAt).toBe(displayWidth(before));
    expect(f.carets).toBe(6);
    expect(f.source).not.toContain('\t');
  });

  test('golden: a CJK line and a tabbed line', () => {
    expect(frame('  研究: {depends_on: [TARGET]}')).toMatchObject({ source: '  研究: {depends_on: [TARGET]}', caret: `${' '.repeat(22)}^^^^^^` });
    expect(frame('\tk: TARGET')).toMatchObject({ source: '    k: TARGET', caret: `${' '.repeat(7)}^^^^^^` });
  });
});

describe('long lines are cut to the terminal width around the range', () => {
  const long = `${'研究 '.repeat(60)}TARGET${' 🎉'.repeat(60)}`;

  test.each([40, 60, 100, 200])('%i columns', (width) => {
    const f = frame(long, width);
    const shown = displayWidth(f.source);
    expect(shown).toBeLessThanOrEqual(width - '2 | '.length);
    expect(f.source.startsWith('…')).toBe(true);
    expect(f.source.endsWith('…')).toBe(true);
    const before = f.source.slice(0, f.source.indexOf('TARGET'));
    expect(f.caretAt).toBe(displayWidth(before));
    expect(f.carets).toBe(6);
  });

  test('without a terminal width: a window of 120 columns', () => {
    const f = frame(long);
    expect(displayWidth(f.source)).toBeLessThanOrEqual(122);
    expect(f.caretAt).toBe(displayWidth(f.source.slice(0, f.source.indexOf('TARGET'))));
  });

  test('a range at the start of a long line is not cut on the left', () => {
    const f = frame(`TARGET ${'x'.repeat(500)}`, 80);
    expect(f.source.startsWith('TARGET')).toBe(true);
    expect(f.caretAt).toBe(0);
  });

  test('a 5 MB line of wide characters renders fast and small', () => {
    const t0 = performance.now();
    const f = frame(`${'字'.repeat(2_500_000)}TARGET${'字'.repeat(2_500_000)}`, 80);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(f.source.length).toBeLessThan(200);
    expect(f.caretAt).toBe(displayWidth(f.source.slice(0, f.source.indexOf('TARGET'))));
  });

  test('a megabyte context line above a megabyte line is cut too, fast', () => {
    const text = `${'字'.repeat(3_000_000)}\n${'x'.repeat(3_000_000)}TARGET\n`;
    const start = text.indexOf('TARGET');
    const t0 = performance.now();
    const out = renderDiagnostic(error('unknown-key', [], 'm', { range: [start, start + 6] }), new SourceFile('f.yaml', text), { color: false, width: 80 });
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(out.length).toBeLessThan(600);
    const [, context, line, caret] = out.split('\n');
    expect(displayWidth(context!.slice('1 | '.length))).toBeLessThanOrEqual(80);
    expect(caret!.indexOf('^') - '  | '.length).toBe(displayWidth(line!.slice('2 | '.length, line!.indexOf('TARGET'))));
  });

  test('a very narrow terminal still shows a window', () => {
    const f = frame(long, 5);
    expect(f.source).toContain('TARGET');
    expect(f.carets).toBe(6);
  });
});

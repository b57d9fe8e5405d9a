import { describe, expect, test } from 'vitest';
import { firstJsonError, jsonSyntaxError } from './json.js';

function errorOf(text: string): ReturnType<typeof jsonSyntaxError> {
  try {
    JSON.parse(text);
  } catch (e) {
    return jsonSyntaxError(e, text);
  }
  throw new Error('parsed');
}

describe('jsonSyntaxError', () => {
  test('line and column of the offending character, on every Node version', () => {
    expect(errorOf('{\n  "a": 1,\n}')).toMatchObject({ line: 3, column: 1 });
    // V8 names no position for an unexpected token: the text is scanned for it
    expect(errorOf('{"a": tru}')).toEqual({ line: 1, column: 10, reason: "unexpected token '}'" });
    expect(errorOf('{"a": 1}\n\n x')).toMatchObject({ line: 3, column: 2 });
  });

  test('an unexpected token is positioned, on a text of many lines too, and the reason holds no copy of the text', () => {
    expect(errorOf('{"a":\n  [1,\n   2,,]}')).toEqual({ line: 3, column: 6, reason: "unexpected token ','" });
    expect(errorOf('{"items": [\n  1,\n  2,\n]}')).toEqual({ line: 4, column: 1, reason: "unexpected token ']'" });
    expect(errorOf('{"a": nul}')).toMatchObject({ line: 1, column: 10 });
    // V8 cuts a long text's copy short, at either end
    expect(errorOf(`[1,]${' '.repeat(100)}x`)).toEqual({ line: 1, column: 4, reason: "unexpected token ']'" });
    expect(errorOf(`${' '.repeat(100)}[1,]`)).toEqual({ line: 1, column: 104, reason: "unexpected token ']'" });
    expect(errorOf('\ufeff{}')).toMatchObject({ line: 1, column: 1 });
    expect(errorOf('{"a": [1, 2]}\n{"b": 1}')).toMatchObject({ line: 2, column: 1 });
  });

  test('firstJsonError agrees with JSON.parse on what is JSON', () => {
    for (const ok of ['{}', '[]', '0', '-0.5e+3', '"a\\u00e9\\n"', ' {"a": [true, false, null, {"b": "c"}]} ', '1E2']) {
      expect(() => void JSON.parse(ok)).not.toThrow();
      expect(firstJsonError(ok)).toBeUndefined();
    }
    for (const [bad, at] of [['01', 1], ['-', 1], ['1.', 2], ['"a', 2], ['"\\x"', 1], ['[1 2]', 3], ['{"a" 1}', 5], ['{a: 1}', 1], ['tru', 3], ['"\n"', 1], ['', 0]] as const) {
      expect(() => void JSON.parse(bad)).toThrow();
      expect(firstJsonError(bad)).toBe(at);
    }
  });

  test('a text that ends too soon points past its last character', () => {
    expect(errorOf('{"a":')).toEqual({ line: 1, column: 6, reason: 'the text ends before the value does' });
    expect(errorOf('{\n')).toMatchObject({ line: 2, column: 1 });
    expect(errorOf('')).toMatchObject({ line: 1, column: 1 });
  });

  test("the reason drops Node's own position words", () => {
    const r = errorOf('{\n  "a": 1,\n}');
    expect(r.reason).not.toMatch(/position|line \d/);
    expect(r.reason).toMatch(/^[a-z]/);
  });
});

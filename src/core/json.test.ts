import { describe, expect, test } from 'vitest';
import { jsonSyntaxError } from './json.js';

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
    // V8 names no position for an unexpected token: none is made up
    expect(errorOf('{"a": tru}')).toEqual({ reason: expect.stringMatching(/^unexpected token '}'$/) as string });
    expect(errorOf('{"a": 1}\n\n x')).toMatchObject({ line: 3, column: 2 });
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

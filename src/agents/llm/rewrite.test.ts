import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { parseJsonLenient } from './repair.js';
import { rewrite } from './rewrite.js';

function value(text: string): unknown {
  const r = parseJsonLenient(text);
  if (!r.ok) throw new Error(r.message);
  return r.value;
}

describe('the fast rewriter', () => {
  test('apostrophes inside single-quoted strings, escaped quotes, double quotes inside', () => {
    expect(value(`{'note': 'don't stop', 'q': 'say "hi"', 'e': 'it\\'s'}`)).toEqual({ note: "don't stop", q: 'say "hi"', e: "it's" });
  });

  test('raw newlines and tabs inside strings are escaped', () => {
    const r = parseJsonLenient('{"a": "line 1\nline 2\tend"}');
    expect(r.ok && r.value).toEqual({ a: 'line 1\nline 2\tend' });
    expect(r.ok && r.repairs).toEqual(['control_character']);
  });

  test('nested truncation closes every open bracket', () => {
    const r = parseJsonLenient('{"a": [1, {"b": [true, null');
    expect(r.ok && r.value).toEqual({ a: [1, { b: [true, null] }] });
    expect(r.ok && r.repairs).toEqual(['truncated']);
  });

  test('a truncated tail ending in a comma drops it', () => {
    expect(value('[1, 2,')).toEqual([1, 2]);
  });

  test('what it does not know goes to the general repairer (unquoted string values)', () => {
    expect(rewrite('{severity: high}')).toBeUndefined();
    const r = parseJsonLenient('{severity: high}');
    expect(r.ok && r.value).toEqual({ severity: 'high' });
    expect(r.ok && r.repairs).toEqual(['unquoted_key', 'unquoted_string']);
  });

  test('mismatched brackets are not its business', () => {
    expect(rewrite('{"a": [1}')).toBeUndefined();
  });

  test('valid JSON is rewritten to itself', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const r = rewrite(JSON.stringify(v, null, 1));
        expect(r && r.ok && JSON.parse(r.text)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 300 },
    );
  });

  test('JSON5-ish renderings of any value parse back to the value', () => {
    const key = fc.stringMatching(/^[a-z_][a-z0-9_]{0,8}$/);
    const leaf = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.string({ maxLength: 12 }).filter((s) => !s.includes("'") && !s.includes('\\') && !s.includes(':')));
    const tree = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('node'), { maxLength: 4 }), fc.dictionary(key, tie('node'), { maxKeys: 4 })),
    })).node;
    fc.assert(
      fc.property(tree, (v) => {
        const loose = JSON.stringify(v, null, 2)
          .replace(/"([a-z_][a-z0-9_]*)":/g, '$1:')
          .replace(/\n(\s*)([}\]])/g, ',\n$1$2')
          .replace(/: true/g, ': True')
          .replace(/: null/g, ': None');
        const r = parseJsonLenient(loose);
        expect(r.ok && r.value).toEqual(v);
      }),
      { numRuns: 300 },
    );
  });
});

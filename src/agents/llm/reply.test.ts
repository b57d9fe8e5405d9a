import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { parseAgentReply } from './reply.js';

const review = {
  type: 'object',
  required: ['summary', 'approval', 'comments'],
  properties: {
    summary: { type: 'string' },
    approval: { type: 'string', enum: ['approve', 'request_changes', 'comment'] },
    comments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['file', 'line', 'severity'],
        properties: { file: { type: 'string' }, line: { type: 'integer' }, severity: { type: 'string', enum: ['low', 'medium', 'high'] } },
      },
    },
  },
};
const good = { summary: 'ok', approval: 'approve', comments: [{ file: 'a.ts', line: 3, severity: 'low' }] };
const goodText = JSON.stringify(good);

function ok(text: string): { value: unknown; repairs: string[]; source: string } {
  const r = parseAgentReply(text, review);
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.errors)}`);
  return r;
}

describe('parseAgentReply: extraction', () => {
  test('a plain document', () => {
    expect(ok(goodText)).toEqual({ ok: true, value: good, repairs: [], source: 'plain' });
    expect(ok(`\n\n  ${JSON.stringify(good, null, 2)}  \n`).value).toEqual(good);
  });

  test('a fenced block in prose', () => {
    const r = ok(`Here is my review:\n\n\`\`\`json\n${JSON.stringify(good, null, 2)}\n\`\`\`\n\nLet me know!`);
    expect(r.source).toBe('fenced');
    expect(r.value).toEqual(good);
  });

  test('a fence without a language, and one with CRLF line ends', () => {
    expect(ok(`Sure.\n\`\`\`\n${goodText}\n\`\`\``).value).toEqual(good);
    expect(ok(`Sure.\r\n\`\`\`json\r\n${goodText}\r\n\`\`\`\r\n`).value).toEqual(good);
  });

  test('JSON first, then prose; prose that starts with a literal-looking word', () => {
    expect(ok(`${goodText}\n\nHope this helps!`).value).toEqual(good);
    expect(ok(`The review: ${goodText}`).value).toEqual(good);
    expect(ok(`true story: ${goodText}`).value).toEqual(good);
  });

  test('an object inside prose', () => {
    const r = ok(`I reviewed it. The result is ${goodText} and that is final.`);
    expect(r.source).toBe('embedded');
    expect(r.value).toEqual(good);
  });

  test('several objects: the one that validates wins', () => {
    const bad = { summary: 'draft', approval: 'maybe', comments: [] };
    expect(ok(`First attempt ${JSON.stringify(bad)}, then the answer ${goodText}`).value).toEqual(good);
    expect(ok(`The answer ${goodText}; the example format was {"foo": 1}`).value).toEqual(good);
  });

  test('several valid objects: the last one wins', () => {
    const second = { ...good, summary: 'final' };
    expect(ok(`Draft: ${goodText}\nFinal:\n\`\`\`json\n${JSON.stringify(second)}\n\`\`\``).value).toEqual(second);
    expect(ok(`${goodText}\n${JSON.stringify(second)}`).value).toEqual(second);
  });

  test('braces inside strings do not confuse the scanner', () => {
    const v = { ...good, summary: 'uses } and { and ``` inside' };
    expect(ok(`Result: ${JSON.stringify(v)} done`).value).toEqual(v);
  });

  test('a top-level array schema', () => {
    const r = parseAgentReply('The list: [{"a": 1}, {"a": 2}] as asked', { type: 'array', items: { type: 'object' } });
    expect(r.ok && r.value).toEqual([{ a: 1 }, { a: 2 }]);
  });
});

describe('parseAgentReply: repair', () => {
  const cases: [string, string, string[]][] = [
    ['trailing commas', `{"summary": "ok", "approval": "approve", "comments": [{"file": "a.ts", "line": 3, "severity": "low",},],}`, ['trailing_comma']],
    ['comments', `{\n // the summary\n "summary": "ok", /* decision */ "approval": "approve",\n "comments": [{"file": "a.ts", "line": 3, "severity": "low"}]}`, ['comment']],
    ['single quotes', `{'summary': 'ok', 'approval': 'approve', 'comments': [{'file': 'a.ts', 'line': 3, 'severity': 'low'}]}`, ['single_quotes']],
    ['unquoted keys', `{summary: "ok", approval: "approve", comments: [{file: "a.ts", line: 3, severity: "low"}]}`, ['unquoted_key']],
    ['curly quotes', `{\u201csummary\u201d: \u201cok\u201d, \u201capproval\u201d: \u201capprove\u201d, \u201ccomments\u201d: [{\u201cfile\u201d: \u201ca.ts\u201d, \u201cline\u201d: 3, \u201cseverity\u201d: \u201clow\u201d}]}`, ['curly_quotes']],
    ['missing commas between lines', `{\n "summary": "ok"\n "approval": "approve"\n "comments": [{"file": "a.ts", "line": 3, "severity": "low"}]\n}`, ['missing_comma']],
    ['a truncated tail missing closing brackets', `{"summary": "ok", "approval": "approve", "comments": [{"file": "a.ts", "line": 3, "severity": "low"}`, ['truncated']],
  ];
  for (const [name, text, kinds] of cases) {
    test(name, () => {
      const r = ok(text);
      expect(r.value).toEqual(good);
      expect(r.repairs).toEqual(kinds);
    });
  }

  test('python literals', () => {
    const r = parseAgentReply(`{"done": True, "error": None, "retry": False}`, { type: 'object' });
    expect(r.ok && r.value).toEqual({ done: true, error: null, retry: false });
    expect(r.ok && r.repairs).toEqual(['python_literal']);
  });

  test('several kinds at once are each recorded', () => {
    const r = ok(`\`\`\`json\n{summary: 'ok', // note\n approval: "approve", comments: [{file: "a.ts", line: 3, severity: "low",}]\n\`\`\``);
    expect(new Set(r.repairs)).toEqual(new Set(['unquoted_key', 'single_quotes', 'comment', 'trailing_comma', 'truncated']));
  });

  test('never coerces types: "5" is not a number', () => {
    const r = parseAgentReply(`{"summary": "ok", "approval": "approve", "comments": [{"file": "a.ts", "line": "5", "severity": "low"}]}`, review);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors).toEqual([{ path: '$.comments.0.line', message: `'5' is not of type 'integer'`, expected: 'integer', received: 'string' }]);
  });

  test('refuses to invent data: a value cut inside a string or after a key', () => {
    expect(parseAgentReply(`{"summary": "the code is fi`, { type: 'object' }).ok).toBe(false);
    const r = parseAgentReply(`{"summary": "ok", "approval":`, { type: 'object' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.noJson).toBe(true);
  });
});

describe('parseAgentReply: replies as models write them', () => {
  const cases: [string, string][] = [
    ['reasoning tags with a draft before the answer', `<think>Maybe {"summary": "draft"}?</think>\n${goodText}`],
    ['a URL inside a single-quoted broken value', `{'summary': 'see http://example.com/a//b', 'approval': 'approve', 'comments': [],}`],
    ['CRLF line ends inside the JSON', JSON.stringify(good, null, 2).replace(/\n/g, '\r\n')],
    ['a byte order mark', `\ufeff${goodText}`],
    ['an upper-case fence language', `\`\`\`JSON\n${goodText}\n\`\`\``],
    ['a four-backtick fence', `\`\`\`\`json\n${goodText}\n\`\`\`\``],
    ['the schema example echoed first, then the answer', `Format:\n\`\`\`json\n{"summary": "...", "approval": "approve", "comments": []}\n\`\`\`\nAnswer:\n\`\`\`json\n${goodText}\n\`\`\``],
    ['a markdown list before the JSON', `- checked types\n- checked tests\n\n${goodText}`],
    ['escaped newlines in strings', JSON.stringify({ ...good, summary: 'line 1\nline 2 "quoted"' })],
  ];
  for (const [name, text] of cases) {
    test(name, () => {
      const r = parseAgentReply(text, review);
      expect(r.ok).toBe(true);
    });
  }

  test('the echoed example loses to the real answer (the last valid one)', () => {
    const r = ok(`Format:\n\`\`\`json\n{"summary": "...", "approval": "approve", "comments": []}\n\`\`\`\nAnswer:\n\`\`\`json\n${goodText}\n\`\`\``);
    expect(r.value).toEqual(good);
  });
});

describe('parseAgentReply: errors', () => {
  test('bounds in the spec form: `$.count: -5 is less than minimum 0`', () => {
    const schema = { type: 'object', properties: { count: { type: 'integer', minimum: 0 }, score: { type: 'number', maximum: 10 }, name: { type: 'string', minLength: 2 } } };
    const r = parseAgentReply(JSON.stringify({ count: -5, score: 11, name: 'x' }), schema);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toContainEqual({ path: '$.count', message: '-5 is less than minimum 0', expected: 'a number >= 0', received: '-5' });
    expect(r.errors).toContainEqual(expect.objectContaining({ path: '$.score', message: '11 is greater than maximum 10' }));
    expect(r.errors).toContainEqual(expect.objectContaining({ path: '$.name', message: `'x' is too short`, expected: 'at least 2 characters' }));
  });
  test('errors in the spec form with JSON paths', () => {
    const r = parseAgentReply(JSON.stringify({ summary: 'x', approval: 'approve', comments: [{}, {}, { file: 'a', line: 1, severity: 'critical' }] }), review);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toContainEqual({ path: '$.comments.2.severity', message: `'critical' is not one of ['low', 'medium', 'high']`, expected: `one of ['low', 'medium', 'high']`, received: `'critical'` });
    expect(r.errors).toContainEqual(expect.objectContaining({ path: '$.comments.0', message: `'file' is a required property` }));
    expect(r.errors.filter((e) => e.path === '$.comments.0' || e.path === '$.comments.1')).toHaveLength(6);
    expect(r.value).toBeDefined();
  });

  test("every keyword in the spec's words, with what was expected readable (not ajv's params)", () => {
    const schema = {
      type: 'object',
      properties: {
        few: { type: 'object', minProperties: 2 },
        many: { type: 'object', maxProperties: 1 },
        tags: { type: 'array', uniqueItems: true },
        dep: { type: 'object', dependencies: { card: ['billing'] } },
        one: { oneOf: [{ type: 'integer' }, { type: 'number' }] },
        any: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
        not: { not: { type: 'string' } },
        has: { type: 'array', contains: { type: 'string' } },
        keys: { type: 'object', propertyNames: { pattern: '^x' } },
        pair: { type: 'array', items: [{ type: 'string' }], additionalItems: false },
      },
    };
    const r = parseAgentReply(JSON.stringify({ few: { a: 1 }, many: { a: 1, b: 2 }, tags: [1, 1], dep: { card: 1 }, one: 5, any: true, not: 's', has: [1], keys: { y: 1 }, pair: ['a', 2] }), schema);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const at = (path: string): string[] => r.errors.filter((e) => e.path === path).map((e) => `${e.message} | ${e.expected} | ${e.received}`);
    expect(at('$.few')).toEqual(['{"a":1} does not have enough properties | at least 2 properties | 1 property']);
    expect(at('$.many')).toEqual(['{"a":1,"b":2} has too many properties | at most 1 properties | 2 properties']);
    expect(at('$.tags')).toEqual(['[1, 1] has non-unique elements | unique items | items 0 and 1 are equal']);
    expect(at('$.dep')).toEqual([`'billing' is a dependency of 'card' | a property 'billing' (required with 'card') | nothing`]);
    expect(at('$.one')).toEqual(['5 is valid under more than one of the given schemas (0 and 1) | a value matching exactly one of the `oneOf` schemas | a value matching 2 of them']);
    expect(at('$.any')).toContain('true is not valid under any of the given schemas | a value matching one of the `anyOf` schemas (see the errors above) | true');
    expect(at('$.not')).toEqual(["'s' should not be valid under the `not` schema | a value the `not` schema rejects | 's'"]);
    expect(at('$.has')).toEqual(['[1] does not contain items matching the given schema | at least 1 item matching the `contains` schema | [1]']);
    // the key is what did not match, not the object holding it
    expect(at('$.keys')).toEqual([`'y' does not match '^x' | a string matching '^x' | 'y'`, `property name 'y' is invalid | property names matching the \`propertyNames\` schema | 'y'`]);
    expect(at('$.pair')).toEqual([`Additional items are not allowed (['a', 2] has more than 1) | at most 1 items | ['a', 2]`]);
    expect(r.errors.some((e) => /must NOT|\{"/.test(e.expected ?? ''))).toBe(false);
  });

  test('no JSON at all', () => {
    for (const text of ['', '   ', 'I cannot help with that.', 'Sure! Here you go: (nothing)']) {
      const r = parseAgentReply(text, review);
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.noJson).toBe(true);
        expect(r.errors[0]!.path).toBe('$');
      }
    }
  });

  test('an invalid schema is an error, not a throw', () => {
    const r = parseAgentReply('{}', { type: 'not-a-type' });
    expect(r.ok).toBe(false);
  });

  test('paths are the spec reference validator\'s: keys as they are and indices, joined by dots', () => {
    const r = parseAgentReply('{"a b": {"c-d": [1]}}', { type: 'object', properties: { 'a b': { type: 'object', properties: { 'c-d': { type: 'array', items: { type: 'string' } } } } } });
    expect(!r.ok && r.errors[0]!.path).toBe('$.a b.c-d.0');
  });

  test('2020-12 schemas when $schema says so', () => {
    const schema = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [{ type: 'number' }], items: false };
    expect(parseAgentReply('[1]', schema).ok).toBe(true);
    expect(parseAgentReply('[1, 2]', schema).ok).toBe(false);
  });
});

describe('parseAgentReply: never throws, never hangs', () => {
  test('arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (s) => {
        const r = parseAgentReply(s, review);
        expect(typeof r.ok).toBe('boolean');
      }),
      { numRuns: 500 },
    );
  });

  test('JSON-ish soup', () => {
    const piece = fc.constantFrom('{', '}', '[', ']', '"', "'", ',', ':', '//', '/*', '*/', '\n', '```', '```json\n', 'True', 'None', 'a', '1', ' ', '\\', '\u201c', '#');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 200 }), (parts) => {
        const r = parseAgentReply(parts.join(''), { type: 'object' });
        expect(typeof r.ok).toBe('boolean');
      }),
      { numRuns: 1000 },
    );
  });

  test('valid JSON values round-trip through prose', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ maxLength: 30 }), (v, prose) => {
        fc.pre(v !== null && typeof v === 'object' && !prose.includes('{') && !prose.includes('[') && !prose.includes('`'));
        const r = parseAgentReply(`${prose}\n\`\`\`json\n${JSON.stringify(v)}\n\`\`\``, {});
        expect(r.ok && r.value).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 300 },
    );
  });

  test('pathological inputs stay linear', () => {
    const inputs = ['{'.repeat(50_000), '['.repeat(50_000) + '"', '"'.repeat(50_000), '{"a":'.repeat(10_000), '```'.repeat(20_000), "{'".repeat(20_000), 'x { y '.repeat(20_000)];
    const t0 = performance.now();
    for (const s of inputs) expect(typeof parseAgentReply(s, review).ok).toBe('boolean');
    // a generous bound: quadratic behaviour on 50 KB would take minutes
    expect(performance.now() - t0).toBeLessThan(20_000);
  });
});

describe('numbers JSON cannot hold', () => {
  test('a literal past the double range (1e400 reads as Infinity) is an error at its path, not a valid integer that is stored as null', () => {
    const schema = { type: 'object', required: ['a'], properties: { a: { type: 'integer' }, b: { type: 'array', items: { type: 'number' } } } };
    const r = parseAgentReply('{"a": 1e400, "b": [1, -1e999]}', schema);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.map((e) => e.path)).toEqual(['$.a', '$.b.1']);
    expect(r.noJson).toBe(false);
    // the re-prompt's next reply, finite, is taken
    expect(parseAgentReply('{"a": 1e300}', { type: 'object', properties: { a: { type: 'number' } } }).ok).toBe(true);
  });
});

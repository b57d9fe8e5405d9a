import { describe, expect, test } from 'vitest';
import { parseScript } from './scripted.js';

describe('replies files', () => {
  test('replies as strings, mappings, YAML values written as the reply', () => {
    const r = parseScript({ phases: { a: ['hi', { text: { x: 1 } }, { finish: 'length', text: 'cut' }] }, agents: { w: [{ error: { status: 429, retry_after: 3 } }] } });
    expect(r.ok && r.script).toEqual({
      structuredOutput: 'none',
      phases: { a: [{ text: 'hi' }, { text: '{"x":1}' }, { finish: 'length', text: 'cut' }] },
      agents: { w: [{ error: { status: 429, retryAfterS: 3 } }] },
    });
  });

  test('mistakes are reported with where they are', () => {
    const bad: [unknown, RegExp][] = [
      [[], /expected a mapping/],
      [{ phases: { a: 'x' } }, /phases\.a must be a list/],
      [{ phases: { a: [{}] } }, /phases\.a\[0\]: a reply needs/],
      [{ phases: { a: [{ finish: 'done' }] } }, /`finish` must be/],
      [{ agents: { a: [{ tool_calls: [{ arguments: {} }] }] } }, /needs `tool`/],
      [{ structured_output: 'yes' }, /structured_output must be/],
    ];
    for (const [raw, msg] of bad) {
      const r = parseScript(raw);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.message).toMatch(msg);
    }
  });
});

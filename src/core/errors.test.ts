import { describe, expect, test } from 'vitest';
import { networkErrorText } from './errors.js';

describe('networkErrorText', () => {
  test("fetch's cause says why it failed", async () => {
    // a port nothing listens on: fetch rejects with `fetch failed`, its cause with ECONNREFUSED
    const e = await fetch('http://127.0.0.1:1/').catch((x: unknown) => x);
    expect(networkErrorText(e)).toMatch(/^fetch failed: \S/);
    expect(networkErrorText(new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8080'), { code: 'ECONNREFUSED' }) }))).toBe('fetch failed: connect ECONNREFUSED 127.0.0.1:8080');
  });

  test('an error without a cause, or whose cause it already says, is its own message', () => {
    expect(networkErrorText(new Error('boom'))).toBe('boom');
    expect(networkErrorText(new Error('connect ECONNREFUSED x', { cause: new Error('ECONNREFUSED') }))).toBe('connect ECONNREFUSED x');
    expect(networkErrorText('text')).toBe('text');
  });
});

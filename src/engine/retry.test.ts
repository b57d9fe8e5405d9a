import { describe, expect, test } from 'vitest';
import { MAX_TIMEOUT_MS } from '../core/clock.js';
import type { RetryPolicy } from '../workflow/model.js';
import { backoffDelay } from './retry.js';

const policy = (p: Partial<RetryPolicy>): RetryPolicy => ({ maxAttempts: 3, backoff: 'exponential', initialDelayMs: 1000, maxDelayMs: undefined, retryableErrors: [], fallbackAgent: undefined, ...p });

describe('backoffDelay', () => {
  test('constant, linear and exponential, capped by max_delay_ms', () => {
    expect(backoffDelay(policy({ backoff: 'constant' }), 3)).toBe(1000);
    expect(backoffDelay(policy({ backoff: 'linear' }), 3)).toBe(3000);
    expect(backoffDelay(policy({}), 3)).toBe(4000);
    expect(backoffDelay(policy({ maxDelayMs: 2500 }), 3)).toBe(2500);
  });

  test('a delay is never past a deadline a store holds (the retry’s not_before is a PostgreSQL bigint)', () => {
    // 100 attempts of exponential backoff from 1 s: 1000 x 2^99 ms; a huge initial delay
    expect(backoffDelay(policy({ maxAttempts: 100 }), 100)).toBe(MAX_TIMEOUT_MS);
    expect(backoffDelay(policy({ backoff: 'constant', initialDelayMs: 1e19 }), 1)).toBe(MAX_TIMEOUT_MS);
    expect(backoffDelay(policy({ maxAttempts: 2000 }), 2000)).toBe(MAX_TIMEOUT_MS);
  });
});

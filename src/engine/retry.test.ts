import { describe, expect, test } from 'vitest';
import { MAX_TIMEOUT_MS } from '../core/clock.js';
import type { RetryPolicy } from '../workflow/model.js';
import { backoffDelay, isRetryable } from './retry.js';

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

describe('isRetryable', () => {
  const failure = (code: string, retryable = true) => ({ code, message: 'm', retryable });

  test('retryable_errors lists codes; an empty list retries every retryable failure', () => {
    expect(isRetryable(policy({}), failure('Anything'))).toBe(true);
    expect(isRetryable(policy({}), failure('Anything', false))).toBe(false);
    expect(isRetryable(policy({ retryableErrors: ['OCR_FAILURE'] }), failure('OCR_FAILURE'))).toBe(true);
    expect(isRetryable(policy({ retryableErrors: ['OCR_FAILURE'] }), failure('Timeout'))).toBe(false);
  });

  test('the spec’s names TIMEOUT and RATE_LIMIT match Baton’s timeout and rate-limit failures', () => {
    expect(isRetryable(policy({ retryableErrors: ['TIMEOUT', 'OCR_FAILURE'] }), failure('Timeout'))).toBe(true);
    expect(isRetryable(policy({ retryableErrors: ['RATE_LIMIT'] }), failure('llm_rate_limited'))).toBe(true);
    expect(isRetryable(policy({ retryableErrors: ['TIMEOUT'] }), failure('TIMEOUT'))).toBe(true);
    expect(isRetryable(policy({ retryableErrors: ['TIMEOUT'] }), failure('llm_rate_limited'))).toBe(false);
    expect(isRetryable(policy({ retryableErrors: ['TIMEOUT'] }), failure('Timeout', false))).toBe(false);
    // names an object has are not a table lookup
    expect(isRetryable(policy({ retryableErrors: ['constructor', '__proto__'] }), failure('Timeout'))).toBe(false);
  });
});

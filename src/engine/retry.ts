/** RFC-0010 retry policy arithmetic: backoff delays and which failures are retryable. */
import type { RetryPolicy } from '../workflow/model.js';
import type { FailureRecord } from './events.js';

/**
 * Delay before attempt `failedAttempts + 1`: constant = initial; linear = initial x n;
 * exponential = initial x 2^(n-1); capped by max_delay_ms.
 */
export function backoffDelay(policy: RetryPolicy, failedAttempts: number): number {
  const n = Math.max(1, failedAttempts);
  const base = policy.initialDelayMs;
  let d: number;
  switch (policy.backoff) {
    case 'constant':
      d = base;
      break;
    case 'linear':
      d = base * n;
      break;
    case 'exponential':
      d = base * 2 ** (n - 1);
      break;
  }
  if (policy.maxDelayMs !== undefined) d = Math.min(d, policy.maxDelayMs);
  return Math.max(0, Math.round(d));
}

/** A failure is retried when it is retryable and, if the policy lists `retryable_errors`, its code is listed. */
export function isRetryable(policy: RetryPolicy, failure: FailureRecord): boolean {
  if (!failure.retryable) return false;
  return policy.retryableErrors.length === 0 || policy.retryableErrors.includes(failure.code);
}

/** RFC-0010 retry policy arithmetic: backoff delays and which failures are retryable. */
import { MAX_TIMEOUT_MS } from '../core/clock.js';
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
  // the retry's not_before is stored (a PostgreSQL bigint): exponential backoff over many attempts, or a
  // huge initial_delay_ms, made a commit PostgreSQL refused forever (22003), the worker retrying it as a store outage
  return Math.max(0, Math.round(Math.min(d, MAX_TIMEOUT_MS)));
}

/** A failure is retried when it is retryable and, if the policy lists `retryable_errors`, its code is listed. */
export function isRetryable(policy: RetryPolicy, failure: FailureRecord): boolean {
  if (!failure.retryable) return false;
  return policy.retryableErrors.length === 0 || policy.retryableErrors.includes(failure.code);
}

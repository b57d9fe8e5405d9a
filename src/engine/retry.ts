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

/**
 * The names the Workflow YAML spec gives failures in `retryable_errors` (its example lists `TIMEOUT` and
 * `RATE_LIMIT`, RFC-0010) for the failures Baton records under codes of its own: a file written from the
 * spec (the corpus's compliance review lists `TIMEOUT`) would otherwise never retry a timed-out attempt.
 */
const SPEC_ERROR_NAMES: ReadonlyMap<string, readonly string[]> = new Map([
  ['TIMEOUT', ['Timeout']],
  ['RATE_LIMIT', ['llm_rate_limited']],
]);

/** Whether `retryable_errors` lists the failure's code, itself or under the spec's name for it. */
function listsError(names: readonly string[], code: string): boolean {
  return names.some((n) => n === code || SPEC_ERROR_NAMES.get(n)?.includes(code) === true);
}

/** A failure is retried when it is retryable and, if the policy lists `retryable_errors`, its code is listed. */
export function isRetryable(policy: RetryPolicy, failure: FailureRecord): boolean {
  if (!failure.retryable) return false;
  return policy.retryableErrors.length === 0 || listsError(policy.retryableErrors, failure.code);
}

import type { ErrorCode } from './codes.js';

/**
 * Faults: bugs, infrastructure failures, misuse of the API. Never used for a user's bad input
 * (that is a Diagnostic) nor for an agent failing at run time (that is a RunFailure record).
 */
export class BatonError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'BatonError';
  }
}

/**
 * A failed request's words with their cause: fetch says only `fetch failed`, its cause says why
 * (`connect ECONNREFUSED 127.0.0.1:8080`, `getaddrinfo ENOTFOUND host`, `bad port`).
 */
export function networkErrorText(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const cause = (e as { cause?: unknown } | undefined)?.cause;
  const why = cause instanceof Error ? cause.message || (cause as { code?: string }).code : undefined;
  return why !== undefined && why !== '' && !message.includes(why) ? `${message}: ${why}` : message;
}

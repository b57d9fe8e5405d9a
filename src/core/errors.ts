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

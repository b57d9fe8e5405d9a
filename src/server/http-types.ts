/**
 * The parts of the HTTP edge (http.ts) that the published declarations of `@baton-run/baton/server` and
 * `/a2a` reach: they name no Hono type, so that those declarations type-check without `hono` (an
 * optional peer) installed.
 */
import type { RouteCompiler } from './validate.js';
import type { Json } from '../core/json.js';
import type { ApiKey } from './keys.js';

/** An answer that is not a success: a status and a JSON error. Thrown by handlers, rendered once. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, Json> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface EdgeOptions {
  /** Hashed keys; empty: no keys (every caller is `anonymous`, and the server listens on loopback only). */
  keys: readonly ApiKey[];
  /** Largest request body, bytes. */
  bodyLimit: number;
  /** The ajv pair the app's routes share (one per app; without it, a pair per route). */
  compiler?: RouteCompiler | undefined;
}

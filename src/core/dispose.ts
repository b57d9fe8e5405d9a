/**
 * `Symbol.asyncDispose`, for `await using engine = createEngine(...)`. Node 20.4+ defines it (as
 * `nodejs.asyncDispose`); elsewhere TypeScript's downlevel helper looks it up with
 * `Symbol.for('Symbol.asyncDispose')`, so the same fallback keeps both in agreement.
 */
export const asyncDispose: typeof Symbol.asyncDispose = ((Symbol as { asyncDispose?: symbol }).asyncDispose ?? Symbol.for('Symbol.asyncDispose')) as typeof Symbol.asyncDispose;

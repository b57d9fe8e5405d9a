/**
 * What `@baton-run/baton/server` says of A2A: the SDK's modules as one opaque value, loaded by
 * `loadA2aServer()` and given to startServer's `a2a`. Opaque because `@a2a-js/sdk` is an optional peer
 * dependency: a program that serves no A2A type-checks without it (even with `skipLibCheck: false`).
 * The SDK's own types stay inside (routes.ts, tasks.ts) and behind `@baton-run/baton/a2a`.
 */
import { loadA2a } from '../../agents/a2a-sdk.js';
import { loadOptional } from '../../core/optional.js';

declare const A2A_MODULES: unique symbol;

/** The A2A SDK's modules for `baton serve --a2a`, as `loadA2aServer()` returns them. */
export interface A2aServerModules {
  readonly [A2A_MODULES]: true;
}

/** Loads `@a2a-js/sdk` (an optional peer dependency) for `baton serve --a2a`; names the install command when missing. */
export async function loadA2aServer(): Promise<A2aServerModules> {
  const { sdk } = await loadA2a('`baton serve --a2a`');
  // the shape routes.ts reads back (A2aSdkModules)
  const modules = await loadOptional('@a2a-js/sdk', '`baton serve --a2a`', async () => {
    const [server, errors, legacy, compat] = await Promise.all([import('@a2a-js/sdk/server'), import('@a2a-js/sdk/errors'), import('@a2a-js/sdk/compat/v0_3/server'), import('@a2a-js/sdk/compat/v0_3')]);
    return { sdk, server, errors, legacy, compat };
  });
  return modules as unknown as A2aServerModules;
}

export const A2A_PATH = '/a2a';
export const CARD_PATH = '/.well-known/agent-card.json';

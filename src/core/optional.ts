/**
 * Optional capabilities (PostgreSQL, LLM providers, MCP, TypeScript agents, better-sqlite3) are optional
 * peer dependencies, loaded only when used. A missing one is a fault with one line naming the install
 * command, never Node's resolution error with a stack.
 */
import { BatonError } from './errors.js';

/** `{ code: 'ERR_MODULE_NOT_FOUND' }` (ESM) or `MODULE_NOT_FOUND` (require) for this package itself. */
export function isMissingPackage(err: unknown, pkg: string): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return typeof message === 'string' && (message.includes(`'${pkg}'`) || message.includes(`'${pkg}/`));
}

export function missingPackage(pkg: string, what: string, cause?: unknown): BatonError {
  return new BatonError('missing-package', `${what} needs the \`${pkg}\` package: npm install ${pkg}`, cause === undefined ? undefined : { cause });
}

/**
 * Imports an optional package: `load` is `() => import('pkg')`, written at the call site so the
 * specifier stays static (types, bundlers). Any other failure to load is passed through.
 */
export async function loadOptional<T>(pkg: string, what: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (isMissingPackage(err, pkg)) throw missingPackage(pkg, what, err);
    throw err;
  }
}

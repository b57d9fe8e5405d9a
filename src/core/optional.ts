/**
 * Optional capabilities (PostgreSQL, LLM providers, MCP, TypeScript agents, better-sqlite3, tracing, the
 * HTTP server) are optional peer dependencies, loaded only when used. A missing one is a fault with one
 * line naming the install command, never Node's resolution error with a stack.
 */
import { createRequire } from 'node:module';
import { BatonError } from './errors.js';

/** `{ code: 'ERR_MODULE_NOT_FOUND' }` (ESM) or `MODULE_NOT_FOUND` (require) for this package itself. */
export function isMissingPackage(err: unknown, pkg: string): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return typeof message === 'string' && (message.includes(`'${pkg}'`) || message.includes(`'${pkg}/`));
}

/** `WHAT needs the `a` package: npm install a`, or `the `a` and `b` packages: npm install a b`. */
export function missingPackage(pkgs: string | readonly string[], what: string, cause?: unknown): BatonError {
  const list = typeof pkgs === 'string' ? [pkgs] : pkgs;
  const named = list.map((p) => `\`${p}\``);
  const them = named.length === 1 ? `the ${named[0]!} package` : `the ${named.slice(0, -1).join(', ')} and ${named.at(-1)!} packages`;
  return new BatonError('missing-package', `${what} needs ${them}: npm install ${list.join(' ')}`, cause === undefined ? undefined : { cause });
}

/** Imports a package by name, from this package's place (tests pass their own, resolving elsewhere). */
export type PackageProbe = (pkg: string) => Promise<unknown>;
const importPackage: PackageProbe = (pkg) => import(pkg) as Promise<unknown>;

/** Those of `pkgs` that cannot be found. Each is imported: the caller is about to use them all anyway. */
export async function missingOf(pkgs: readonly string[], probe: PackageProbe = importPackage): Promise<string[]> {
  const missing: string[] = [];
  for (const p of pkgs) {
    try {
      await probe(p);
    } catch (err) {
      // one that is installed but fails to load is not missing: its own error says why, where it is used
      if (isMissingPackage(err, p)) missing.push(p);
    }
  }
  return missing;
}

/** Throws missing-package naming every one of `pkgs` that is not installed, in one install command. */
export async function requirePackages(pkgs: readonly string[], what: string, probe?: PackageProbe): Promise<void> {
  const missing = await missingOf(pkgs, probe);
  if (missing.length > 0) throw missingPackage(missing, what);
}

/**
 * Imports what needs optional packages: `load` is `() => import('pkg')` (or a module of Baton's that
 * imports them), written at the call site so the specifier stays static (types, bundlers). When one of
 * `pkg` is missing, every one of them that is missing is named, so that one install command does. Any
 * other failure to load is passed through.
 */
export async function loadOptional<T>(pkg: string | readonly string[], what: string, load: () => Promise<T>, probe?: PackageProbe): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const pkgs = typeof pkg === 'string' ? [pkg] : pkg;
    const named = pkgs.filter((p) => isMissingPackage(err, p));
    if (named.length === 0) throw err;
    const missing = await missingOf(pkgs, probe);
    throw missingPackage(missing.length > 0 ? missing : named, what, err);
  }
}

const requireHere = createRequire(import.meta.url);

/**
 * `require`s an optional CommonJS package (pg) when its first user needs it synchronously (a
 * constructor). For such a package the ESM entry wraps this same module object, so nothing is loaded twice.
 */
export function requireOptional<T>(pkg: string, what: string): T {
  try {
    return requireHere(pkg) as T;
  } catch (err) {
    if (isMissingPackage(err, pkg)) throw missingPackage(pkg, what, err);
    throw err;
  }
}

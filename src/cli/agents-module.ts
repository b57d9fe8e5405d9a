/** Loads an `--agents` module: a .js/.mjs file natively, a .ts/.mts file through tsx (no build step). */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { contractOfHandler } from '../agents/define.js';
import { BatonError } from '../core/errors.js';
import { isPlainObject } from '../core/json.js';
import { isMissingPackage } from '../core/optional.js';
import type { BoundAgents } from '../workflow/contract/check.js';

export type HandlerMap = Record<string, (ctx: never) => unknown>;

/**
 * An agents module that cannot be loaded or is no handler map: a BatonError with code `usage`, or
 * `missing-package` when a TypeScript module needs `tsx` (as every other missing optional peer).
 */
export class AgentsModuleError extends BatonError {
  override readonly name = 'AgentsModuleError';
  constructor(message: string, code: 'usage' | 'missing-package' = 'usage') {
    super(code, message);
  }
}

/** How long an agents module may take to load (its top-level code and awaits); BATON_MODULE_LOAD_TIMEOUT_MS overrides. */
export const MODULE_LOAD_TIMEOUT_MS = Number(process.env['BATON_MODULE_LOAD_TIMEOUT_MS']) > 0 ? Number(process.env['BATON_MODULE_LOAD_TIMEOUT_MS']) : 30_000;

export async function loadAgentsModule(path: string, cwd: string): Promise<HandlerMap> {
  const abs = resolve(cwd, path);
  if (!existsSync(abs)) throw new AgentsModuleError(`agents module not found: ${path}`);
  let mod: unknown;
  let timer: NodeJS.Timeout | undefined;
  try {
    const load = /\.(c|m)?tsx?$/.test(abs) ? import('tsx/esm/api').then(({ tsImport }) => tsImport(pathToFileURL(abs).href, import.meta.url)) : import(pathToFileURL(abs).href);
    // a top-level await that never settles would otherwise end the process silently (exit 13): the timer keeps it alive and says why
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AgentsModuleError(`agents module ${path} did not finish loading within ${MODULE_LOAD_TIMEOUT_MS / 1000} s (a top-level await that never settles?)`)), MODULE_LOAD_TIMEOUT_MS);
    });
    mod = await Promise.race([load, timeout]);
  } catch (e) {
    if (e instanceof AgentsModuleError) throw e;
    // tsx is an optional peer dependency: only TypeScript agents need it
    if (isMissingPackage(e, 'tsx')) throw new AgentsModuleError(`${path}: TypeScript agents need the \`tsx\` package: npm install tsx (or compile it to .js)`, 'missing-package');
    throw new AgentsModuleError(loadFailure(path, abs, e));
  } finally {
    clearTimeout(timer);
  }
  // tsx wraps a CommonJS-shaped default export one level deeper
  let exported: unknown = (mod as { default?: unknown }).default;
  if (isPlainObject(exported) && Object.keys(exported).length === 1 && isPlainObject(exported['default'])) exported = exported['default'];
  if (!isPlainObject(exported)) throw new AgentsModuleError(`${path}: the default export must map agent ids to handler functions`);
  const handlers: HandlerMap = {};
  const bad: string[] = [];
  for (const [id, h] of Object.entries(exported)) {
    if (typeof h === 'function') handlers[id] = h as HandlerMap[string];
    else bad.push(id);
  }
  if (bad.length > 0) throw new AgentsModuleError(`${path}: not functions: ${bad.join(', ')}`);
  return handlers;
}

/**
 * Why a module did not load, as `path:line:col: message` where the place can be found: esbuild (tsx)
 * names it for TypeScript; for JavaScript, Node's import() does not, so `node --check` is asked
 * (only on this error path); an error thrown while the module ran is placed by its stack.
 */
export function loadFailure(shown: string, abs: string, e: unknown): string {
  const err = e instanceof Error ? e : asError(e);
  const first = (err.message.split('\n').find((l) => /:\d+:\d+: ERROR: /.test(l)) ?? '').match(/:(\d+):(\d+): ERROR: (.*)$/);
  if (first) return `${shown}:${first[1]}:${Number(first[2]) + 1}: syntax error: ${first[3]}`;
  if (!/\.(c|m)?tsx?$/.test(abs)) {
    // import() names no place for a syntax error: Node's own check does (only on this error path)
    const where = syntaxErrorPlace(abs);
    if (where) return `${shown}:${where.line}:${where.column}: ${where.message}\n${where.frame}`;
  }
  const url = pathToFileURL(abs).href;
  for (const line of (err.stack ?? '').split('\n')) {
    for (const prefix of [url, abs]) {
      const at = line.indexOf(prefix);
      const m = at >= 0 ? /^:(\d+):(\d+)/.exec(line.slice(at + prefix.length)) : null;
      if (m) return `${shown}:${m[1]}:${m[2]}: ${err.name}: ${err.message} (while loading the agents module)`;
    }
  }
  return `cannot load agents module ${shown}: ${err.name === 'Error' ? '' : `${err.name}: `}${err.message}`;
}

/** Node's own syntax check of a JavaScript file: `FILE:LINE`, the line, a caret under the column. */
function syntaxErrorPlace(abs: string): { line: number; column: number; message: string; frame: string } | undefined {
  const r = spawnSync(process.execPath, ['--check', abs], { encoding: 'utf8', timeout: 10_000 });
  if (r.status === 0) return undefined;
  const lines = (r.stderr ?? '').split('\n');
  const head = /:(\d+)$/.exec(lines[0] ?? '');
  if (!head || !(lines[0] ?? '').startsWith(abs.startsWith('file:') ? fileURLToPath(abs) : abs)) return undefined;
  const code = lines[1] ?? '';
  const caret = lines[2] ?? '';
  const col = caret.indexOf('^');
  const message = lines.find((l) => /^\w*Error: /.test(l)) ?? 'SyntaxError';
  return { line: Number(head[1]), column: col >= 0 ? col + 1 : 1, message, frame: col >= 0 ? `  ${code}\n  ${caret}` : `  ${code}` };
}

/** A thrown non-Error (a bundler's parse error object, a string) as an Error with its message and name. */
function asError(e: unknown): Error {
  const o = typeof e === 'object' && e !== null ? (e as { message?: unknown; name?: unknown }) : {};
  const err = new Error(typeof o.message === 'string' ? o.message : typeof e === 'string' ? e : 'unknown error');
  if (typeof o.name === 'string') err.name = o.name;
  return err;
}

/**
 * What `defineAgent` handlers of an agents module carry (contracts, versions), for the contract
 * checks of `baton check --agents` and `baton run`. Undefined when no handler carries either.
 */
export function boundFromHandlers(module: string, handlers: Readonly<Record<string, unknown>>): BoundAgents | undefined {
  const bound: BoundAgents = { module, agents: {} };
  let any = false;
  for (const [id, h] of Object.entries(handlers)) {
    const version = typeof h === 'function' ? (h as { version?: unknown }).version : undefined;
    const contract = contractOfHandler(h);
    if (typeof version !== 'string' && !contract) continue;
    any = true;
    bound.agents[id] = { ...(typeof version === 'string' ? { version } : {}), ...(contract ? { contract } : {}) };
  }
  return any ? bound : undefined;
}

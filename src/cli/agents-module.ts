/** Loads an `--agents` module: a .js/.mjs file natively, a .ts/.mts file through tsx (no build step). */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isPlainObject } from '../core/json.js';

export type HandlerMap = Record<string, (ctx: never) => unknown>;

export class AgentsModuleError extends Error {
  override readonly name = 'AgentsModuleError';
}

export async function loadAgentsModule(path: string, cwd: string): Promise<HandlerMap> {
  const abs = resolve(cwd, path);
  if (!existsSync(abs)) throw new AgentsModuleError(`agents module not found: ${path}`);
  let mod: unknown;
  try {
    if (/\.(c|m)?tsx?$/.test(abs)) {
      const { tsImport } = await import('tsx/esm/api');
      mod = await tsImport(pathToFileURL(abs).href, import.meta.url);
    } else {
      mod = await import(pathToFileURL(abs).href);
    }
  } catch (e) {
    throw new AgentsModuleError(`cannot load agents module ${path}: ${(e as Error).message}`);
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

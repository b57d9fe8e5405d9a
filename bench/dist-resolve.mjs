// The resolve hook of dist-hooks.mjs: src/X.ts (or .js) -> dist/X.js when that file exists.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const DIST = fileURLToPath(new URL('../dist/', import.meta.url));

export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (!r.url.startsWith('file:')) return r;
  const path = fileURLToPath(r.url);
  if (!path.startsWith(SRC) || !/\.(ts|js)$/.test(path) || path.endsWith('.d.ts')) return r;
  const target = DIST + path.slice(SRC.length).replace(/\.ts$/, '.js');
  return existsSync(target) ? { url: pathToFileURL(target).href, shortCircuit: true } : r;
}

/**
 * ajv's 2020-12 class, loaded on first use: importing the package costs tens of milliseconds, and a
 * command that validates nothing (or only valid files, through the cached validators of a run) should
 * not pay it at start-up. ajv is CommonJS, so `require` loads it synchronously where it is needed.
 */
import { createRequire } from 'node:module';
import type { Ajv2020 } from 'ajv/dist/2020.js';

let ctor: typeof Ajv2020 | undefined;

export function ajv2020(): typeof Ajv2020 {
  return (ctor ??= (createRequire(import.meta.url)('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js')).Ajv2020);
}

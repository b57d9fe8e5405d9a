/// <reference types="node" preserve="true" />
/**
 * `@baton-run/baton/typescript`: agents modules written in TypeScript, loaded without a build step.
 * Needs the optional peer dependency `tsx` (`npm install tsx`); `.js`/`.mjs` modules load without it.
 */

/** Loads a module whose default export maps agent ids to handlers (`.ts` through tsx). */
export { loadAgentsModule, AgentsModuleError, type HandlerMap } from '../cli/agents-module.js';

/// <reference types="node" preserve="true" />
/**
 * `@baton-run/baton/a2a`: Baton's A2A server side with the SDK's own types (`npm install @a2a-js/sdk`):
 * the agent card of the registered workflows and `A2aTasks`, the SDK's `A2ARequestHandler` over the
 * engine (a task is a run), for mounting on a server of your own. Importing it needs no peer (the SDK's
 * modules come from `loadA2aServer()`, which names it when missing); its declarations name the SDK's
 * types, so a TypeScript program importing it needs `@a2a-js/sdk` installed (not `hono`).
 * `baton serve --a2a` (`startServer({a2a: await loadA2aServer()})`) needs none of this.
 */
export { loadA2aServer, A2A_PATH, CARD_PATH, type A2aServerModules } from '../server/a2a/modules.js';
export { agentCard, sdkModules, type A2aSdkModules, type A2aMountOptions } from '../server/a2a/card.js';
export { A2aTasks, type A2aTasksHost } from '../server/a2a/tasks.js';

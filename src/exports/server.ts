/// <reference types="node" preserve="true" />
/**
 * `@baton-run/baton/server`: the HTTP API of `baton serve` (docs/server.md). Needs the optional peer
 * dependencies `hono` and `@hono/node-server` (`npm install hono @hono/node-server`), imported when
 * `createServerApp` or `startServer` is first called (a missing one is a `missing-package` error):
 * importing this subpath, its keys, metrics, routes and client, and its declarations, need neither.
 */

/** The API as a Hono app (answers `app.fetch(request)` in memory). */
export { createServerApp, DEFAULT_BODY_LIMIT, type ServerApp, type ServerAppOptions, type FetchApp } from '../server/app.js';
/** The app on a port, with the engine's worker running what it starts. */
export { startServer, isLoopback, type BatonServer, type ListenOptions } from '../server/listen.js';
/** API keys and roles: parsing, hashing, and the authorization checks. */
export { parseKeysEnv, parseKeysFile, parseRole, mayDo, mayActAsAgent, hashKey, findKey, checkDistinctKeys, KeysError, type ApiKey, type Role, type Principal, type Action } from '../server/keys.js';
/** Prometheus metrics: pass `metrics.onEvent` to createEngine's `onEvent`. */
export { ServerMetrics } from '../server/metrics.js';
/** The route table (schemas) and the OpenAPI document built from it. */
export { ROUTES, type RouteSpec } from '../server/schemas.js';
export { openApiDocument } from '../server/openapi.js';
/** Remote agents, server side: pass `bindRun` and `onEvent` to createEngine and the object to startServer's `remote`. */
export { RemoteAgents, type RemoteAgentsOptions, type RemoteTaskView } from '../server/remote.js';
/** Workflows offered by name (`--workflows DIR`). */
export { scanWorkflows, WorkflowFolder, type RegisteredWorkflow } from '../server/workflows.js';
/** The client `baton run --server` uses: start a run and follow its events. */
export { ServerClient, type ServerClientOptions } from '../server/client.js';
/**
 * A2A (`baton serve --a2a`): load the SDK, pass it as startServer's `a2a`. Opaque here, so that a program
 * serving no A2A type-checks without `@a2a-js/sdk`; the card and the task mapping: `@baton-run/baton/a2a`.
 */
export { loadA2aServer, A2A_PATH, CARD_PATH, type A2aServerModules } from '../server/a2a/modules.js';

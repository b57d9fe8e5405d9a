/**
 * The HTTP API of `baton serve` as a plain Hono app: `(await createServerApp(...)).app.fetch(request)`
 * answers in memory, and listen.ts puts it on a port. Every route is in the table of schemas.ts; this
 * file binds each to its handler through the edge (http.ts: key, schemas, body limit). `hono` (an
 * optional peer) and the modules that use it (streams.ts, a2a/routes.ts) are imported by
 * createServerApp, so that importing this module, and its declarations, need no Hono.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'hono';
import type { Engine } from '../api/engine.js';
import { loadOptional } from '../core/optional.js';
import { BatonError } from '../core/errors.js';
import type { RunStatus } from '../engine/events.js';
import type { RunStore } from '../engine/ports.js';
import { agentRouteHandlers } from './agents.js';
import { ChangeHub } from '../api/changes.js';
import { edge, errorResponse, methodNotAllowed, nodeEdge, type Request } from './http.js';
// from the module that names no Hono type: app.d.ts re-exports it
import { HttpError, type EdgeOptions } from './http-types.js';
import { checkDistinctKeys, mayDo, type ApiKey } from './keys.js';
import { ServerMetrics } from './metrics.js';
import { RemoteAgents, tokenSecretOf } from './remote.js';
import { sdkModules } from './a2a/card.js';
import { a2aPaths, openApiDocument } from './openapi.js';
import { A2A_PATH, CARD_PATH, type A2aServerModules } from './a2a/modules.js';
import { RunRoutes } from './runs.js';
import { ROUTES, routeSpec } from './schemas.js';
import { routeCompiler } from './validate.js';
import type { RegisteredWorkflow } from './workflows.js';

export interface ServerAppOptions {
  /** The engine whose store and operations the routes use (its worker runs the runs, see listen.ts). */
  engine: Engine;
  /** Hashed API keys (keys.ts); none: no keys, every caller is `anonymous` (serve on loopback only). */
  keys?: readonly ApiKey[] | undefined;
  /** Workflows offered by name (`--workflows DIR`, workflows.ts). */
  workflows?: ReadonlyMap<string, RegisteredWorkflow> | undefined;
  /** Largest request body in bytes (default 1 MiB). */
  bodyLimit?: number | undefined;
  /** Largest file a remote agent may upload (PUT /tasks/{token}/files/{key}), bytes (default 64 MiB). */
  fileLimit?: number | undefined;
  /** Counters fed by the engine's onEvent (pass the same object there); default: a new one. */
  metrics?: ServerMetrics | undefined;
  /** Where posted workflows run (default: process.cwd()). */
  cwd?: string | undefined;
  /** The version /openapi.json gives. */
  version?: string | undefined;
  /**
   * A store object of the server's own on the same database, for change notifications only: its
   * `takeChanged` says which runs changed, so a commit wakes only the streams of its run (PostgreSQL:
   * a second LISTEN connection, listening to every commit). Default: the engine's store, which says
   * so itself on memory and SQLite (the hub is a consumer of its own, beside the worker), and on
   * PostgreSQL hears only commits that leave work, so every change wakes every stream there. The
   * caller opens and closes it.
   */
  changes?: RunStore | undefined;
  /** Faults that are not the caller's (a store failure, a bug): logged here, answered with a message only. */
  log?: ((line: string) => void) | undefined;
  /**
   * The remote agents this server serves (remote.ts): the same object whose `bindRun` and `onEvent`
   * were given to createEngine. Default: none (claims answer 204).
   */
  remote?: RemoteAgents | undefined;
  /**
   * Serve the registered workflows over A2A (`baton serve --a2a`, a2a/routes.ts): the SDK's modules,
   * loaded with `loadA2aServer()`. Default: no A2A routes.
   */
  a2a?: A2aServerModules | undefined;
}

/**
 * The Hono app, by the methods the server and its users call (typed by their shape, so that these
 * declarations need no `hono`): `app.fetch(request)` answers a web-standard Request, `app.request(path,
 * init)` builds one first (Hono's own helper); to put it under a Hono app of your own,
 * `yours.mount('/baton', app.fetch)`.
 */
export interface FetchApp {
  // properties, as Hono's are: each may be passed on unbound
  fetch: (request: globalThis.Request) => Response | Promise<Response>;
  request: (input: string | URL | globalThis.Request, init?: RequestInit) => Response | Promise<Response>;
}

export interface ServerApp {
  app: FetchApp;
  /**
   * Serves a request Hono need not see (a remote agent's completion) and says true, or says false: the
   * Node server of listen.ts asks it first. `app.fetch` alone answers every route the same way.
   */
  fastPath: (req: IncomingMessage, res: ServerResponse) => boolean;
  metrics: ServerMetrics;
  /** Ends every open stream. */
  close(): void;
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** The app over `opts.engine`. Imports `hono` on its first call: a missing one is a `missing-package` error. */
export async function createServerApp(opts: ServerAppOptions): Promise<ServerApp> {
  const [{ Hono }, { allRunsStream, resumeSeq, runEventStream }, a2aRoutes] = await loadOptional('hono', 'the HTTP API (createServerApp)', () =>
    Promise.all([import('hono'), import('./streams.js'), opts.a2a ? import('./a2a/routes.js') : undefined]),
  );
  const { engine } = opts;
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const metrics = opts.metrics ?? new ServerMetrics();
  // one key under two names would act as the first: refused here too, for keys a library caller built
  checkDistinctKeys(opts.keys ?? [], 'the server\'s keys');
  const edgeOpts: EdgeOptions = { keys: opts.keys ?? [], bodyLimit: opts.bodyLimit ?? DEFAULT_BODY_LIMIT, compiler: routeCompiler() };
  const hub = opts.changes ? new ChangeHub(opts.changes, true) : new ChangeHub(engine.store);
  const closing = new AbortController();
  const streams = { store: engine.store, hub, closing: closing.signal };
  const runs = new RunRoutes({ engine, workflows: opts.workflows ?? new Map(), cwd: opts.cwd ?? process.cwd() });
  // every route the app answers is in the document: the A2A routes too when they are mounted
  const openapi = openApiDocument(ROUTES, opts.version ?? '0.0.0', opts.a2a ? a2aPaths(A2A_PATH, CARD_PATH) : {});
  const remote = opts.remote ?? new RemoteAgents();
  // the same keys after a restart read the tokens made before it (their late outcomes are recorded)
  remote.useTokenSecret(tokenSecretOf(edgeOpts.keys.map((k) => k.hash)));

  const agentRoutes = agentRouteHandlers({ engine, remote, log, fileLimit: opts.fileLimit });
  const handlers: Record<string, (r: Request) => Promise<Response> | Response> = {
    openapi: (r) => r.c.json(openapi),
    health: async (r) => {
      try {
        await engine.store.runs({ limit: 1 });
      } catch (e) {
        // a store's error names its location (a database URL: user, host, port, name): not for anyone who can reach the port
        if (e instanceof BatonError && !mayDo(r.principal, 'read')) throw new HttpError(errorResponse(e, log).status, e.code, 'the store does not answer (a reader key sees why)');
        throw e;
      }
      return r.c.json({ ok: true, store: engine.store.kind });
    },
    metrics: async (r) => r.c.body(await metrics.render(engine.store, remote.waitingForClaim()), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }),
    listWorkflows: (r) => runs.workflowsList(r),
    validateWorkflow: (r) => runs.validate(r),
    startRun: (r) => runs.start(r),
    listRuns: (r) => runs.list(r),
    getRun: (r) => runs.get(r),
    listPhases: (r) => runs.phases(r),
    getPhase: (r) => runs.phase(r),
    listItems: (r) => runs.items(r),
    listGates: (r) => runs.gates(r),
    runEvents: (r) => {
      if (!wantsStream(r.c)) return runs.events(r);
      const types = typeof r.query['type'] === 'string' ? new Set(r.query['type'].split(',')) : undefined;
      return runEventStream(r.c, streams, r.params['id']!, resumeSeq(r.c, typeof r.query['after'] === 'number' ? r.query['after'] : undefined), types);
    },
    runArtifacts: (r) => runs.artifacts(r),
    allEvents: (r) => Promise.resolve(allRunsStream(r.c, streams, typeof r.query['status'] === 'string' ? new Set(r.query['status'].split(',') as RunStatus[]) : undefined)),
    cancelRun: (r) => runs.cancel(r),
    rerunRun: (r) => runs.rerun(r),
    approveGate: (r) => runs.decide(r, 'approve'),
    denyGate: (r) => runs.decide(r, 'deny'),
    respondGate: (r) => runs.decide(r, 'respond'),
    ...agentRoutes.handlers,
  };

  const app = new Hono();
  // the route's template as its label (never the raw path: a label per URL would grow without bound)
  const templates = new Set(ROUTES.map((r) => honoPath(r.path)));
  app.use(async (c, next) => {
    await next();
    metrics.request(templates.has(c.req.routePath) ? c.req.routePath : 'other', c.res.status);
  });
  for (const spec of ROUTES) {
    const h = handlers[spec.operationId];
    if (!h) throw new Error(`route ${spec.operationId} has no handler`);
    app.on(spec.method.toUpperCase(), honoPath(spec.path), edge(spec, edgeOpts, async (r) => h(r)));
  }
  if (opts.a2a && a2aRoutes) a2aRoutes.mountA2a(app, { modules: sdkModules(opts.a2a), engine, workflows: opts.workflows ?? new Map(), hub, closing: closing.signal, edge: edgeOpts, ...(opts.version !== undefined ? { version: opts.version } : {}) });
  app.notFound((c) => {
    const other = ROUTES.filter((r) => pathRegex(r.path).test(c.req.path));
    const method = c.req.method === 'HEAD' ? 'GET' : c.req.method;
    // a path a route has under this very method missed it only by a trailing slash (Hono matches
    // strictly): a 405 would tell the caller to use the method it used
    const slash = other.some((r) => r.method.toUpperCase() === method);
    if (other.length > 0 && !slash) return methodNotAllowed(c, other.map((r) => r.method.toUpperCase()));
    const hint = slash ? `: without the trailing slash, ${c.req.path.replace(/\/+$/, '').slice(0, 200)}` : ' (the routes are in /openapi.json)';
    return c.json({ error: { code: 'not-found', message: `no route ${c.req.method} ${c.req.path.slice(0, 200)}${hint}` } }, 404);
  });
  app.onError((e, c) => {
    const { status, body, headers } = errorAnswer(e, log);
    return c.json(body, status as 400, headers);
  });

  // A remote agent's completion, the one request every remote phase makes, is served from the Node
  // request itself: the same edge (nodeEdge: key, schemas, body rules), handler and errors as through
  // Hono, without building Hono's request, context and response for it (Hono over a bare Node server
  // costs about 20 µs a request here, measured in a loop). A path Hono would read differently (a query,
  // an escaped character) goes through Hono.
  const completeEdge = nodeEdge(routeSpec('completeTask'), edgeOpts);
  const COMPLETE = /^\/tasks\/(rt_[A-Za-z0-9_.-]+)\/complete$/;
  const fastPath = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== 'POST') return false;
    const m = COMPLETE.exec(req.url ?? '');
    if (!m) return false;
    void (async () => {
      let answer: { status: number; body: unknown; headers: Record<string, string> };
      try {
        answer = { status: 200, body: await agentRoutes.complete(await completeEdge(req, { token: m[1]! })), headers: {} };
      } catch (e) {
        answer = errorAnswer(e, log);
      }
      metrics.request('/tasks/:token/complete', answer.status);
      const text = JSON.stringify(answer.body);
      res.writeHead(answer.status, { ...answer.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    })().catch((e: unknown) => {
      // a bug, not the caller's: logged, and the connection ends rather than the process
      log(`internal error answering a completion: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      res.destroy();
    });
    return true;
  };

  return {
    app,
    fastPath,
    metrics,
    close() {
      closing.abort();
      remote.close();
      hub.close();
    },
  };
}

/** A fault as an answer: errorResponse's, with the headers a 401 and a 413 need. */
function errorAnswer(e: unknown, log: (line: string) => void): { status: number; body: unknown; headers: Record<string, string> } {
  const { status, body } = errorResponse(e, log);
  const headers: Record<string, string> = status === 401 ? { 'www-authenticate': 'Bearer realm="baton"' } : {};
  // the rest of an oversized body is never read: the connection cannot carry another request
  if (status === 413) headers['connection'] = 'close';
  return { status, body, headers };
}

function wantsStream(c: Context): boolean {
  return /\btext\/event-stream\b/i.test(c.req.header('accept') ?? '');
}

function honoPath(p: string): string {
  return p.replace(/\{(\w+)\}/g, ':$1');
}

function pathRegex(p: string): RegExp {
  return new RegExp(`^${p.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]+')}/?$`);
}

export { HttpError };

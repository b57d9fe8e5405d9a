/**
 * `baton serve` as a library call: the app on a port, and the engine's worker running the runs the
 * server starts. Without keys the server listens on loopback only (anyone who can reach it could
 * start runs), whatever host is asked for. `hono` and `@hono/node-server` (optional peers) are imported
 * by startServer: a missing one is a `missing-package` error naming both.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BatonError } from '../core/errors.js';
import { loadOptional } from '../core/optional.js';
import { createServerApp, type ServerAppOptions } from './app.js';
import type { ServerMetrics } from './metrics.js';

export interface ListenOptions extends ServerAppOptions {
  /** Default 127.0.0.1. With no keys only a loopback address is accepted. */
  host?: string | undefined;
  /** Default 8080; 0 picks a free port. */
  port?: number | undefined;
  /** Run the engine's worker in this process (default true): the runs the server starts are executed here. */
  worker?: boolean | undefined;
  /** How long running attempts may finish on close() before they are handed back (ms, default 10 s). */
  graceMs?: number | undefined;
}

export interface BatonServer {
  /** `http://127.0.0.1:PORT` */
  url: string;
  port: number;
  host: string;
  metrics: ServerMetrics;
  /** Stops accepting, ends the streams, stops the worker (its attempts finish or are handed back). The store stays open. */
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export async function startServer(opts: ListenOptions): Promise<BatonServer> {
  const host = opts.host ?? '127.0.0.1';
  if ((opts.keys ?? []).length === 0 && !isLoopback(host)) throw new BatonError('usage', `without API keys the server listens on loopback only (127.0.0.1), not ${host}: give keys (BATON_API_KEYS or --keys FILE) to listen on ${host}`);
  // both peers at once, so that a missing one is named with the other if it is missing too
  const [{ getRequestListener }] = await loadOptional(['hono', '@hono/node-server'], 'the HTTP API (startServer)', () => Promise.all([import('@hono/node-server'), import('hono')]));
  const built = await createServerApp(opts);
  const worker = new AbortController();
  const serving = opts.worker === false ? Promise.resolve() : opts.engine.serve(worker.signal);
  // a worker that fails ends nothing here: its store errors are retried inside, a fault is logged
  serving.catch((e: unknown) => (opts.log ?? ((l: string) => process.stderr.write(`${l}\n`)))(`worker stopped: ${(e as Error).message}`));
  let server: Server;
  let stopping = false;
  const info = await new Promise<AddressInfo>((resolve, reject) => {
    // what @hono/node-server's serve() makes, with the app's fast path first (a remote agent's
    // completion) and Hono's listener for everything else
    const listener = getRequestListener(built.app.fetch, { hostname: host });
    server = createServer((req, res) => {
      // stopping: the remote agents' calls about the tasks they hold (/tasks/...) are still served, so that
      // an attempt in an agent's hands may finish within the grace; everything else is refused
      if (stopping && !(req.url ?? '').startsWith('/tasks/')) {
        const text = JSON.stringify({ error: { code: 'server-stopping', message: 'the server is stopping; try again when it is back' } });
        res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), connection: 'close', 'retry-after': '1' });
        res.end(text);
        return;
      }
      if (!built.fastPath(req, res)) void listener(req, res);
    });
    server.listen(opts.port ?? 8080, host, () => resolve(server.address() as AddressInfo));
    server.once('error', reject);
  }).catch((e: unknown) => {
    worker.abort();
    built.close();
    const code = (e as NodeJS.ErrnoException).code;
    throw new BatonError('usage', code === 'EADDRINUSE' ? `port ${opts.port ?? 8080} on ${host} is taken (another server?); --port picks another` : code === 'EADDRNOTAVAIL' ? `${host} is not an address of this machine` : `cannot listen on ${host}:${opts.port ?? 8080}: ${(e as Error).message}`, { cause: e });
  });
  const shown = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shown}:${info.port}`,
    port: info.port,
    host: info.address,
    metrics: built.metrics,
    close: () =>
      (closing ??= (async () => {
        // streams end at once, waiting claims answer (built.close); new requests are refused, but a
        // remote agent may still settle the task it holds while the worker's attempts get their grace
        stopping = true;
        built.close();
        server.closeIdleConnections();
        if (opts.worker !== false) await opts.engine.stop(opts.graceMs ?? 10_000);
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 1000).unref();
        });
        worker.abort();
        await serving.catch(() => undefined);
      })()),
  };
}

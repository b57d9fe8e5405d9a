/**
 * `baton serve`: the HTTP API (src/server, docs/server.md) with a worker in the same process, bound
 * as `baton worker` binds (its own flags, x-command and LLM agents). The server's code and its
 * packages (hono, @hono/node-server: optional peers) load only here.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createEngine, type Engine } from '../api/engine.js';
import { safeText } from '../diagnostics/terminal.js';
import { requirePackages } from '../core/optional.js';
import type { RunStore } from '../engine/ports.js';
import { UsageError, bindFromFlags, cliClock, cliTelemetry, exitFor, openCliStore, storeRetryMs, storeTroubleLine } from './durable.js';
import { SIGNAL_EXIT, type CliIo } from './io.js';
import { describeEvent } from './run.js';
import { SERVE_OPTIONS } from './spec.js';
import { packageVersion } from './version.js';

async function loadServer(): Promise<typeof import('../exports/server.js')> {
  // its peers are imported on first use; asked for here first, so the message names the command
  await requirePackages(['hono', '@hono/node-server'], '`baton serve`');
  return import('../exports/server.js');
}

export async function serveCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({ args, options: SERVE_OPTIONS });
  let store: RunStore | undefined;
  let changes: RunStore | undefined;
  let engine: Engine | undefined;
  try {
    const port = values.port === undefined ? 8080 : Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port expects a port number (0-65535), got \`${values.port}\``);
    const bodyLimit = values['body-limit'] === undefined ? undefined : Number(values['body-limit']);
    if (bodyLimit !== undefined && (!Number.isInteger(bodyLimit) || bodyLimit < 1)) throw new UsageError(`--body-limit expects a number of bytes, got \`${values['body-limit']}\``);
    const fileLimit = values['file-limit'] === undefined ? undefined : Number(values['file-limit']);
    if (fileLimit !== undefined && (!Number.isInteger(fileLimit) || fileLimit < 1)) throw new UsageError(`--file-limit expects a number of bytes, got \`${values['file-limit']}\``);
    const concurrency = values.concurrency === undefined ? undefined : Number(values.concurrency);
    if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) throw new UsageError(`--concurrency expects a positive integer, got \`${values.concurrency}\``);
    const lease = values.lease === undefined ? undefined : Number(values.lease);
    if (lease !== undefined && !(Number.isFinite(lease) && lease >= 0.5)) throw new UsageError(`--lease expects a number of seconds (at least 0.5), got \`${values.lease}\``);
    const retryMs = storeRetryMs(values, io);
    const server = await loadServer();
    const keys = readKeys(server, values.keys, io);
    const host = values.host ?? '127.0.0.1';
    if (keys.length === 0 && !server.isLoopback(host)) throw new UsageError(`without API keys the server listens on loopback only: --host ${host} needs keys (BATON_API_KEYS or --keys FILE, docs/server.md)`);
    if (values.a2a === true && values.workflows === undefined) throw new UsageError('--a2a publishes the registered workflows as skills: give --workflows DIR');
    const workflows = values.workflows !== undefined ? server.scanWorkflows(values.workflows, io.cwd) : new Map<string, { name: string; path: string }>();
    const bound = await bindFromFlags(values, io, io.cwd);
    store = await openCliStore(values, io, 'write', true);
    // PostgreSQL: a second store object of the server's own, whose notifications say which runs changed (the first one's are its worker's)
    if (store.kind === 'postgres') changes = await openCliStore(values, io, 'write', true, 'commits');
    const metrics = new server.ServerMetrics();
    for (const id of values.remote ?? []) if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(id)) throw new UsageError(`--remote expects an agent id (letters, digits and _ . -), got \`${id}\``);
    // agents served to remote agents: bound here to handlers that park their attempts for the claim routes
    const remote = new server.RemoteAgents({ agents: values.remote ?? [], ...(lease !== undefined ? { leaseMs: lease * 1000 } : {}) });
    const quiet = values.quiet === true;
    engine = createEngine({
      store,
      agents: bound.agents,
      bindRun: remote.bindRun,
      clock: cliClock(io),
      ...(await cliTelemetry(io)),
      stubAgents: values['stub-agents'] === true,
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(lease !== undefined ? { leaseMs: lease * 1000 } : {}),
      ...(retryMs !== undefined ? { storeRetryMs: retryMs } : {}),
      onStoreTrouble: storeTroubleLine(io),
      onEvent: (e, state) => {
        metrics.onEvent(e, state);
        remote.onEvent(e, state);
        if (quiet) return;
        // names and messages come from files and agents: escaped, never sent raw to a terminal
        if (values.json) io.stdout(JSON.stringify({ run_id: state.runId, ...e }) + '\n');
        else io.stderr(`${new Date(e.at).toISOString()} ${safeText(state.runId, 200)} ${'phase' in e && e.phase ? `${safeText(e.phase, 200)} ` : ''}${e.type} ${safeText(describeEvent(e))}`.trimEnd() + '\n');
      },
    });
    const running = await server.startServer({
      engine,
      keys,
      workflows,
      host,
      port,
      metrics,
      remote,
      ...(values.a2a === true ? { a2a: await server.loadA2aServer() } : {}),
      ...(changes ? { changes } : {}),
      cwd: io.cwd,
      version: await packageVersion(),
      ...(bodyLimit !== undefined ? { bodyLimit } : {}),
      ...(fileLimit !== undefined ? { fileLimit } : {}),
      log: (line) => io.stderr(`${safeText(line, 4000)}\n`),
    });
    const agents = Object.keys(bound.agents);
    if (values.json) io.stdout(JSON.stringify({ type: 'server.started', url: running.url, store: store.location, keys: keys.length, workflows: [...workflows.keys()], agents, stub_agents: values['stub-agents'] === true, remote_agents: values.remote ?? [] }) + '\n');
    io.stderr(`baton serve: listening on ${running.url} (store ${safeText(store.location, 500)})\n`);
    io.stderr(keys.length === 0 ? `no API keys: listening on loopback only (${running.host}); anyone on this machine may use the API as admin. Give keys (BATON_API_KEYS or --keys FILE) to listen on another address\n` : `${keys.length} API key${keys.length === 1 ? '' : 's'}: ${keys.map((k) => `${k.name} (${k.roles.map((r) => (r.kind === 'agent' ? `agent:${r.agent}` : r.kind)).join('+')})`).join(', ')}\n`);
    if (workflows.size > 0) io.stderr(`workflows: ${[...workflows.keys()].map((w) => safeText(w, 200)).join(', ')}\n`);
    if (values.a2a === true) io.stderr(`A2A: agent card at ${running.url}/.well-known/agent-card.json, JSON-RPC at ${running.url}/a2a (${workflows.size} skill${workflows.size === 1 ? '' : 's'})\n`);
    io.stderr(`remote agents: ${(values.remote ?? []).length > 0 ? `${(values.remote ?? []).map((a) => safeText(a, 200)).join(', ')}, and ` : ''}those the workflows declare \`x-remote: true\` (POST /agents/ID/claim)\n`);
    io.stderr(`worker ${engine.work.id}: ${agents.length > 0 ? `agents ${agents.map((a) => safeText(a, 200)).join(', ')}` : 'no agents of its own'}${values['stub-agents'] ? ', stubs for the rest' : ''}, and the x-command and LLM agents the workflows declare\n`);
    await new Promise<void>((done) => {
      let stopping = false;
      const off = io.onInterrupt?.((why) => {
        if (why === 'reader-gone') return;
        if (stopping) {
          io.stderr('baton serve: stopping now\n');
          // whatever the stop waits for (a store that does not answer, an agent): the store has the runs
          if (io.exit) io.exit(SIGNAL_EXIT[why]);
          off?.();
          done();
          return;
        }
        stopping = true;
        io.stderr('baton serve: stopping: no new requests (remote agents may still settle the tasks they hold); running attempts may finish for 10 s, the rest are handed back (again to stop now)\n');
        void running.close().finally(() => {
          off?.();
          done();
        });
      });
      // an io without signals (a test's) could never stop it: it closes at once
      if (!off) void running.close().finally(done);
    });
    return 0;
  } catch (e) {
    if (e instanceof Error && e.name === 'KeysError') return exitFor(new UsageError(e.message), 'serve', io);
    return exitFor(e, 'serve', io);
  } finally {
    await engine?.close();
    await changes?.close();
    await store?.close();
  }
}

function readKeys(server: Awaited<ReturnType<typeof loadServer>>, file: string | undefined, io: CliIo): import('../exports/server.js').ApiKey[] {
  const keys = [];
  const env = io.env['BATON_API_KEYS'];
  if (env !== undefined && env.trim() !== '') keys.push(...server.parseKeysEnv(env));
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(resolve(io.cwd, file), 'utf8');
    } catch (e) {
      throw new UsageError(`--keys ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
    }
    for (const k of server.parseKeysFile(text, file)) {
      if (keys.some((x) => x.name === k.name)) throw new UsageError(`--keys ${file}: the name \`${k.name}\` is also in BATON_API_KEYS`);
      keys.push(k);
    }
    server.checkDistinctKeys(keys, `--keys ${file} and BATON_API_KEYS`);
  }
  return keys;
}

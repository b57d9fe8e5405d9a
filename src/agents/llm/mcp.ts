/**
 * MCP tools for LLM agents, through the official TypeScript SDK over stdio (or streamable HTTP for a `url` server). Servers start on first
 * use (one process per server and run, shared by the agents that name it) and stop at close().
 * Only tools that an agent declares, that the server allows (`allowed_tools`) and that the server
 * lists are ever offered; anything else is never called. The SDK (an optional peer dependency) is
 * imported when the first server starts.
 */
import type { Readable } from 'node:stream';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JsonObject } from '../../core/json.js';
import { isPlainObject } from '../../core/json.js';
import { isMissingPackage } from '../../core/optional.js';
import { stderrGist } from '../../core/stderr-gist.js';
import type { McpServerDecl } from '../../workflow/model.js';
import { llmError } from './failures.js';
import { modelToolName, parseToolRef } from './names.js';
import type { OfferedTool, ToolHost, ToolResult } from './tools.js';

export interface McpHostOptions {
  servers: Readonly<Record<string, McpServerDecl>>;
  /** Values for `${VAR}` in a server's `env`. */
  env: Readonly<Record<string, string | undefined>>;
  /** Working directory of server processes (the workflow's folder). */
  cwd: string;
  /** How long a server gets to start and answer `initialize` + `tools/list` (default 15 s; BATON_MCP_START_TIMEOUT_MS). */
  startTimeoutMs?: number | undefined;
  /** How long one tool call may take (default 60 s; BATON_MCP_CALL_TIMEOUT_MS). */
  callTimeoutMs?: number | undefined;
}

interface Listed {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

interface Connection {
  client: Client;
  /** The promise this connection is cached under (to drop it, and only it, once its server has exited). */
  promise?: Promise<Connection>;
  tools: Map<string, Listed>;
  stderr: () => string;
}

const STDERR_TAIL = 4000;

export { stderrGist };

export class McpHost implements ToolHost {
  private readonly conns = new Map<string, Promise<Connection>>();
  /** Aborted by close(): stops servers still starting. */
  private readonly stopping = new AbortController();
  private closed = false;

  constructor(private readonly o: McpHostOptions) {}

  async offer(refs: readonly string[], signal: AbortSignal): Promise<{ tools: OfferedTool[]; skipped: { ref: string; reason: string }[] }> {
    const tools: OfferedTool[] = [];
    const skipped: { ref: string; reason: string }[] = [];
    for (const ref of refs) {
      const r = parseToolRef(ref);
      if (!r) {
        skipped.push({ ref, reason: 'not an mcp:server/tool reference' });
        continue;
      }
      const decl = this.o.servers[r.server];
      if (!decl) {
        skipped.push({ ref, reason: `no MCP server \`${r.server}\` is declared` });
        continue;
      }
      if (decl.allowedTools && !decl.allowedTools.includes(r.tool)) {
        skipped.push({ ref, reason: `\`${r.tool}\` is not in the server's allowed_tools` });
        continue;
      }
      const conn = await this.connect(decl, signal);
      const listed = conn.tools.get(r.tool);
      if (!listed) {
        skipped.push({ ref, reason: `server \`${r.server}\` does not list a tool \`${r.tool}\`` });
        continue;
      }
      if (tools.some((t) => t.ref === ref)) continue; // declared twice
      // names are cleaned to what providers accept (and cut at 64): `a.b` and `a_b` would both be `a_b__tool`,
      // and the model's call would reach whichever came first; a taken name gets a suffix
      const base = modelToolName(ref);
      let name = base;
      for (let i = 2; tools.some((t) => t.name === name); i++) name = `${base.slice(0, 63 - String(i).length)}_${i}`;
      tools.push({ name, ref, ...(listed.description !== undefined ? { description: listed.description } : {}), inputSchema: listed.inputSchema });
    }
    return { tools, skipped };
  }

  async call(tool: OfferedTool, args: JsonObject, signal: AbortSignal): Promise<ToolResult> {
    const r = parseToolRef(tool.ref);
    const decl = r ? this.o.servers[r.server] : undefined;
    // offer() is the only way to an OfferedTool, but the gate is kept here too: a tool not allowed is never called
    if (!r || !decl || (decl.allowedTools && !decl.allowedTools.includes(r.tool))) return { text: `tool ${tool.ref} is not allowed`, isError: true };
    let conn = await this.connect(decl, signal);
    if (conn.client.transport === undefined) {
      // the server exited since its last use (crashed, killed, an idle exit): nothing was sent to it, so it is
      // started again for this call instead of the call failing with "Not connected"
      if (this.conns.get(decl.id) === conn.promise) this.conns.delete(decl.id);
      conn = await this.connect(decl, signal);
    }
    if (!conn.tools.has(r.tool)) return { text: `tool ${tool.ref} is not listed by its server`, isError: true };
    let res: Awaited<ReturnType<Client['callTool']>>;
    try {
      res = await conn.client.callTool({ name: r.tool, arguments: args }, undefined, { signal, timeout: this.o.callTimeoutMs ?? 60_000 });
    } catch (e) {
      // a server that died is started again on the next use, not kept as a broken connection; an HTTP server
      // that failed below MCP (refused, reset, restarted and forgot the session) is connected to afresh
      const broken = conn.client.transport === undefined || (decl.url !== undefined && !signal.aborted && !isMcpError(e));
      if (broken && this.conns.get(decl.id) === conn.promise) {
        this.conns.delete(decl.id);
        if (conn.client.transport !== undefined) void conn.client.close().catch(() => undefined);
      }
      throw e;
    }
    const content = Array.isArray(res.content) ? (res.content as unknown[]) : [];
    const text = content.map((c) => (isPlainObject(c) && c['type'] === 'text' && typeof c['text'] === 'string' ? c['text'] : JSON.stringify(c))).join('\n');
    return { text: text === '' && res.structuredContent !== undefined ? JSON.stringify(res.structuredContent) : text, isError: res.isError === true };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort(new Error('the tool host is closed'));
    const all = [...this.conns.values()];
    this.conns.clear();
    await Promise.allSettled(
      all.map(async (p) => {
        const c = await p;
        await endSession(c.client);
        await c.client.close();
      }),
    );
  }

  private connect(decl: McpServerDecl, signal: AbortSignal): Promise<Connection> {
    if (this.closed) return Promise.reject(llmError('mcp_server_failed', `MCP server '${decl.id}': the tool host is closed`, { server: decl.id }, false));
    let p = this.conns.get(decl.id);
    if (!p) {
      // the server is shared by every attempt that names it: its start is bounded by the start timeout and
      // the host's close, never by the attempt that happened to start it (a phase that timed out or was
      // cancelled while the server started would fail every other phase waiting on it)
      const cached: Promise<Connection> = this.start(decl, this.stopping.signal).then((c) => Object.assign(c, { promise: cached }));
      p = cached;
      this.conns.set(decl.id, p);
      // a failed start is not cached: the next attempt tries again
      p.catch(() => {
        if (this.conns.get(decl.id) === p) this.conns.delete(decl.id);
      });
    }
    return untilAborted(p, signal);
  }

  /** `values` with every `${VAR}` from the environment; an unset one fails the start (`what` names the map). */
  private expand(decl: McpServerDecl, what: string, values: Readonly<Record<string, string>>, into: Record<string, string>): Record<string, string> {
    for (const [k, v] of Object.entries(values)) {
      const missing: string[] = [];
      into[k] = v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
        const val = this.o.env[name];
        if (val === undefined) missing.push(name);
        return val ?? '';
      });
      if (missing.length > 0) throw llmError('mcp_server_failed', `MCP server '${decl.id}': ${what} ${k} needs ${missing.map((m) => `$${m}`).join(', ')}, which ${missing.length === 1 ? 'is' : 'are'} not set`, { server: decl.id, missing }, false);
    }
    return into;
  }

  private async start(decl: McpServerDecl, signal: AbortSignal): Promise<Connection> {
    const sdk = await loadSdk(decl.id, decl.url !== undefined);
    const { Client } = sdk;
    let transport: Transport;
    let stderr = '';
    if (decl.url !== undefined && sdk.Http) {
      // a server already listening, over MCP's streamable HTTP: nothing is started, and close() ends its session
      const headers = this.expand(decl, 'header', decl.headers ?? {}, {});
      transport = new sdk.Http(new URL(decl.url), { requestInit: { headers } });
    } else {
      const env = this.expand(decl, 'env', decl.env, { ...sdk.getDefaultEnvironment() });
      const stdio = new sdk.StdioClientTransport({ command: decl.command, args: decl.args, env, cwd: this.o.cwd, stderr: 'pipe' });
      (stdio.stderr as Readable | null)?.on('data', (b: Buffer) => {
        stderr = (stderr + b.toString('utf8')).slice(-STDERR_TAIL);
      });
      transport = stdio;
    }
    const client = new Client({ name: 'baton', version: '0.1.0' });
    const timeout = this.o.startTimeoutMs ?? 15_000;
    try {
      await client.connect(transport, { signal, timeout });
      const tools = new Map<string, Listed>();
      let cursor: string | undefined;
      for (let page = 0; page < 50; page++) {
        const r = await client.listTools(cursor !== undefined ? { cursor } : undefined, { signal, timeout });
        for (const t of r.tools) tools.set(t.name, { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), inputSchema: t.inputSchema });
        cursor = r.nextCursor;
        if (cursor === undefined) break;
      }
      return { client, tools, stderr: () => stderr };
    } catch (e) {
      await client.close().catch(() => undefined);
      const why = e instanceof Error ? e.message : String(e);
      const tail = stderrGist(stderr);
      if (decl.url !== undefined) throw llmError('mcp_server_failed', `MCP server '${decl.id}' (${decl.url}) did not answer initialize: ${why}`, { server: decl.id, url: decl.url }, false);
      throw llmError('mcp_server_failed', `MCP server '${decl.id}' (${[decl.command, ...decl.args].join(' ')}) failed to start: ${why}${tail ? ` (stderr: ${tail})` : ''}`, { server: decl.id, command: decl.command, args: decl.args, stderr }, false);
    }
  }
}

/**
 * An HTTP server's session is ended with a DELETE (the MCP spec: a client that no longer needs a session
 * should say so, else the server holds it until it times out); a server that does not answer within a
 * second, or refuses (405: it keeps sessions its own way), does not hold up the run's end.
 */
async function endSession(client: Client): Promise<void> {
  const t = client.transport as { sessionId?: string; terminateSession?: () => Promise<void> } | undefined;
  if (t?.terminateSession === undefined || t.sessionId === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([t.terminateSession().catch(() => undefined), new Promise<void>((ok) => (timer = setTimeout(ok, 1_000)))]);
  clearTimeout(timer);
}

/** A JSON-RPC error the server answered (a tool's failure, a timeout): the connection itself is fine. */
function isMcpError(e: unknown): boolean {
  return e instanceof Error && e.name === 'McpError';
}

/** `p`, or a rejection as soon as `signal` aborts (`p` goes on for whoever else waits on it). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

const SDK = '@modelcontextprotocol/sdk';

async function loadSdk(server: string, http: boolean): Promise<{ Client: typeof Client } & typeof import('@modelcontextprotocol/sdk/client/stdio.js') & { Http: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport | undefined }> {
  try {
    const [{ Client }, stdio, streamable] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      http ? import('@modelcontextprotocol/sdk/client/streamableHttp.js') : undefined,
    ]);
    return { Client, ...stdio, Http: streamable?.StreamableHTTPClientTransport };
  } catch (e) {
    if (!isMissingPackage(e, SDK)) throw e;
    throw llmError('mcp_server_failed', `MCP server '${server}': MCP tools need the \`${SDK}\` package: npm install ${SDK}`, { server, package: SDK }, false);
  }
}

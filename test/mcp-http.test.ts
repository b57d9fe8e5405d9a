/**
 * MCP servers reached over streamable HTTP (`mcp.servers.<id>.url`), played by the official SDK's
 * server on a loopback port: tools listed and called with the declared headers, a call that never
 * returns, a server that is not there, a server restarted between calls.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, test } from 'vitest';
import { parseWorkflow } from '../src/workflow/compile.js';
import type { McpServerDecl } from '../src/workflow/model.js';
import { McpHost } from '../src/agents/llm/mcp.js';
import { agentFailure as failure } from '../src/agents/llm/testing.js';

interface Loopback {
  url: string;
  /** Authorization headers of every request, in order. */
  auth: (string | undefined)[];
  calls: string[];
  close(): Promise<void>;
}

/** A stateless streamable HTTP MCP server: `echo` answers its arguments, `wait` never returns. */
async function loopback(port = 0): Promise<Loopback> {
  const auth: (string | undefined)[] = [];
  const calls: string[] = [];
  const http: HttpServer = createServer((req: IncomingMessage, res) => {
    auth.push(req.headers.authorization);
    const server = new Server({ name: 'loopback', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        { name: 'echo', description: 'answers its arguments', inputSchema: { type: 'object', properties: { x: { type: 'string' } } } },
        { name: 'wait', description: 'never returns', inputSchema: { type: 'object' } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, (r) => {
      calls.push(r.params.name);
      if (r.params.name === 'wait') return new Promise(() => {});
      return { content: [{ type: 'text', text: `echo ${JSON.stringify(r.params.arguments ?? {})}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    res.on('close', () => void transport.close());
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((ok) => http.listen(port, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    auth,
    calls,
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((ok) => http.close(() => ok()));
    },
  };
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

function host(decl: Partial<McpServerDecl>, env: Record<string, string> = {}, timeouts: { startTimeoutMs?: number; callTimeoutMs?: number } = {}): McpHost {
  const h = new McpHost({ servers: { web: { id: 'web', command: '', args: [], env: {}, allowedTools: undefined, ...decl } }, env, cwd: '.', ...timeouts });
  open.push(h);
  return h;
}

const signal = new AbortController().signal;


describe('an MCP server over streamable HTTP', () => {
  test('lists and calls tools, sending the declared headers with ${VAR} from the environment', async () => {
    const s = await loopback();
    open.push(s);
    const h = host({ url: s.url, headers: { Authorization: 'Bearer ${WEB_TOKEN}' } }, { WEB_TOKEN: 't0k' });
    const r = await h.offer(['mcp:web/echo', 'mcp:web/nope'], signal);
    expect(r.tools.map((t) => [t.name, t.ref])).toEqual([['web__echo', 'mcp:web/echo']]);
    expect(r.skipped.map((x) => x.ref)).toEqual(['mcp:web/nope']);
    expect(await h.call(r.tools[0]!, { x: 'hi' }, signal)).toEqual({ text: 'echo {"x":"hi"}', isError: false });
    expect(s.calls).toEqual(['echo']);
    expect(s.auth.length).toBeGreaterThan(0);
    expect(new Set(s.auth)).toEqual(new Set(['Bearer t0k']));
  });

  test('an unset ${VAR} in headers fails before any request', async () => {
    const s = await loopback();
    open.push(s);
    const e = await failure(host({ url: s.url, headers: { Authorization: 'Bearer ${WEB_TOKEN}' } }).offer(['mcp:web/echo'], signal));
    expect([e.code, e.details['missing']]).toEqual(['mcp_server_failed', ['WEB_TOKEN']]);
    expect(s.auth).toEqual([]);
  });

  test('a server that is not listening is mcp_server_failed naming its URL', async () => {
    const s = await loopback();
    await s.close();
    const e = await failure(host({ url: s.url }, {}, { startTimeoutMs: 2_000 }).offer(['mcp:web/echo'], signal));
    expect(e.code).toBe('mcp_server_failed');
    expect(e.message).toContain(s.url);
  });

  test('a call that never returns ends at the call timeout', async () => {
    const s = await loopback();
    open.push(s);
    const h = host({ url: s.url }, {}, { callTimeoutMs: 300 });
    const { tools } = await h.offer(['mcp:web/wait'], signal);
    const t0 = Date.now();
    const e = await h.call(tools[0]!, {}, signal).then(
      () => undefined,
      (x: unknown) => x as Error,
    );
    expect(e?.message).toMatch(/timed out|timeout/i);
    expect(Date.now() - t0).toBeLessThan(5_000);
  }, 15_000);

  test('a server that went away fails the call in flight; once back, the next call reaches it', async () => {
    const s = await loopback();
    const port = Number(new URL(s.url).port);
    const h = host({ url: s.url });
    const { tools } = await h.offer(['mcp:web/echo'], signal);
    await s.close();
    await expect(h.call(tools[0]!, { x: 'a' }, signal)).rejects.toThrow();
    const again = await loopback(port);
    open.push(again);
    expect(await h.call(tools[0]!, { x: 'b' }, signal)).toEqual({ text: 'echo {"x":"b"}', isError: false });
  });
});

describe('a server that keeps sessions', () => {
  test('the session is ended (DELETE) when the host closes, not left to time out', async () => {
    const deletes: (string | undefined)[] = [];
    const sessions = new Map<string, StreamableHTTPServerTransport>();
    const http = createServer((req, res) => {
      const id = req.headers['mcp-session-id'] as string | undefined;
      if (req.method === 'DELETE') deletes.push(id);
      const known = id !== undefined ? sessions.get(id) : undefined;
      if (known) return void known.handleRequest(req, res);
      const server = new Server({ name: 'sessions', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }));
      server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'ok' }] }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), enableJsonResponse: true, onsessioninitialized: (sid) => void sessions.set(sid, transport) });
      void server.connect(transport).then(() => transport.handleRequest(req, res));
    });
    await new Promise<void>((ok) => http.listen(0, '127.0.0.1', ok));
    open.push({
      close: async () => {
        http.closeAllConnections();
        await new Promise<void>((ok) => http.close(() => ok()));
      },
    });
    const h = new McpHost({ servers: { web: { id: 'web', command: '', args: [], env: {}, allowedTools: undefined, url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` } }, env: {}, cwd: '.' });
    const { tools } = await h.offer(['mcp:web/echo'], signal);
    expect(await h.call(tools[0]!, {}, signal)).toEqual({ text: 'ok', isError: false });
    expect(sessions.size).toBe(1);
    await h.close();
    expect(deletes).toEqual([...sessions.keys()]);
  });
});

describe('mcp.servers: command or url', () => {
  const at = (yaml: string): string[] => {
    const r = parseWorkflow(`openintent: "1.0"\ninfo: {name: m}\nmcp:\n  servers:\n${yaml}workflow:\n  a: {assign: x}\n`);
    return r.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.code} ${d.path.join('.')}`);
  };

  test('a url server is valid and compiles to a declaration with its headers', () => {
    const r = parseWorkflow(`openintent: "1.0"\ninfo: {name: m}\nmcp:\n  servers:\n    web: {url: "http://127.0.0.1:3000/mcp", headers: {Authorization: "Bearer \${T}"}, allowed_tools: [echo]}\nworkflow:\n  a: {assign: x}\n`);
    expect(r.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(r.model!.mcp!.servers['web']).toMatchObject({ url: 'http://127.0.0.1:3000/mcp', headers: { Authorization: 'Bearer ${T}' }, allowedTools: ['echo'] });
  });

  test('neither, both, a url that is not http(s), headers on a stdio server, env on a url server, http with tls_required', () => {
    expect(at('    s: {allowed_tools: [x]}\n')).toEqual(['missing-field mcp.servers.s']);
    expect(at('    s: {command: node, url: "http://127.0.0.1:1/mcp"}\n')).toEqual(['invalid-value mcp.servers.s.url']);
    expect(at('    s: {url: "ws://127.0.0.1:1/mcp"}\n')).toEqual(['invalid-value mcp.servers.s.url']);
    expect(at('    s: {command: node, headers: {A: b}}\n')).toEqual(['invalid-value mcp.servers.s.headers']);
    expect(at('    s: {url: "http://127.0.0.1:1/mcp", env: {A: b}}\n')).toEqual(['invalid-value mcp.servers.s.env']);
    // the corpus's `security.tls_required` holds a url server to https
    expect(at('    s: {url: "http://tools.example/mcp", security: {tls_required: true}}\n')).toEqual(['invalid-value mcp.servers.s.url']);
    expect(at('    s: {url: "https://tools.example/mcp", security: {tls_required: true}}\n')).toEqual([]);
  });
});

/**
 * Providers and MCP servers that misbehave at the transport level, played by real loopback servers
 * and real processes (no mocks): one that accepts the connection and never answers, one that resets
 * it, one that answers HTTP 200 with a body that is not JSON (or JSON of the wrong shape). Each is a
 * retryable `llm_transport_error`, retried a bounded number of times within the attempt, and never
 * holds a run forever.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseWorkflow } from '../../workflow/compile.js';
import { SchemaCompiler } from '../../workflow/json-schema.js';
import type { WorkflowModel } from '../../workflow/model.js';
import { llmAgent } from './agent.js';
import { McpHost, stderrGist } from './mcp.js';
import { DEFAULT_PRICES } from './pricing.js';
import { makeProvider } from './providers.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, DEFAULT_TRANSPORT_RETRIES, resolveSettings } from './settings.js';
import { agentFailure as failure, recordingContext } from './testing.js';

type Behaviour = 'hang' | 'reset' | 'html' | 'wrong-json' | 'good';
let server: Server;
let base = '';
let plan: Behaviour[] = [];
let requests = 0;

const GOOD = {
  id: 'c1',
  object: 'chat.completion',
  created: 1767225600,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: '{"verdict": "pass", "score": 1}' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
};

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      const b = plan.shift() ?? 'hang';
      if (b === 'hang') return; // accepted, never answered
      if (b === 'reset') return void req.socket.destroy();
      if (b === 'html') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return void res.end('<html><body>502 Bad Gateway (but with status 200)</body></html>');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(b === 'wrong-json' ? { hello: 'world' } : GOOD));
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((ok) => server.close(() => ok()));
});

function workflow(extra: string): WorkflowModel {
  const r = parseWorkflow(`openintent: "1.0"\ninfo: {name: t}\nllm:\n  provider: openai-compatible\n  model: m\n  x-base_url: ${base}\n${extra}workflow:\n  judge: {assign: judge, outputs: {verdict: string, score: integer}}\n`);
  if (!r.model) throw new Error(JSON.stringify(r.diagnostics));
  return r.model;
}

function agent(wf: WorkflowModel, sleeps: number[]): ReturnType<typeof llmAgent> {
  const settings = resolveSettings(wf, undefined);
  return llmAgent({
    workflow: wf,
    agentId: 'judge',
    blueprint: undefined,
    settings,
    provider: () => makeProvider(settings, { env: {}, cwd: '.', scripts: new Map() }),
    compiler: new SchemaCompiler(),
    prices: DEFAULT_PRICES,
    // waits Baton chooses (backoff) are injected: the test never sleeps for them
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    now: () => 0,
  });
}


describe('an LLM provider that misbehaves', () => {
  test('defaults: a request timeout and bounded transport retries', () => {
    const s = resolveSettings(workflow(''), undefined);
    expect(s.requestTimeoutMs).toBe(DEFAULT_REQUEST_TIMEOUT_MS);
    expect(s.transportRetries).toBe(DEFAULT_TRANSPORT_RETRIES);
    expect(DEFAULT_REQUEST_TIMEOUT_MS).toBeGreaterThan(0);
    expect(DEFAULT_REQUEST_TIMEOUT_MS).toBeLessThanOrEqual(600_000);
  });

  test.each([
    ['accepts and never answers', 'hang'],
    ['resets the connection', 'reset'],
    ['answers 200 with HTML', 'html'],
    ['answers 200 with JSON of the wrong shape', 'wrong-json'],
  ] as const)('%s: a retryable llm_transport_error after 1 + x-transport_retries calls', async (_, b) => {
    plan = [b, b, b];
    requests = 0;
    const sleeps: number[] = [];
    const t0 = Date.now();
    const e = await failure(Promise.resolve(agent(workflow('  x-request_timeout_ms: 300\n  x-transport_retries: 2\n'), sleeps)(recordingContext({ phase: 'judge', agent: 'judge' }))));
    expect([e.code, e.retryable]).toEqual(['llm_transport_error', true]);
    expect(requests).toBe(3);
    expect(sleeps).toEqual([1000, 2000]);
    if (b === 'hang') expect(e.message).toMatch(/did not answer within 300 ms/);
    expect(Date.now() - t0).toBeLessThan(5_000);
  }, 15_000);

  test('a transport failure followed by a good answer succeeds within the attempt', async () => {
    for (const b of ['hang', 'reset', 'html', 'wrong-json'] as const) {
      plan = [b, 'good'];
      requests = 0;
      const ctx = recordingContext({ phase: 'judge', agent: 'judge' });
      expect(await agent(workflow('  x-request_timeout_ms: 300\n'), [])(ctx)).toEqual({ verdict: 'pass', score: 1 });
      expect(requests).toBe(2);
      expect(ctx.events.map((r) => r.kind)).toContain('transport_retry');
    }
  }, 15_000);

  test('x-transport_retries: 0 fails at the first transport failure', async () => {
    plan = ['html'];
    requests = 0;
    const e = await failure(Promise.resolve(agent(workflow('  x-transport_retries: 0\n'), [])(recordingContext({ phase: 'judge', agent: 'judge' }))));
    expect(e.code).toBe('llm_transport_error');
    expect(requests).toBe(1);
  });
});

const fixtures = join(import.meta.dirname, '..', '..', '..', 'test', 'fixtures', 'mcp');

function mcpHost(mode: string, timeouts: { startTimeoutMs?: number; callTimeoutMs?: number }): McpHost {
  return new McpHost({ servers: { s: { id: 's', command: process.execPath, args: [join(fixtures, 'hang-server.mjs'), mode], env: {}, allowedTools: undefined } }, env: {}, cwd: fixtures, ...timeouts });
}

describe('an MCP server that misbehaves', () => {
  const signal = new AbortController().signal;

  test.each(['silent', 'garbage'])('%s at start: mcp_server_failed within the start timeout', async (mode) => {
    const h = mcpHost(mode, { startTimeoutMs: 500 });
    const t0 = Date.now();
    const e = await failure(h.offer(['mcp:s/wait'], signal));
    expect(e.code).toBe('mcp_server_failed');
    expect(Date.now() - t0).toBeLessThan(5_000);
    await h.close();
  }, 15_000);

  test('a tool call that never returns ends at the call timeout', async () => {
    const h = mcpHost('stuck', { callTimeoutMs: 300 });
    const { tools } = await h.offer(['mcp:s/wait'], signal);
    expect(tools).toHaveLength(1);
    const t0 = Date.now();
    const e = await h.call(tools[0]!, {}, signal).then(
      () => undefined,
      (x: unknown) => x as Error,
    );
    expect(e?.message).toMatch(/timed out|timeout/i);
    expect(Date.now() - t0).toBeLessThan(5_000);
    await h.close();
  }, 15_000);

  test('a server that dies at start is reported with the line that names the error, not the last lines', async () => {
    const h = mcpHost('missing', {});
    const e = await failure(h.offer(['mcp:s/wait'], signal));
    expect(e.code).toBe('mcp_server_failed');
    expect(e.message).toMatch(/Cannot find module/);
    expect(e.message).not.toMatch(/Node\.js v\d/);
    await h.close();
  }, 15_000);

  test('stderrGist keeps the telling lines', () => {
    expect(stderrGist('node:internal/x\n  throw err;\n  ^\n\nError: Cannot find module \'x\'\n    at f (a.js:1:1)\n{\n  code: \'MODULE_NOT_FOUND\'\n}\n\nNode.js v20.20.2\n')).toBe("Error: Cannot find module 'x'");
    expect(stderrGist('starting\nlistening on 3\n')).toBe('starting | listening on 3');
  });
});

/**
 * `baton run` against a provider that accepts the connection and never answers, one that answers
 * garbage, and an MCP server that never answers: the run ends (failed, with a transport code), within
 * the configured timeouts, instead of waiting forever. Loopback servers and real processes only.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';

const STACK = /\n\s+at .+:\d+:\d+/;
let server: Server;
let base = '';
let mode: 'hang' | 'garbage' = 'hang';
let requests = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      if (mode === 'hang') return;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"choices": [ this is not JSON');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((ok) => server.close(() => ok()));
});

function capture(cwd: string, env: Record<string, string> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: { USER: 'tester', ...env }, out: () => out, err: () => err };
}

function project(llm: string, extra = ''): string {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-prov-'));
  const tools = extra === '' ? '' : ', tools: [mcp:s/wait]';
  writeFileSync(join(cwd, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "Hung"}\nllm:\n  provider: openai-compatible\n  model: m\n  x-base_url: ${base}\n${llm}${extra}agents:\n  judge: {system_prompt: "judge"${tools}}\nworkflow:\n  judge: {assign: judge, outputs: {verdict: string, score: integer}}\n`);
  return cwd;
}

describe('baton run with a provider that misbehaves', () => {
  it.each(['hang', 'garbage'] as const)('%s: the run fails with llm_transport_error after bounded retries (exit 1)', async (m) => {
    mode = m;
    requests = 0;
    const cwd = project('  x-request_timeout_ms: 400\n  x-transport_retries: 1\n');
    const io = capture(cwd);
    const t0 = Date.now();
    expect(await run(['run', 'wf.yaml', '--store', 'memory', '--json', '-q'], io), io.err()).toBe(1);
    const r = JSON.parse(io.out()) as { status: string; phases: { judge: { status: string; error: { code: string; retryable: boolean } } } };
    expect(r.status).toBe('failed');
    expect(r.phases.judge.error).toMatchObject({ code: 'llm_transport_error', retryable: true });
    expect(requests).toBe(2);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(io.err()).not.toMatch(STACK);
  }, 20_000);
});

describe('baton run with an MCP server that never answers', () => {
  it('the attempt fails with mcp_server_failed within BATON_MCP_START_TIMEOUT_MS', async () => {
    const fixtures = join(import.meta.dirname, '..', 'fixtures', 'mcp');
    const cwd = project('', `mcp:\n  servers:\n    s: {command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(join(fixtures, 'hang-server.mjs'))}, silent]}\n`);
    const io = capture(cwd, { BATON_MCP_START_TIMEOUT_MS: '500' });
    const t0 = Date.now();
    expect(await run(['run', 'wf.yaml', '--store', 'memory', '--json', '-q'], io), io.err()).toBe(1);
    const r = JSON.parse(io.out()) as { phases: { judge: { error: { code: string } } } };
    expect(r.phases.judge.error.code).toBe('mcp_server_failed');
    expect(Date.now() - t0).toBeLessThan(10_000);
  }, 20_000);
});

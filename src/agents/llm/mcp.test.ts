/** MCP tools against a tiny MCP server of the test suite (test/fixtures/mcp/files-server.mjs), over stdio. */
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { AgentError } from '../../engine/agent.js';
import { parseWorkflow } from '../../workflow/compile.js';
import { SchemaCompiler } from '../../workflow/json-schema.js';
import type { McpServerDecl } from '../../workflow/model.js';
import { llmAgent } from './agent.js';
import { McpHost } from './mcp.js';
import { DEFAULT_PRICES } from './pricing.js';
import { parseScript, scriptedProvider } from './scripted.js';
import { resolveSettings } from './settings.js';
import { recordingContext } from './testing.js';

const dir = join(import.meta.dirname, '..', '..', '..', 'test', 'fixtures', 'mcp');
const hosts: McpHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

function server(over: Partial<McpServerDecl> = {}): McpServerDecl {
  return { id: 'files', command: process.execPath, args: [join(dir, 'files-server.mjs'), dir], env: { BATON_MCP_LOG: '${LOG}' }, allowedTools: ['read_file'], ...over };
}

function host(env: Record<string, string | undefined>, over: Partial<McpServerDecl> = {}): McpHost {
  const h = new McpHost({ servers: { files: server(over) }, env, cwd: dir });
  hosts.push(h);
  return h;
}

function logFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'baton-mcp-')), 'calls.jsonl');
}

const signal = new AbortController().signal;

describe('McpHost', () => {
  test('offers only tools that are declared, allowed and listed; calls them', async () => {
    const log = logFile();
    const h = host({ LOG: log });
    const r = await h.offer(['mcp:files/read_file', 'mcp:files/write_file', 'mcp:files/delete_all', 'mcp:other/x'], signal);
    expect(r.tools.map((t) => [t.name, t.ref])).toEqual([['files__read_file', 'mcp:files/read_file']]);
    expect(r.tools[0]!.inputSchema).toMatchObject({ type: 'object', required: ['path'] });
    expect(r.skipped.map((s) => s.ref)).toEqual(['mcp:files/write_file', 'mcp:files/delete_all', 'mcp:other/x']);
    const res = await h.call(r.tools[0]!, { path: 'sample.ts' }, signal);
    expect(res).toEqual({ text: readFileSync(join(dir, 'sample.ts'), 'utf8'), isError: false });
    // a forged tool that was never offered is refused without reaching the server
    const forged = await h.call({ name: 'files__write_file', ref: 'mcp:files/write_file', inputSchema: {} }, { path: 'x', text: 'y' }, signal);
    expect(forged.isError).toBe(true);
    expect(readFileSync(log, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { name: string }).name)).toEqual(['read_file']);
  });

  test('a server that fails to start fails the attempt clearly (with its stderr); the next attempt tries again', async () => {
    const h = host({ LOG: logFile() }, { env: { BATON_MCP_FAIL: '1' } });
    const e = await h.offer(['mcp:files/read_file'], signal).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(AgentError);
    expect((e as AgentError).code).toBe('mcp_server_failed');
    expect((e as AgentError).message).toContain('refusing to start');
  });

  test('a missing ${VAR} in env fails before starting anything', async () => {
    const e = await host({}).offer(['mcp:files/read_file'], signal).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect((e as AgentError).code).toBe('mcp_server_failed');
    expect((e as AgentError).message).toContain('$LOG');
  });

  test('a command that does not exist', async () => {
    const e = await host({ LOG: logFile() }, { command: join(dir, 'no-such-binary') }).offer(['mcp:files/read_file'], signal).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect((e as AgentError).code).toBe('mcp_server_failed');
  });
});

describe('a server shared by attempts', () => {
  test('an attempt aborted while the server starts does not fail the others waiting on it', async () => {
    const log = logFile();
    const h = host({ LOG: log }, { env: { BATON_MCP_LOG: '${LOG}', BATON_MCP_START_DELAY_MS: '400' } });
    const early = new AbortController();
    const aborted = h.offer(['mcp:files/read_file'], early.signal).then(
      () => undefined,
      (x: unknown) => x,
    );
    const waiting = h.offer(['mcp:files/read_file'], signal);
    // the first attempt times out (or is cancelled) while the server is still starting
    setTimeout(() => early.abort(new Error('the attempt timed out')), 50);
    expect(await aborted).toBeInstanceOf(Error);
    const r = await waiting;
    expect(r.tools.map((t) => t.ref)).toEqual(['mcp:files/read_file']);
    expect((await h.call(r.tools[0]!, { path: 'sample.ts' }, signal)).isError).toBe(false);
  });

  test('close() stops a server that is still starting, without waiting out its start', async () => {
    const h = host({ LOG: logFile() }, { env: { BATON_MCP_LOG: '${LOG}', BATON_MCP_START_DELAY_MS: '5000' } });
    const pending = h.offer(['mcp:files/read_file'], signal).then(
      () => undefined,
      (x: unknown) => x,
    );
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await h.close();
    expect(Date.now() - started).toBeLessThan(3000);
    expect(((await pending) as AgentError).code).toBe('mcp_server_failed');
  });
});

describe('a server that exits between calls', () => {
  test('is started again on the next call, which does not fail with "Not connected"', async () => {
    const h = new McpHost({ servers: { p: { id: 'p', command: process.execPath, args: [join(dir, 'hang-server.mjs'), 'pid'], env: {}, allowedTools: undefined } }, env: {}, cwd: dir });
    hosts.push(h);
    const { tools } = await h.offer(['mcp:p/pid'], signal);
    const first = await h.call(tools[0]!, {}, signal);
    expect(first.isError).toBe(false);
    process.kill(Number(first.text), 'SIGKILL');
    // until the client has seen the process close (what a server that crashed a while ago looks like)
    const conns = (h as unknown as { conns: Map<string, Promise<{ client: { transport: unknown } }>> }).conns;
    await vi.waitFor(async () => expect((await conns.get('p'))?.client.transport).toBeUndefined(), { timeout: 10_000, interval: 20 });
    const second = await h.call(tools[0]!, {}, signal);
    expect(second.isError).toBe(false);
    expect(second.text).not.toBe(first.text);
  });
});

describe('tool names the model sees', () => {
  test('two references that clean to the same name (a.b and a_b) are offered under distinct names, each calling its own server', async () => {
    const decl = (id: string): McpServerDecl => ({ id, command: process.execPath, args: [join(dir, 'hang-server.mjs'), 'pid'], env: {}, allowedTools: undefined });
    const h = new McpHost({ servers: { 'a.b': decl('a.b'), a_b: decl('a_b') }, env: {}, cwd: dir });
    hosts.push(h);
    const { tools } = await h.offer(['mcp:a.b/pid', 'mcp:a_b/pid'], signal);
    expect(tools.map((t) => t.ref)).toEqual(['mcp:a.b/pid', 'mcp:a_b/pid']);
    expect(new Set(tools.map((t) => t.name)).size).toBe(2);
    const [x, y] = await Promise.all(tools.map((t) => h.call(t, {}, signal)));
    expect(x!.text).not.toBe(y!.text);
  });
});

describe('an LLM agent with MCP tools', () => {
  test('the model reads a file through the tool, a disallowed tool is never called, and the answer is enforced', async () => {
    const log = logFile();
    const r = parseWorkflow(`
openintent: "1.0"
info: {name: tools}
workflow:
  inspect:
    assign: inspector
    outputs: {bug: boolean, line: integer}
`);
    const wf = r.model!;
    const s = parseScript({
      phases: {
        inspect: [
          { tool_calls: [{ tool: 'mcp:files/read_file', arguments: { path: 'sample.ts' } }, { tool: 'mcp:files/write_file', arguments: { path: 'sample.ts', text: '' } }] },
          '{"bug": true, "line": 2}',
        ],
      },
    });
    if (!s.ok) throw new Error(s.message);
    const provider = scriptedProvider(s.script);
    const h = host({ LOG: log });
    const handler = llmAgent({
      workflow: wf,
      agentId: 'inspector',
      blueprint: undefined,
      settings: resolveSettings(wf, undefined),
      provider,
      compiler: new SchemaCompiler(),
      prices: DEFAULT_PRICES,
      tools: ['mcp:files/read_file', 'mcp:files/write_file'],
      toolHost: h,
      sleep: () => Promise.resolve(),
      now: () => 0,
    });
    const c = recordingContext({ phase: 'inspect', agent: 'inspector' });
    expect(await handler(c)).toEqual({ bug: true, line: 2 });
    expect(provider.model.calls[0]!.tools!.map((t) => t.name)).toEqual(['files__read_file']);
    const toolMsg = provider.model.calls[1]!.prompt.find((m) => m.role === 'tool')!;
    expect(JSON.stringify(toolMsg.content)).toContain('return a - b');
    const call = c.events.find((e) => e.kind === 'tool_call')!.data;
    expect(call).toMatchObject({ tool: 'mcp:files/read_file', arguments: { path: 'sample.ts' }, is_error: false });
    expect(call['result_bytes']).toBe(readFileSync(join(dir, 'sample.ts')).length);
    expect(typeof call['duration_ms']).toBe('number');
    expect(c.events.filter((e) => e.kind === 'tool_call_refused').map((e) => e.data['tool'])).toEqual(['files__write_file']);
    expect(existsSync(log) && readFileSync(log, 'utf8')).not.toContain('write_file');
  });
});

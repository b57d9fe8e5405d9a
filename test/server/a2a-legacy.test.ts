/**
 * `x-a2a` agents that speak A2A v0.3, as most agents deployed before v1.0 do (a v0.3 card, v0.3
 * JSON-RPC only: `message/send`, `tasks/cancel`, kind-tagged parts). The peer is built from
 * `@a2a-js/sdk`'s own v0.3 handler (test/helpers/a2a-peer.ts, `legacy: true`) on a loopback port.
 * Baton reads the card's version and speaks v0.3 to it: runs, input gates, cancelling, `baton check`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { WorkflowSpec, type RunEvent } from '@baton-run/baton';
import type { CliIo } from '../../src/cli/io.js';
import { run as cli } from '../../src/cli/main.js';
import { startA2aPeer, type A2aPeer, type PeerOptions } from '../helpers/a2a-peer.js';
import { a2aFlow, engineRig, type EngineRig } from '../helpers/a2a-rig.js';

const flow = a2aFlow;

let dir: string;
const open: (() => Promise<void>)[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'baton-a2a-v03-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  for (const f of open.splice(0).reverse()) await f();
});

async function peer(opts: PeerOptions = {}): Promise<A2aPeer & { methods: string[] }> {
  const methods: string[] = [];
  const p = await startA2aPeer({ ...opts, legacy: true, methods });
  open.push(() => p.close());
  return Object.assign(p, { methods });
}

const rig = (): Promise<EngineRig> => engineRig({ dir, cleanup: open });

describe('an x-a2a agent that speaks A2A v0.3', () => {
  for (const streaming of [true, false]) {
    test(`completes a phase over v0.3 JSON-RPC (${streaming ? 'message/stream' : 'message/send'})`, async () => {
      const p = await peer({ streaming });
      const r = await rig();
      const result = await r.engine.run(WorkflowSpec.fromString(flow(p.url, { skill: 'answer', streaming })), { trigger: { question: 'why', mode: 'plain' } });
      expect(result.status).toBe('completed');
      expect(result.phases['ask']!.output).toEqual({ answer: 'why!' });
      // v0.3's method names only (a blocking send returns the task at once, then polls it: tasks/get)
      expect(p.methods[0]).toBe(streaming ? 'message/stream' : 'message/send');
      for (const m of p.methods) expect(m).toMatch(/^(message|tasks)\//);
      // the phase's input reached the agent as a data part, the skill in the message's metadata
      expect(p.received[0]!.parts[0]!.content).toEqual({ $case: 'data', value: { question: 'why', mode: 'plain' } });
      expect(p.received[0]!.metadata).toEqual({ skill: 'answer' });
    });
  }

  test('input-required becomes an input gate; the answer continues the same v0.3 task', async () => {
    const p = await peer();
    const r = await rig();
    const run = await r.engine.start(WorkflowSpec.fromString(flow(p.url)), { trigger: { question: 'q', mode: 'ask' } });
    const opened = (await r.waitFor('gate.opened')) as Extract<RunEvent, { type: 'gate.opened' }>;
    expect(opened).toMatchObject({ kind: 'input', question: 'which colour?' });
    await r.engine.respond(run.id, opened.gate_id, 'blue', 'tester');
    const result = await run.result();
    expect(result.status).toBe('completed');
    expect(result.phases['ask']!.output).toEqual({ answer: 'told "blue"' });
    expect(p.received).toHaveLength(2);
    expect(p.received[1]!.taskId).toBe(p.received[0]!.taskId);
  });

  test('cancelling the run cancels the v0.3 task (tasks/cancel)', async () => {
    const p = await peer();
    const r = await rig();
    const run = await r.engine.start(WorkflowSpec.fromString(flow(p.url)), { trigger: { question: 'q', mode: 'hang' } });
    const taskId = await p.hanging;
    await r.waitFor('task.agent_event');
    await run.cancel('enough');
    expect((await run.result()).status).toBe('cancelled');
    await expect.poll(() => p.cancelled, { timeout: 10_000 }).toContain(taskId);
    expect(p.methods).toContain('tasks/cancel');
  });

  test('a v0.3 agent behind a bearer token gets the token from token_env', async () => {
    const p = await peer({ token: 's3cret' });
    const r = await rig();
    process.env['BATON_TEST_A2A_V03_TOKEN'] = 's3cret';
    try {
      const result = await r.engine.run(WorkflowSpec.fromString(flow(p.url, { tokenEnv: 'BATON_TEST_A2A_V03_TOKEN' })), { trigger: { question: 'who', mode: 'plain' } });
      expect(result.status).toBe('completed');
      expect(result.phases['ask']!.output).toEqual({ answer: 'who!' });
      expect(p.refused).toBe(0);
    } finally {
      delete process.env['BATON_TEST_A2A_V03_TOKEN'];
    }
  });
});

describe('baton check reads a v0.3 agent card', () => {
  async function check(text: string): Promise<{ code: string; severity: string }[]> {
    const file = join(dir, `${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, text);
    let out = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: () => undefined, isTTY: false, cwd: dir, env: {} };
    await cli(['check', file, '--json'], io);
    return (JSON.parse(out) as { diagnostics: { code: string; severity: string }[] }).diagnostics.filter((d) => d.code.startsWith('a2a-'));
  }

  test('its skills and modes are checked as a v1.0 card\'s are', async () => {
    const p = await peer({ skills: [{ id: 'answer' }, { id: 'images', inputModes: ['image/png'] }] });
    expect(await check(flow(p.url, { skill: 'answer' }))).toEqual([]);
    expect(await check(flow(p.url, { skill: 'anser' }))).toEqual([expect.objectContaining({ code: 'a2a-unknown-skill', severity: 'error' })]);
    expect(await check(flow(p.url, { skill: 'images' }))).toEqual([expect.objectContaining({ code: 'a2a-mode-mismatch', severity: 'error' })]);
  });

  test('a v1.0 card in protobuf JSON, its empty lists left out, is read (it crashed the check)', async () => {
    // as another implementation serves it: a skill with no modes of its own, no default modes
    const card = { name: 'terse', description: 'd', version: '1', supportedInterfaces: [{ url: 'http://127.0.0.1:9/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }], capabilities: {}, skills: [{ id: 'answer', name: 'answer', description: 'a' }] };
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    open.push(() => new Promise<void>((r) => server.close(() => r())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect(await check(flow(url, { skill: 'answer' }))).toEqual([]);
    expect(await check(flow(url, { skill: 'other' }))).toEqual([expect.objectContaining({ code: 'a2a-unknown-skill' })]);
  });
});

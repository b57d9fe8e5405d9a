/**
 * A2A through the CLI, as real processes: `baton run` with an `x-a2a` agent whose input-required
 * is answered by `baton respond` (from another "terminal"), and `baton serve --a2a` called by the
 * SDK's client.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';
import { baton, batonRun, until } from '../helpers/spawn.js';
import { startA2aPeer, type A2aPeer } from '../helpers/a2a-peer.js';
import { KEYS, KEYS_ENV } from './harness.js';

let dir: string;
let peer: A2aPeer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-a2a-cli-'));
  peer = await startA2aPeer();
});
afterAll(async () => {
  await peer.close();
  rmSync(dir, { recursive: true, force: true });
});

function capture(): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd: dir, env: {}, out: () => out, err: () => err };
}

describe('A2A through the CLI', () => {
  test('baton run: an x-a2a agent asks (input-required); `baton respond` answers; the same A2A task completes', async () => {
    writeFileSync(
      join(dir, 'asks.yaml'),
      `openintent: "1.0"
info: {name: asks}
agents:
  peer:
    x-a2a: {url: "${peer.url}", skill: answer}
x-trigger: {mode: string}
workflow:
  ask:
    assign: peer
    inputs: {mode: $trigger.mode}
    outputs: {answer: string}
`,
    );
    writeFileSync(join(dir, 'trigger.json'), JSON.stringify({ mode: 'ask' }));
    const first = baton(['run', 'asks.yaml', '--trigger', '@trigger.json', '--run-id', 'a2a1', '--store', 'runs.db'], { cwd: dir });
    let stderr = '';
    first.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      await until(() => /baton respond a2a1 (\S+)/.test(stderr), 30_000).catch((e: unknown) => {
        throw new Error(`${String(e)}\n${stderr}`);
      });
      const gate = /baton respond a2a1 (\S+)/.exec(stderr)![1]!;
      expect(await run(['respond', 'a2a1', gate, '--value', '"blue"', '--store', 'runs.db'], capture())).toBe(0);
      expect((await first.done).code).toBe(0);
      const shown = capture();
      expect(await run(['show', 'a2a1', '--store', 'runs.db', '--json'], shown)).toBe(0);
      expect((JSON.parse(shown.out()) as { phases: Record<string, { output: unknown }> }).phases['ask']!.output).toEqual({ answer: 'told "blue"' });
      // the answer went to the peer as a follow-up on the task it opened
      expect(peer.received).toHaveLength(2);
      const [opening, followUp] = peer.received;
      expect(followUp!.taskId).toBe(opening!.taskId);
      expect(followUp!.parts[0]?.content).toEqual({ $case: 'text', value: 'blue' });
    } finally {
      first.kill('SIGKILL');
    }
  }, 60_000);

  test('baton serve --a2a: the SDK client fetches the card and runs a workflow; --a2a without --workflows is a usage error', async () => {
    writeFileSync(join(dir, 'hello.yaml'), `openintent: "1.0"\ninfo: {name: hello}\nworkflow:\n  greet: {assign: greeter, outputs: {n: number}}\n`);
    const server = baton(['serve', '--port', '0', '--store', 'served.db', '--stub-agents', '--workflows', '.', '--a2a'], { cwd: dir, env: { BATON_API_KEYS: KEYS_ENV } });
    let stderr = '';
    server.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      await until(() => /listening on (http:\/\/\S+)/.test(stderr) && /\nworker \S+: /.test(stderr), 30_000);
      const url = /listening on (http:\/\/\S+)/.exec(stderr)![1]!;
      expect(stderr).toMatch(/A2A: agent card at http:\S+\/\.well-known\/agent-card\.json, JSON-RPC at http:\S+\/a2a/);
      const f: typeof fetch = (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${KEYS.operator}`);
        return fetch(input, { ...init, headers });
      };
      const client = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: f })], cardResolver: new DefaultAgentCardResolver({ fetchImpl: f }) })).createFromUrl(url);
      expect((await client.getAgentCard()).skills.map((s) => s.id)).toContain('hello');
      const message: Message = { messageId: 'm1', contextId: '', taskId: '', role: Role.ROLE_USER, parts: [{ content: { $case: 'data', value: {} }, metadata: undefined, filename: '', mediaType: 'application/json' }], metadata: { skill: 'hello' }, extensions: [], referenceTaskIds: [] };
      const t = (await client.sendMessage({ tenant: '', message, configuration: undefined, metadata: undefined })) as Task;
      expect(t.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(t.artifacts[0]!.parts[0]!.content?.$case).toBe('data');
      server.kill('SIGTERM');
      expect((await server.done).code).toBe(0);
    } finally {
      server.kill('SIGKILL');
    }
    const refused = await batonRun(['serve', '--port', '0', '--store', 'memory', '--a2a'], { cwd: dir, env: { BATON_API_KEYS: '' } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--a2a publishes the registered workflows/);
  }, 60_000);
});

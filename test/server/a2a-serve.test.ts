/**
 * A Baton workflow called as an A2A agent: `baton serve --a2a` (startServer with the SDK's modules)
 * over a real SQLite store, called by `@a2a-js/sdk`'s own client on a loopback port.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Role, TaskState, type Message, type Part, type StreamResponse, type Task } from '@a2a-js/sdk';
import { createEngine, openStore, WorkflowSpec, type Engine } from '@baton-run/baton';
import { loadA2aServer, parseKeysEnv, scanWorkflows, startServer, type BatonServer } from '@baton-run/baton/server';
import { agents, GATED, HELLO, KEYS, KEYS_ENV, openTestStore, startA2aServe, type A2aServe } from './harness.js';

let dir: string;
let engine: Engine;
let server: BatonServer;

const auth = (key: string): typeof fetch => (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${key}`);
  return fetch(input, { ...init, headers });
};

async function client(key: string = KEYS.operator): Promise<Awaited<ReturnType<ClientFactory['createFromUrl']>>> {
  const f = auth(key);
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: f })], cardResolver: new DefaultAgentCardResolver({ fetchImpl: f }) }));
  return factory.createFromUrl(server.url);
}

const data = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });
const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const msg = (parts: Part[], o: { taskId?: string; contextId?: string; skill?: string } = {}): Message => ({ messageId: crypto.randomUUID(), contextId: o.contextId ?? '', taskId: o.taskId ?? '', role: Role.ROLE_USER, parts, metadata: o.skill ? { skill: o.skill } : undefined, extensions: [], referenceTaskIds: [] });
const send = (m: Message, returnImmediately = false) => ({ tenant: '', message: m, configuration: { acceptedOutputModes: ['application/json'], taskPushNotificationConfig: undefined, returnImmediately }, metadata: undefined });

function asTask(r: Message | Task): Task {
  if ('messageId' in r) throw new Error('expected a task, got a message');
  return r;
}

let rig: A2aServe;
beforeAll(async () => {
  rig = await startA2aServe('baton-a2a-serve-', { 'gated.yaml': GATED });
  ({ dir, engine, server } = rig);
});

afterAll(() => rig.close());

describe('a Baton workflow called as an A2A agent', () => {
  test('the agent card: one skill per registered workflow, JSON data parts, a bearer scheme, streaming', async () => {
    const c = await client();
    const card = await c.getAgentCard();
    expect(card.skills.map((s) => s.id).sort()).toEqual(['ask', 'gated', 'hello', 'slow']);
    expect(card.skills[0]!.inputModes).toContain('application/json');
    expect(card.defaultOutputModes).toContain('application/json');
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.supportedInterfaces[0]).toMatchObject({ url: `${server.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    expect(Object.keys(card.securitySchemes)).toEqual(['bearer']);
    // the card is public (discovery); the endpoint is not
    expect((await fetch(`${server.url}/.well-known/agent-card.json`)).status).toBe(200);
    const anon = await fetch(`${server.url}/a2a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }) });
    expect(anon.status).toBe(401);
  });

  test('the card follows the workflows folder: a workflow added after the start is a skill, one removed is not', async () => {
    const skills = async (): Promise<string[]> => (await (await client()).getAgentCard()).skills.map((s) => s.id).sort();
    writeFileSync(join(dir, 'flows', 'later.yaml'), HELLO);
    try {
      expect(await skills()).toEqual(['ask', 'gated', 'hello', 'later', 'slow']);
    } finally {
      rmSync(join(dir, 'flows', 'later.yaml'));
    }
    expect(await skills()).toEqual(['ask', 'gated', 'hello', 'slow']);
  });

  test('/openapi.json documents the A2A routes the app answers: the card (public) and the JSON-RPC endpoint', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { operationId: string; security?: unknown[]; responses: Record<string, { content?: Record<string, unknown> }> }>> };
    expect(doc.paths['/.well-known/agent-card.json']?.['get']).toMatchObject({ operationId: 'a2aAgentCard', security: [] });
    const rpc = doc.paths['/a2a']?.['post'];
    expect(rpc?.operationId).toBe('a2a');
    expect(Object.keys(rpc!.responses).sort()).toEqual(['200', '204', '401', '403', '413']);
    expect(Object.keys(rpc!.responses['200']!.content!).sort()).toEqual(['application/json', 'text/event-stream']);
  });

  test('SendMessage runs the workflow to completion; its output is a data-part artifact; GetTask reads the run', async () => {
    const c = await client();
    const t = asTask(await c.sendMessage(send(msg([data({ name: 'ada' })], { skill: 'hello' }))));
    expect(t.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(t.artifacts[0]!.parts[0]!.content).toEqual({ $case: 'data', value: { greeting: 'hello ada' } });
    expect(t.metadata).toMatchObject({ workflow: 'hello', run_id: t.id, run_status: 'completed' });
    const again = await c.getTask({ tenant: '', id: t.id, historyLength: undefined });
    expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // the task is the run: the HTTP API has it too
    expect((await engine.store.run(t.id))?.status).toBe('completed');
  });

  test('an input gate is input-required; a follow-up message on the task answers it', async () => {
    const c = await client();
    const t = asTask(await c.sendMessage(send(msg([data({})], { skill: 'ask' }))));
    expect(t.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const said = t.status!.message!.parts;
    expect(said[0]!.content).toEqual({ $case: 'text', value: 'which colour?' });
    expect(said[1]!.content).toMatchObject({ $case: 'data', value: { kind: 'input', choices: ['red', 'blue'] } });
    const done = asTask(await c.sendMessage(send(msg([text('blue')], { taskId: t.id, contextId: t.contextId }))));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(done.id).toBe(t.id);
    expect(done.artifacts[0]!.parts[0]!.content).toEqual({ $case: 'data', value: { answer: 'blue' } });
    // the task's history: the trigger sent, the question asked, the answer given (the same on every read)
    const read = await c.getTask({ tenant: '', id: t.id, historyLength: undefined });
    expect(read.history.map((m) => [m.role, m.parts[0]!.content])).toEqual([
      [Role.ROLE_USER, { $case: 'data', value: {} }],
      [Role.ROLE_AGENT, { $case: 'text', value: 'which colour?' }],
      [Role.ROLE_USER, { $case: 'text', value: 'blue' }],
    ]);
    expect((await c.getTask({ tenant: '', id: t.id, historyLength: undefined })).history.map((m) => m.messageId)).toEqual(read.history.map((m) => m.messageId));
    expect((await c.getTask({ tenant: '', id: t.id, historyLength: 1 })).history.map((m) => m.parts[0]!.content)).toEqual([{ $case: 'text', value: 'blue' }]);
  });

  test('an answer the gate refuses is an error, and the gate stays open', async () => {
    const c = await client();
    const t = asTask(await c.sendMessage(send(msg([data({})], { skill: 'ask' }))));
    await expect(c.sendMessage(send(msg([text('green')], { taskId: t.id, contextId: t.contextId })))).rejects.toThrow(/gate/);
    const still = await c.getTask({ tenant: '', id: t.id, historyLength: undefined });
    expect(still.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await engine.cancel(t.id);
  });

  test('an approval gate is input-required too: only a named approver\'s key may answer `approve`', async () => {
    const bob = await client(KEYS.operator);
    const t = asTask(await bob.sendMessage(send(msg([data({})], { skill: 'gated' }))));
    expect(t.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(t.status!.message!.parts[1]!.content).toMatchObject({ $case: 'data', value: { kind: 'run' } });
    await expect(bob.sendMessage(send(msg([text('approve')], { taskId: t.id, contextId: t.contextId })))).rejects.toThrow(/not an approver/);
    const alice = await client(KEYS.alice);
    await expect(alice.sendMessage(send(msg([text('perhaps')], { taskId: t.id, contextId: t.contextId })))).rejects.toThrow(/approve.*deny/);
    const done = asTask(await alice.sendMessage(send(msg([text('approve')], { taskId: t.id, contextId: t.contextId }))));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(done.artifacts[0]!.parts[0]!.content).toMatchObject({ $case: 'data', value: { m: expect.any(String) as unknown } });
  });

  test('CancelTask cancels the run', async () => {
    const c = await client();
    const t = asTask(await c.sendMessage(send(msg([data({})], { skill: 'slow' }), true)));
    expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    const cancelled = await c.cancelTask({ tenant: '', id: t.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await engine.store.run(t.id))?.status).toBe('cancelled');
    await expect(c.cancelTask({ tenant: '', id: t.id, metadata: undefined })).rejects.toThrow(/ended/);
  });

  test('SendStreamingMessage streams the task, status updates and the outputs artifact', async () => {
    const c = await client();
    const seen: StreamResponse['payload'][] = [];
    for await (const ev of c.sendMessageStream(send(msg([data({ name: 'bo' })], { skill: 'hello' })))) seen.push(ev.payload);
    expect(seen[0]?.$case).toBe('task');
    const states = seen.flatMap((p) => (p?.$case === 'statusUpdate' ? [p.value.status?.state] : []));
    expect(states[states.length - 1]).toBe(TaskState.TASK_STATE_COMPLETED);
    const art = seen.find((p) => p?.$case === 'artifactUpdate');
    expect(art?.$case === 'artifactUpdate' && art.value.artifact?.parts[0]?.content).toEqual({ $case: 'data', value: { greeting: 'hello bo' } });
  });

  test('SubscribeToTask follows a running task to its end', async () => {
    const c = await client();
    const t = asTask(await c.sendMessage(send(msg([data({})], { skill: 'slow' }), true)));
    const states: number[] = [];
    const following = (async () => {
      for await (const ev of c.resubscribeTask({ tenant: '', id: t.id })) if (ev.payload?.$case === 'statusUpdate') states.push(ev.payload.value.status!.state);
    })();
    await expect.poll(() => states.length).toBeGreaterThan(0);
    expect(states[0]).toBe(TaskState.TASK_STATE_WORKING);
    rig.latch.release();
    await following;
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  test('unknown tasks and skills are A2A errors; a reader key may read but not start', async () => {
    const c = await client();
    await expect(c.getTask({ tenant: '', id: 'run_nope', historyLength: undefined })).rejects.toThrow(/no task/);
    await expect(c.sendMessage(send(msg([data({})], { skill: 'nope' })))).rejects.toThrow(/no skill `nope`/);
    await expect(c.sendMessage(send(msg([data({})])))).rejects.toThrow(/name the workflow/);
    const reader = await client(KEYS.reader);
    await expect(reader.sendMessage(send(msg([data({ name: 'x' })], { skill: 'hello' })))).rejects.toThrow();
  });

  test('Baton calls Baton: an x-a2a phase whose agent is this server (a bearer token from token_env)', async () => {
    const caller = await openStore('memory', { cwd: dir });
    const e = createEngine({ store: caller });
    try {
      process.env['BATON_A2A_TEST_TOKEN'] = KEYS.operator;
      const wf = `openintent: "1.0"
info: {name: outer}
x-trigger: {name: string}
agents:
  remote-hello:
    x-a2a: {url: "${server.url}", skill: hello, token_env: BATON_A2A_TEST_TOKEN}
workflow:
  call:
    assign: remote-hello
    inputs: {name: $trigger.name}
    outputs: {greeting: string}
`;
      const result = await e.run(WorkflowSpec.fromString(wf), { trigger: { name: 'grace' } });
      expect(result.status).toBe('completed');
      expect(result.phases['call']!.output).toEqual({ greeting: 'hello grace' });
    } finally {
      delete process.env['BATON_A2A_TEST_TOKEN'];
      await e.close();
      await caller.close();
    }
  });
});

describe('a Baton workflow called as an A2A agent, on PostgreSQL', () => {
  test('SendMessage to completion, and an input gate answered by a follow-up message', async () => {
    const { store: pgStore, changes, drop } = await openTestStore('postgres', dir);
    const e = createEngine({ store: pgStore, agents: { ...agents(rig.latch), greeter: (ctx) => ({ greeting: `hello ${String(ctx.input['name'])}` }) } });
    const s = await startServer({ engine: e, port: 0, keys: parseKeysEnv(KEYS_ENV), workflows: scanWorkflows(join(dir, 'flows')), a2a: await loadA2aServer(), ...(changes ? { changes } : {}), cwd: dir, log: () => undefined, graceMs: 100 });
    try {
      const f = auth(KEYS.operator);
      const c = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: f })], cardResolver: new DefaultAgentCardResolver({ fetchImpl: f }) })).createFromUrl(s.url);
      const t = asTask(await c.sendMessage(send(msg([data({ name: 'pg' })], { skill: 'hello' }))));
      expect(t.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(t.artifacts[0]!.parts[0]!.content).toEqual({ $case: 'data', value: { greeting: 'hello pg' } });
      const asked = asTask(await c.sendMessage(send(msg([data({})], { skill: 'ask' }))));
      expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const done = asTask(await c.sendMessage(send(msg([text('red')], { taskId: asked.id, contextId: asked.contextId }))));
      expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(done.artifacts[0]!.parts[0]!.content).toEqual({ $case: 'data', value: { answer: 'red' } });
    } finally {
      await s.close();
      await pgStore.close();
      await drop();
    }
  });
});

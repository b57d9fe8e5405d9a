/**
 * `baton serve --a2a` against the A2A v1.0 specification's JSON-RPC binding, where a conforming client
 * would notice: the errors the spec names for each method (with the codes `@a2a-js/sdk`'s own server
 * gives), errors before a stream as plain JSON-RPC answers (as the SDK's transport glue answers them),
 * notifications not answered, the endpoint's methods, the card's capabilities. A real server on a
 * loopback port over a real store; requests from the SDK's own client and as raw JSON-RPC.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { A2A_ERROR_CODE, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { createEngine, openStore, type Engine, type RunStore } from '@baton-run/baton';
import { loadA2aServer, parseKeysEnv, scanWorkflows, startServer, type BatonServer } from '@baton-run/baton/server';
import { agents, ASK, HELLO, KEYS, KEYS_ENV, Latch, SLOW_ONE as SLOW } from './harness.js';
import { until } from '../helpers/spawn.js';

let dir: string;
let store: RunStore;
let engine: Engine;
let server: BatonServer;
const latch = new Latch();

const auth = (key: string): typeof fetch => (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set('authorization', `Bearer ${key}`);
  return fetch(input, { ...init, headers });
};

async function client(key: string = KEYS.operator): Promise<Awaited<ReturnType<ClientFactory['createFromUrl']>>> {
  const f = auth(key);
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl: f })], cardResolver: new DefaultAgentCardResolver({ fetchImpl: f }) })).createFromUrl(server.url);
}

const data = (value: unknown): Part => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });
const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const msg = (parts: Part[], o: { taskId?: string; contextId?: string; skill?: string } = {}): Message => ({ messageId: crypto.randomUUID(), contextId: o.contextId ?? '', taskId: o.taskId ?? '', role: Role.ROLE_USER, parts, metadata: o.skill ? { skill: o.skill } : undefined, extensions: [], referenceTaskIds: [] });
const send = (m: Message, returnImmediately = false) => ({ tenant: '', message: m, configuration: { acceptedOutputModes: ['application/json'], taskPushNotificationConfig: undefined, returnImmediately }, metadata: undefined });

function asTask(r: Message | Task): Task {
  if ('messageId' in r) throw new Error('expected a task, got a message');
  return r;
}

/** A raw POST to the endpoint: the status, content type and text (parsed when JSON). */
async function rpc(body: unknown, opts: { key?: string; type?: string; raw?: string; method?: string; path?: string } = {}): Promise<{ status: number; type: string; text: string; json: Record<string, unknown> | undefined; allow: string | null }> {
  const res = await fetch(`${server.url}${opts.path ?? '/a2a'}`, {
    method: opts.method ?? 'POST',
    headers: { authorization: `Bearer ${opts.key ?? KEYS.operator}`, 'content-type': opts.type ?? 'application/json', 'a2a-version': '1.0' },
    ...((opts.method ?? 'POST') === 'POST' ? { body: opts.raw ?? JSON.stringify(body) } : {}),
  });
  const t = await res.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(t) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: t, json, allow: res.headers.get('allow') };
}

const errorCode = (r: { json: Record<string, unknown> | undefined }): number | undefined => (r.json?.['error'] as { code?: number } | undefined)?.code;
const rawMessage = (o: { skill?: string; taskId?: string; contextId?: string; messageId?: string | null; data?: unknown } = {}) => ({
  message: {
    ...(o.messageId === null ? {} : { messageId: o.messageId ?? crypto.randomUUID() }),
    role: 'ROLE_USER',
    parts: [{ data: o.data ?? {} }],
    ...(o.taskId !== undefined ? { taskId: o.taskId } : {}),
    ...(o.contextId !== undefined ? { contextId: o.contextId } : {}),
    ...(o.skill !== undefined ? { metadata: { skill: o.skill } } : {}),
  },
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-a2a-protocol-'));
  mkdirSync(join(dir, 'flows'));
  writeFileSync(join(dir, 'flows', 'hello.yaml'), HELLO);
  writeFileSync(join(dir, 'flows', 'slow.yaml'), SLOW);
  writeFileSync(join(dir, 'flows', 'ask.yaml'), ASK);
  store = await openStore(join(dir, 'baton.db'), { cwd: dir });
  engine = createEngine({ store, agents: { ...agents(latch), greeter: (ctx) => ({ greeting: `hello ${String(ctx.input['name'])}` }) }, concurrency: 8 });
  server = await startServer({ engine, port: 0, keys: parseKeysEnv(KEYS_ENV), workflows: scanWorkflows(join(dir, 'flows')), a2a: await loadA2aServer(), cwd: dir, log: () => undefined, graceMs: 100 });
});

afterAll(async () => {
  latch.release();
  await server.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('SubscribeToTask', () => {
  test('on a task in a final state: UnsupportedOperationError (-32004) as a JSON-RPC answer, not a stream', async () => {
    const c = await client();
    const done = asTask(await c.sendMessage(send(msg([data({ name: 'ada' })], { skill: 'hello' }))));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const cancelled = asTask(await c.sendMessage(send(msg([data({})], { skill: 'slow' }), true)));
    await c.cancelTask({ tenant: '', id: cancelled.id, metadata: undefined });
    for (const id of [done.id, cancelled.id]) {
      const r = await rpc({ jsonrpc: '2.0', id: 7, method: 'SubscribeToTask', params: { id } });
      expect(r.status).toBe(200);
      expect(r.type).toMatch(/^application\/json/);
      expect(r.json).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: A2A_ERROR_CODE.UNSUPPORTED_OPERATION } });
      // the SDK's client sees the SDK's error class
      const iterate = async (): Promise<void> => {
        for await (const _ of c.resubscribeTask({ tenant: '', id })) void _;
      };
      await expect(iterate()).rejects.toBeInstanceOf(UnsupportedOperationError);
    }
  });

  test('an unknown task is TaskNotFoundError (-32001), an empty id invalid params (-32602), both before any stream', async () => {
    const unknown = await rpc({ jsonrpc: '2.0', id: 'a', method: 'SubscribeToTask', params: { id: 'run_none' } });
    expect(unknown.type).toMatch(/^application\/json/);
    expect(unknown.json).toMatchObject({ id: 'a', error: { code: A2A_ERROR_CODE.TASK_NOT_FOUND } });
    const empty = await rpc({ jsonrpc: '2.0', id: 'b', method: 'SubscribeToTask', params: { id: '' } });
    expect(empty.json).toMatchObject({ id: 'b', error: { code: A2A_ERROR_CODE.INVALID_PARAMS } });
  });
});

describe('errors of the other methods', () => {
  test('SendStreamingMessage refused before it starts: the error the SDK maps, as a JSON answer', async () => {
    const r = await rpc({ jsonrpc: '2.0', id: 3, method: 'SendStreamingMessage', params: rawMessage({ skill: 'nope' }) });
    expect(r.type).toMatch(/^application\/json/);
    expect(r.json).toMatchObject({ id: 3, error: { code: A2A_ERROR_CODE.INVALID_PARAMS } });
  });

  test('CancelTask: TaskNotCancelableError (-32002) on a completed task, TaskNotFoundError on an unknown one, invalid params on an empty id', async () => {
    const c = await client();
    const done = asTask(await c.sendMessage(send(msg([data({ name: 'bo' })], { skill: 'hello' }))));
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: done.id } }))).toBe(A2A_ERROR_CODE.TASK_NOT_CANCELABLE);
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: 'run_none' } }))).toBe(A2A_ERROR_CODE.TASK_NOT_FOUND);
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: '' } }))).toBe(A2A_ERROR_CODE.INVALID_PARAMS);
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: '' } }))).toBe(A2A_ERROR_CODE.INVALID_PARAMS);
  });

  test('CancelTask on a task that ends otherwise before the cancel lands: TaskNotCancelableError, not the finished task', async () => {
    const c = await client();
    const t = asTask(await c.sendMessage(send(msg([data({})], { skill: 'slow' }), true)));
    expect(t.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    // this task's agent is waiting on the latch (a release before it waits would release nothing: on a loaded machine the
    // task is WORKING before its agent runs), not only some attempt: the cancelled task of the first test waited on it too
    await until(() => latch.holds(t.id));
    // the interleaving, forced: the run completes between the handler's read of the task and its cancel
    const cancel = engine.cancel.bind(engine);
    engine.cancel = async (runId, reason) => {
      latch.release();
      await engine.handle(runId).result();
      return cancel(runId, reason);
    };
    try {
      expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'CancelTask', params: { id: t.id } }))).toBe(A2A_ERROR_CODE.TASK_NOT_CANCELABLE);
    } finally {
      engine.cancel = cancel;
    }
    expect((await store.run(t.id))?.status).toBe('completed');
  });

  test('SendMessage: a message without messageId is invalid params; one on a task of another contextId too; one on a finished task is UnsupportedOperationError', async () => {
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: rawMessage({ skill: 'hello', data: { name: 'x' }, messageId: null }) }))).toBe(A2A_ERROR_CODE.INVALID_PARAMS);
    // no parts, or parts that are not a list: invalid params, and no run is started
    const before = (await rpc({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} })).text;
    for (const parts of [[], 'x', { text: 'x' }]) {
      const r = await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { ...rawMessage({ skill: 'ask' }).message, parts } } });
      expect([JSON.stringify(parts), errorCode(r)]).toEqual([JSON.stringify(parts), A2A_ERROR_CODE.INVALID_PARAMS]);
    }
    expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} })).text).toBe(before);
    const c = await client();
    const asked = asTask(await c.sendMessage(send(msg([data({})], { skill: 'ask', contextId: 'ctx-conversation' }))));
    expect(asked.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(asked.contextId).toBe('ctx-conversation');
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { ...rawMessage().message, parts: [{ text: 'red' }], taskId: asked.id, contextId: 'ctx-other' } } }))).toBe(A2A_ERROR_CODE.INVALID_PARAMS);
    // the gate is still open: the same answer with the task's own context goes through
    const done = asTask(await c.sendMessage(send(msg([text('red')], { taskId: asked.id, contextId: asked.contextId }))));
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { ...rawMessage().message, parts: [{ text: 'red' }], taskId: asked.id } } }))).toBe(A2A_ERROR_CODE.UNSUPPORTED_OPERATION);
  });

  test('a task without a contextId of its own gets one (the run id); the capabilities the card declares are those offered', async () => {
    const c = await client();
    const t = asTask(await c.sendMessage(send(msg([data({ name: 'cy' })], { skill: 'hello' }))));
    expect(t.contextId).toBe(t.id);
    const card = await c.getAgentCard();
    expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: false, extendedAgentCard: false });
    // extendedAgentCard: false -> UnsupportedOperationError (spec 3.3.4); pushNotifications: false -> PushNotificationNotSupportedError
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard' }))).toBe(A2A_ERROR_CODE.UNSUPPORTED_OPERATION);
    for (const method of ['CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'DeleteTaskPushNotificationConfig']) {
      expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method, params: { taskId: t.id, id: 'p1' } })), method).toBe(A2A_ERROR_CODE.PUSH_NOTIFICATION_NOT_SUPPORTED);
    }
    // v0.3's names are v0.3 calls (a2a-serve-v03.test.ts): one without its message has invalid params; a name of neither version is not found
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'message/send', params: {} }))).toBe(A2A_ERROR_CODE.INVALID_PARAMS);
    expect(errorCode(await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessages', params: {} }))).toBe(A2A_ERROR_CODE.METHOD_NOT_FOUND);
  });

  test('bodies: not JSON is a parse error (-32700), not an object an invalid request (-32600), another content type ContentTypeNotSupportedError (-32005); each answered with id null', async () => {
    expect((await rpc(undefined, { raw: '{"jsonrpc": "2.0",' })).json).toMatchObject({ id: null, error: { code: A2A_ERROR_CODE.PARSE_ERROR } });
    expect((await rpc([{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }])).json).toMatchObject({ id: null, error: { code: A2A_ERROR_CODE.INVALID_REQUEST } });
    expect((await rpc(undefined, { raw: 'GetTask x', type: 'text/plain' })).json).toMatchObject({ id: null, error: { code: A2A_ERROR_CODE.CONTENT_TYPE_NOT_SUPPORTED } });
  });

  test('an object that is no JSON-RPC 2.0 request (no or another `jsonrpc`, no method, an id that is an object) is an invalid request (-32600), not invalid params; an id that is not a string or integer is answered as null', async () => {
    const cases: [unknown, unknown][] = [
      [{ jsonrpc: '1.0', id: 4, method: 'GetTask', params: { id: 'x' } }, 4],
      [{ id: 'a', method: 'GetTask', params: { id: 'x' } }, 'a'],
      [{ jsonrpc: '2.0', id: 5, params: { id: 'x' } }, 5],
      [{ jsonrpc: '2.0', id: 6, method: 7 }, 6],
      [{ jsonrpc: '2.0', id: { a: 1 }, method: 'GetTask', params: { id: 'x' } }, null],
      [{ jsonrpc: '2.0', id: 1.5, method: 'GetTask', params: { id: 'x' } }, null],
      [{ jsonrpc: '1.0', method: 'SendMessage', params: {} }, null],
    ];
    for (const [body, id] of cases) {
      const r = await rpc(body);
      expect(r.status, JSON.stringify(body)).toBe(200);
      expect(r.json, JSON.stringify(body)).toMatchObject({ jsonrpc: '2.0', id, error: { code: A2A_ERROR_CODE.INVALID_REQUEST } });
    }
  });
});

describe('the endpoint', () => {
  test('/a2a takes POST only: other methods get 405 with Allow: POST; the card GET only', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const r = await rpc(undefined, { method });
      expect(r.status, method).toBe(405);
      expect(r.allow).toBe('POST');
      expect(r.json).toMatchObject({ error: { code: 'method-not-allowed' } });
    }
    const card = await rpc({}, { path: '/.well-known/agent-card.json' });
    expect(card.status).toBe(405);
    expect(card.allow).toBe('GET');
  });

  test('a notification (no id) is carried out and never answered: 204, no body', async () => {
    const before = (await store.runs({ limit: 1000 })).length;
    const r = await rpc({ jsonrpc: '2.0', method: 'SendMessage', params: rawMessage({ skill: 'hello', data: { name: 'note' } }) });
    expect(r.status).toBe(204);
    expect(r.text).toBe('');
    await expect.poll(async () => (await store.runs({ limit: 1000 })).length).toBe(before + 1);
    // a notification that fails is not answered either
    for (const body of [{ jsonrpc: '2.0', method: 'GetTask', params: { id: 'run_none' } }, { jsonrpc: '2.0', method: 'NoSuchMethod' }, { jsonrpc: '2.0', method: 'SubscribeToTask', params: { id: 'run_none' } }]) {
      const n = await rpc(body);
      expect(n.status, body.method).toBe(204);
      expect(n.text).toBe('');
    }
    // `id: null` is a request (discouraged, but not a notification): it is answered
    expect((await rpc({ jsonrpc: '2.0', id: null, method: 'GetTask', params: { id: 'run_none' } })).json).toMatchObject({ id: null, error: { code: A2A_ERROR_CODE.TASK_NOT_FOUND } });
  });
});

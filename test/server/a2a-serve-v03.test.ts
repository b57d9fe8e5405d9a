/**
 * `baton serve --a2a` called by an A2A v0.3 client, as agents deployed before v1.0 call it: the card
 * read without an `A2A-Version` header, and v0.3 JSON-RPC (`message/send`, `tasks/get`, `tasks/cancel`,
 * kind-tagged parts) on the same endpoint, raw over fetch and through the SDK's own v0.3 transport.
 * A real SQLite store on a loopback port.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { Role } from '@a2a-js/sdk';
import type { BatonServer } from '@baton-run/baton/server';
import { KEYS, startA2aServe, type A2aServe } from './harness.js';

let server: BatonServer;

let rig: A2aServe;
beforeAll(async () => {
  rig = await startA2aServe('baton-a2a-v03-serve-');
  ({ server } = rig);
});

afterAll(() => rig.close());

interface Rpc {
  status: number;
  json: { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } };
}

/** A v0.3 JSON-RPC call as a v0.3 client makes it: no A2A-Version header. */
async function rpc(method: string, params: unknown, key: string = KEYS.operator): Promise<Rpc> {
  const r = await fetch(`${server.url}/a2a`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }) });
  return { status: r.status, json: (await r.json()) as Rpc['json'] };
}

const v03Message = (parts: unknown[], o: { taskId?: string; skill?: string } = {}): Record<string, unknown> => ({
  kind: 'message',
  role: 'user',
  messageId: crypto.randomUUID(),
  parts,
  ...(o.taskId ? { taskId: o.taskId } : {}),
  ...(o.skill ? { metadata: { skill: o.skill } } : {}),
});

describe('baton serve --a2a for A2A v0.3 clients', () => {
  test('the card read without a version header carries v0.3\'s fields beside v1.0\'s; `A2A-Version` picks one', async () => {
    const plain = (await (await fetch(`${server.url}/.well-known/agent-card.json`)).json()) as Record<string, unknown>;
    expect(plain).toMatchObject({ url: `${server.url}/a2a`, preferredTransport: 'JSONRPC', protocolVersion: '0.3.0', capabilities: { streaming: true } });
    expect((plain['skills'] as { id: string }[]).map((s) => s.id).sort()).toEqual(['ask', 'hello', 'slow']);
    expect(plain['securitySchemes']).toMatchObject({ bearer: { type: 'http', scheme: 'bearer' } });
    expect(plain['security']).toEqual([{ bearer: [] }]);
    // v1.0's fields too: a v1.0 reader that sends no header is served
    expect(plain['supportedInterfaces']).toEqual([
      { url: `${server.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${server.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    const v1 = (await (await fetch(`${server.url}/.well-known/agent-card.json`, { headers: { 'a2a-version': '1.0' } })).json()) as Record<string, unknown>;
    expect(v1['url']).toBeUndefined();
    expect(v1['securitySchemes']).toEqual({ bearer: { httpAuthSecurityScheme: expect.objectContaining({ scheme: 'Bearer' }) as unknown } });
    const v03 = (await (await fetch(`${server.url}/.well-known/agent-card.json`, { headers: { 'a2a-version': '0.3' } })).json()) as Record<string, unknown>;
    expect(v03).toMatchObject({ protocolVersion: '0.3.0', securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } });
    expect(v03['securityRequirements']).toBeUndefined();
  });

  test('message/send runs the workflow named by the skill; the reply is a v0.3 task with a data-part artifact', async () => {
    const r = await rpc('message/send', { message: v03Message([{ kind: 'data', data: { name: 'ada' } }], { skill: 'hello' }), configuration: { blocking: true, acceptedOutputModes: ['application/json'] } });
    expect(r.status).toBe(200);
    expect(r.json.error).toBeUndefined();
    const task = r.json.result!;
    expect(task).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    const parts = (task['artifacts'] as { parts: { kind: string; data?: unknown }[] }[]).flatMap((a) => a.parts);
    expect(parts).toContainEqual(expect.objectContaining({ kind: 'data', data: expect.objectContaining({ greeting: 'hello ada' }) as unknown }));
    // the same task read back with tasks/get
    const got = await rpc('tasks/get', { id: task['id'] });
    expect(got.json.result).toMatchObject({ kind: 'task', id: task['id'], status: { state: 'completed' } });
  });

  test('an input gate is input-required; a follow-up message/send on the task answers it', async () => {
    const first = await rpc('message/send', { message: v03Message([{ kind: 'data', data: {} }], { skill: 'ask' }), configuration: { blocking: true } });
    const task = first.json.result!;
    expect(task['status']).toMatchObject({ state: 'input-required' });
    const answered = await rpc('message/send', { message: v03Message([{ kind: 'text', text: 'blue' }], { taskId: task['id'] as string }), configuration: { blocking: true } });
    expect(answered.json.result).toMatchObject({ kind: 'task', id: task['id'], status: { state: 'completed' } });
  });

  test('tasks/cancel cancels the run; a reader key may read but not start; an unknown method is -32601', async () => {
    const started = await rpc('message/send', { message: v03Message([{ kind: 'data', data: {} }], { skill: 'slow' }), configuration: { blocking: false } });
    const id = started.json.result!['id'] as string;
    const cancelled = await rpc('tasks/cancel', { id });
    expect(cancelled.json.result).toMatchObject({ kind: 'task', id, status: { state: 'canceled' } });
    const denied = await rpc('message/send', { message: v03Message([{ kind: 'data', data: { name: 'x' } }], { skill: 'hello' }) }, KEYS.reader);
    expect(denied.status).toBe(403);
    expect(denied.json.error?.message).toMatch(/may not call message\/send/);
    expect((await rpc('tasks/get', { id }, KEYS.reader)).json.result).toMatchObject({ id, status: { state: 'canceled' } });
    expect((await rpc('tasks/nothing', { id })).json.error?.code).toBe(-32601);
  });

  test('the SDK\'s own v0.3 transport streams a run (message/stream)', async () => {
    const t = new LegacyJsonRpcTransport({ endpoint: `${server.url}/a2a`, fetchImpl: (input, init) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers)), authorization: `Bearer ${KEYS.operator}` } }) });
    const states: number[] = [];
    let data: unknown;
    const message = { messageId: crypto.randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [{ content: { $case: 'data' as const, value: { name: 'bo' } }, metadata: undefined, filename: '', mediaType: 'application/json' }], metadata: { skill: 'hello' }, extensions: [], referenceTaskIds: [] };
    for await (const ev of t.sendMessageStream({ tenant: '', message, configuration: undefined, metadata: undefined })) {
      const p = ev.payload;
      if (p?.$case === 'task' && p.value.status) states.push(p.value.status.state);
      if (p?.$case === 'statusUpdate' && p.value.status) states.push(p.value.status.state);
      if (p?.$case === 'artifactUpdate') for (const part of p.value.artifact?.parts ?? []) if (part.content?.$case === 'data') data = part.content.value;
    }
    expect(data).toMatchObject({ greeting: 'hello bo' });
    expect(states.length).toBeGreaterThan(0);
  });
});

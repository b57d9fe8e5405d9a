/**
 * A remote agent's completion is served from the Node request itself (app.ts's fast path), every other
 * request through Hono. The same completion sent both ways (a token with an escaped character is read
 * by Hono, not by the fast path) must get the same answer: status, error code and message, the headers
 * a 401 and a 413 need, and the request counted once under the route's template.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine, type Engine, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, RemoteAgents, startServer, type BatonServer } from '@baton-run/baton/server';
import { api, openTestStore } from './harness.js';

const OPS = 'fast-ops-key-0123456789abcdef';
const AGENT = 'fast-agent-key-0123456789abcd';
const TWO = `openintent: "1.0"
info: {name: two}
workflow:
  p0: {assign: q, outputs: {i: number}}
  p1: {assign: q, outputs: {i: number}}
`;

let store: RunStore;
const dir = mkdtempSync(join(tmpdir(), 'baton-fast-path-'));
let engine: Engine;
let server: BatonServer;

beforeAll(async () => {
  ({ store } = await openTestStore('sqlite', dir));
  const remote = new RemoteAgents({ agents: ['q'] });
  engine = createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent });
  server = await startServer({ engine, port: 0, keys: parseKeysEnv(`ops:operator:${OPS},q:agent:q:${AGENT}`), remote, log: () => undefined, bodyLimit: 4096, graceMs: 500 });
});

afterAll(async () => {
  await server?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The same token with its `_` percent-escaped: Hono decodes it, the fast path does not take it. */
const viaHono = (token: string): string => token.replace('_', '%5F');

interface Answer {
  status: number;
  code: unknown;
  message: unknown;
  type: string | null;
  auth: string | null;
  connection: string | null;
}

async function complete(token: string, init: { key?: string; raw?: string; type?: string; encoding?: string }): Promise<Answer> {
  const r = await api(server.url, 'POST', `/tasks/${token}/complete`, { ...(init.key !== undefined ? { key: init.key } : {}), ...(init.raw !== undefined ? { raw: init.raw } : {}), ...(init.type !== undefined ? { type: init.type } : {}), ...(init.encoding !== undefined ? { headers: { 'content-encoding': init.encoding } } : {}) });
  const err = (r.body['error'] ?? {}) as Record<string, unknown>;
  return { status: r.status, code: err['code'], message: err['message'], type: r.headers.get('content-type'), auth: r.headers.get('www-authenticate'), connection: r.status === 413 ? r.headers.get('connection') : null };
}

test('a completion gets the same answer through the fast path and through Hono, for every way it can be refused', async () => {
  const start = await api(server.url, 'POST', '/runs', { key: OPS, body: { workflow: TWO } });
  expect(start.status).toBe(201);
  const claimed = await api(server.url, 'POST', '/agents/q/claim?wait=5', { key: AGENT });
  expect(claimed.status).toBe(200);
  const token = claimed.body['token'] as string;
  expect(token).toMatch(/^rt_/);

  const cases: [string, { key?: string; raw?: string; type?: string; encoding?: string }, number][] = [
    ['no key', { raw: '{"output":{"i":1}}' }, 401],
    ['an unknown key', { key: 'nope-0123456789abcdef', raw: '{"output":{"i":1}}' }, 401],
    ['an operator key', { key: OPS, raw: '{"output":{"i":1}}' }, 403],
    ['malformed JSON', { key: AGENT, raw: '{"output":' }, 400],
    ['a text body', { key: AGENT, raw: '{"output":{"i":1}}', type: 'text/plain' }, 415],
    ['another charset', { key: AGENT, raw: '{"output":{"i":1}}', type: 'application/json; charset=latin1' }, 415],
    ['a compressed body (Content-Encoding)', { key: AGENT, raw: '{"output":{"i":1}}', encoding: 'br' }, 415],
    ['an unknown field', { key: AGENT, raw: '{"output":{"i":1},"x":1}' }, 400],
    ['no output', { key: AGENT, raw: '{}' }, 400],
    ['a JSON array', { key: AGENT, raw: '[1]' }, 400],
    ['an output of the wrong type', { key: AGENT, raw: '{"output":{"i":"one"}}' }, 422],
    ['a body over the limit', { key: AGENT, raw: `{"output":{"i":1,"s":"${'x'.repeat(8000)}"}}` }, 413],
  ];
  for (const [label, init, status] of cases) {
    const fast = await complete(token, init);
    const hono = await complete(viaHono(token), init);
    expect(fast, label).toEqual(hono);
    expect(fast.status, label).toBe(status);
    expect(fast.type, label).toMatch(/^application\/json/);
  }
  // an unknown token, then the real completion on the fast path and a late one through Hono: both refused alike
  expect(await complete('rt_AAAAAAAAAAAAAAAAAAAA', { key: AGENT, raw: '{"output":{"i":1}}' })).toEqual(await complete('rt%5FAAAAAAAAAAAAAAAAAAAA', { key: AGENT, raw: '{"output":{"i":1}}' }));
  const done = await api(server.url, 'POST', `/tasks/${token}/complete`, { key: AGENT, body: { output: { i: 0 }, claim_next: true } });
  expect(done.status).toBe(200);
  expect(done.body).toMatchObject({ status: 'completed', committed: true });
  const next = (done.body['next'] as Record<string, unknown>)['token'] as string;
  const late = [await complete(token, { key: AGENT, raw: '{"output":{"i":1}}' }), await complete(viaHono(token), { key: AGENT, raw: '{"output":{"i":1}}' })];
  expect(late[0]).toEqual(late[1]);
  expect(late[0]).toMatchObject({ status: 409, code: 'task-ended' });
  // the next task, completed through Hono this time
  expect((await api(server.url, 'POST', `/tasks/${viaHono(next)}/complete`, { key: AGENT, body: { output: { i: 1 } } })).status).toBe(200);

  // every request counted under the route's template, whichever way it went
  const metrics = await api(server.url, 'GET', '/metrics', { key: OPS });
  const text = String(metrics.body['text'] ?? '');
  const counted = [...text.matchAll(/baton_http_requests_total\{route="\/tasks\/:token\/complete",status="(\d+)"\} (\d+)/g)].reduce((n, m) => n + Number(m[2]), 0);
  expect(counted).toBe(cases.length * 2 + 2 + 1 + 2 + 1);
}, 60_000);

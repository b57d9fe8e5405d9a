/**
 * A declared `contentType` that cannot be a header value (a CR LF in a quoted YAML string: the workflow's
 * author wrote it, `baton validate` takes any string): `GET /tasks/{token}/files/{key}` answered 500
 * (and left the file open), and createRemoteAgent's upload of such an output threw. Now such a type is
 * served and sent as `application/octet-stream`, and the files go through. Real server, memory store.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine, createRemoteAgent, openStore, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, RemoteAgents, startServer, type BatonServer } from '@baton-run/baton/server';
import { until } from '../helpers/spawn.js';
import { KEYS, KEYS_ENV, api, startRun, toEnd } from './harness.js';

const RKEY = 'remote-ctype-r-key-0123456789';
const WF = `openintent: "1.0"
info: {name: rctype}
agents:
  r: {x-remote: true}
workflow:
  b:
    assign: r
    inputsFiles:
      notes: {path: notes.txt, contentType: "text/plain\\r\\nX-Evil: 1"}
      plain: {path: notes.txt, contentType: "text/markdown; charset=utf-8"}
    outputsFiles:
      out: {path: "out/<runId>.txt", contentType: "text/plain\\nX-Evil: 1"}
    outputs: {n: number}
`;

let dir: string;
let store: RunStore;
let server: BatonServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-rctype-'));
  writeFileSync(join(dir, 'notes.txt'), 'one\ntwo\n');
  store = await openStore('memory', { cwd: dir });
  const remote = new RemoteAgents({ leaseMs: 3000 });
  const engine = createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent, leaseMs: 5000 });
  server = await startServer({ engine, port: 0, keys: parseKeysEnv(`${KEYS_ENV},rk:agent:r:${RKEY}`), remote, cwd: dir, log: () => undefined, graceMs: 100 });
});
afterAll(async () => {
  await server?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a declared content type that is no header value is served as application/octet-stream; one that is, as declared', async () => {
  const id = await startRun(server, WF, undefined, KEYS.admin);
  const c = await api(server.url, 'POST', '/agents/r/claim?wait=10', { key: RKEY });
  expect(c.body['run_id']).toBe(id);
  const token = c.body['token'] as string;
  const get = (key: string) => fetch(`${server.url}/tasks/${token}/files/${key}`, { headers: { authorization: `Bearer ${RKEY}` } });
  const bad = await get('notes');
  expect(bad.status).toBe(200);
  expect(bad.headers.get('content-type')).toBe('application/octet-stream');
  expect(await bad.text()).toBe('one\ntwo\n');
  const good = await get('plain');
  expect(good.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
  await good.text();
  await api(server.url, 'POST', `/tasks/${token}/release`, { key: RKEY });
  // createRemoteAgent: fetches both, sends the output whose declared type is no header value
  const agent = createRemoteAgent({
    url: server.url,
    key: RKEY,
    agent: 'r',
    waitS: 1,
    onError: () => undefined,
    handler: (ctx) => {
      const root = ctx.input['_workflowFsRoot'] as string;
      writeFileSync(join(root, 'out'), readFileSync(join(root, 'notes')));
      return { n: 2 };
    },
  });
  try {
    const { status, events } = await toEnd(server, id);
    expect(status).toBe('completed');
    expect(events.filter((e) => e.type === 'task.file' && e['direction'] === 'synced').map((e) => e['key'])).toEqual(['out']);
    await until(() => existsSync(join(dir, 'out', `${id}.txt`)), 5000);
    expect(readFileSync(join(dir, 'out', `${id}.txt`), 'utf8')).toBe('one\ntwo\n');
  } finally {
    await agent.stop(100);
  }
}, 30_000);

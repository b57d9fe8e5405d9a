/**
 * A remote agent's waiting `POST /tasks/{token}/input?wait=S` poll when its attempt ends meanwhile (the
 * run is cancelled): the poll answers at once with the 409 every call with that token gets (`stop:
 * true`), not a 202 asking it to poll again. A real server on a loopback port (memory store).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { KEYS, api, proxiedRemoteServer, type ProxiedRemote } from './harness.js';

const AGENT_KEY = 'q-agent-key-0123456789abcdef';
const WF = `openintent: "1.0"
info: {name: asks}
workflow:
  a:
    assign: q
    outputs: {n: number}
`;

let dir: string;
let s: ProxiedRemote;
let url: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-input-poll-'));
  s = await proxiedRemoteServer(dir, 10_000, `bob:operator:${KEYS.operator},qa:agent:q:${AGENT_KEY}`);
  url = s.server.url;
});
afterAll(async () => {
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('an input poll whose attempt is cancelled while it waits answers 409 task-ended, stop: true', async () => {
  const started = await api(url, 'POST', '/runs', { key: KEYS.operator, body: { workflow: WF, run_id: 'asks-1' } });
  expect(started.status).toBe(201);
  const claim = await api(url, 'POST', '/agents/q/claim?wait=10', { key: AGENT_KEY });
  const token = claim.body['token'] as string;
  const asked = await api(url, 'POST', `/tasks/${token}/input?wait=0`, { key: AGENT_KEY, body: { question: 'which?' } });
  expect(asked).toMatchObject({ status: 202, body: { input: 0, answered: false } });
  const t0 = performance.now();
  const poll = api(url, 'POST', `/tasks/${token}/input?wait=30`, { key: AGENT_KEY, body: { input: 0 } });
  // the poll is waiting when the run is cancelled
  await new Promise((r) => setTimeout(r, 200));
  expect((await api(url, 'POST', '/runs/asks-1/cancel', { key: KEYS.operator })).status).toBe(200);
  const answer = await poll;
  expect(performance.now() - t0).toBeLessThan(10_000);
  expect(answer.status).toBe(409);
  expect(answer.body).toMatchObject({ error: { code: 'task-ended', stop: true } });
  // as the heartbeat says
  expect((await api(url, 'POST', `/tasks/${token}/heartbeat`, { key: AGENT_KEY })).body).toMatchObject({ stop: true, cancelled: true });
});

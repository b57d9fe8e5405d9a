/**
 * Uploads of a remote agent's AIP-16 output files that take their time, against a real server on a
 * loopback port (memory store, a remote lease of 1.5 s):
 * - an upload abandoned half-way (its connection left open, nothing more sent: a partition, an agent
 *   that sent the file again on another connection) held the task's completion as long as its socket
 *   stayed open: the completion did not answer, the lease passed meanwhile and the agent's outcome was
 *   recorded as stale. A completion now waits for the uploads in flight only while they move.
 * - a long upload alone (bytes arriving for longer than the lease, no heartbeat beside it) lost its task
 *   half-way: the bytes arriving now count as the agent's heartbeat, as docs/server.md says of a transfer.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine, openStore, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, RemoteAgents, startServer, type BatonServer } from '@baton-run/baton/server';
import { KEYS, KEYS_ENV, api, startRun, toEnd } from './harness.js';

const RKEY = 'remote-stall-r-key-0123456789';
const FILES = `openintent: "1.0"
info: {name: rstall}
agents:
  r: {x-remote: true}
workflow:
  b:
    assign: r
    outputsFiles:
      summary: {path: "out/<runId>/summary.txt"}
    outputs: {lines: number}
`;

let dir: string;
let store: RunStore;
let server: BatonServer;
let url: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-rstall-'));
  writeFileSync(join(dir, 'keep'), '');
  store = await openStore('memory', { cwd: dir });
  const remote = new RemoteAgents({ leaseMs: 1500 });
  const engine = createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent, leaseMs: 5000 });
  server = await startServer({ engine, port: 0, keys: parseKeysEnv(`${KEYS_ENV},rk:agent:r:${RKEY}`), remote, cwd: dir, log: () => undefined, graceMs: 100 });
  url = server.url;
});
afterAll(async () => {
  await server?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A PUT of `size` bytes on a raw connection, whose body is sent by the caller. */
function rawPut(token: string, size: number): Promise<Socket> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), '127.0.0.1', () => {
      s.write(`PUT /tasks/${token}/files/summary HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${RKEY}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${size}\r\n\r\n`);
      resolve(s);
    });
    s.on('error', reject);
  });
}

async function claimOne(): Promise<{ id: string; token: string }> {
  const id = await startRun({ url }, FILES, undefined, KEYS.admin);
  const c = await api(url, 'POST', '/agents/r/claim?wait=10', { key: RKEY });
  expect(c.status).toBe(200);
  expect(c.body['run_id']).toBe(id);
  return { id, token: c.body['token'] as string };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('remote uploads that take their time', () => {
  test('an upload abandoned half-way does not hold the completion: it answers, commits, and the abandoned bytes land nowhere', async () => {
    const { id, token } = await claimOne();
    const stuck = await rawPut(token, 1000);
    try {
      stuck.write('0123456789');
      await sleep(100);
      const started = Date.now();
      const done = await Promise.race([api(url, 'POST', `/tasks/${token}/complete`, { key: RKEY, body: { output: { lines: 3 } } }), sleep(4000).then(() => undefined)]);
      expect(done, 'the completion never answered').toBeDefined();
      expect(done!.status).toBe(200);
      expect(done!.body).toMatchObject({ status: 'completed', committed: true });
      expect(Date.now() - started).toBeLessThan(2000);
      const { status, events } = await toEnd({ url }, id);
      expect(status).toBe('completed');
      expect(events.map((e) => e.type)).not.toContain('task.stale_outcome');
      expect(events.filter((e) => e.type === 'task.warning').map((e) => e['code'])).toEqual(['DeclaredFileMissing']);
    } finally {
      stuck.destroy();
    }
  }, 20_000);

  test('a long upload alone, longer than the lease, keeps the task: the file is synced', async () => {
    const { id, token } = await claimOne();
    const chunks = 16;
    const s = await rawPut(token, chunks * 10);
    let answer = '';
    s.on('data', (d: Buffer) => (answer += d.toString()));
    try {
      // 16 pieces 200 ms apart: 3.2 s, more than twice the lease, and no heartbeat
      for (let i = 0; i < chunks; i++) {
        s.write(`line ${String(i).padStart(4, '0')}\n`);
        await sleep(200);
      }
      const end = Date.now() + 3000;
      while (!answer.includes('\r\n\r\n{') && Date.now() < end) await sleep(20);
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    } finally {
      s.destroy();
    }
    const done = await api(url, 'POST', `/tasks/${token}/complete`, { key: RKEY, body: { output: { lines: chunks } } });
    expect(done.body).toMatchObject({ status: 'completed', committed: true });
    const { status, events } = await toEnd({ url }, id);
    expect(status).toBe('completed');
    expect(events.filter((e) => e.type === 'task.file').map((e) => [e['direction'], e['key'], e['size']])).toEqual([['synced', 'summary', chunks * 10]]);
  }, 20_000);
});

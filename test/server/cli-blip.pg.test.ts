/**
 * `baton run FILE --server URL` rides out the server's own database going away for a moment. The server
 * (a real one on a loopback port) keeps its runs in PostgreSQL behind a TCP proxy; the CLI reaches the
 * server through another. Mid-run both are cut: the CLI's stream for 300 ms, the database for 3 s. The
 * CLI's stream comes back while the database is still away, so the server answers it 503 (its store
 * unreachable): the CLI asks again until it is back, and follows the run to its end, every event once.
 * Before, that 503 ended `baton run --server` with exit 2 while the run went on. A start whose answer is
 * lost (held, then the connection reset) is sent again under the id the command chose: one run.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine, openStore, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, startServer, type BatonServer } from '@baton-run/baton/server';
import type { CliIo } from '../../src/cli/io.js';
import { run as cli } from '../../src/cli/main.js';
import { testDatabase } from '../helpers/pg.js';
import { until } from '../helpers/spawn.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { agents, CHAIN, KEYS, KEYS_ENV, Latch, SLOW } from './harness.js';

function io(cwd: string): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => (out += s), stderr: (s) => (err += s), isTTY: false, cwd, env: {}, out: () => out, err: () => err };
}

const db = testDatabase('baton_cli_blip');
const dir = mkdtempSync(join(tmpdir(), 'baton-cli-blip-'));
const latch = new Latch();
let dbProxy: TcpProxy;
let httpProxy: TcpProxy;
let store: RunStore;
let changes: RunStore;
let server: BatonServer;
let via: string;

beforeAll(async () => {
  await db.create();
  const u = new URL(db.url);
  dbProxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
  const url = dbProxy.rewrite(db.url);
  store = await openStore(url, { cwd: dir });
  changes = await openStore(url, { cwd: dir });
  const engine = createEngine({ store, agents: agents(latch), concurrency: 8, leaseMs: 10_000 });
  server = await startServer({ engine, port: 0, keys: parseKeysEnv(KEYS_ENV), changes, cwd: dir, log: () => undefined, graceMs: 100 });
  httpProxy = await startTcpProxy({ host: '127.0.0.1', port: server.port });
  via = `http://127.0.0.1:${httpProxy.port}`;
  writeFileSync(join(dir, 'slow.yaml'), SLOW);
  writeFileSync(join(dir, 'chain.yaml'), CHAIN);
}, 60_000);

afterAll(async () => {
  latch.release();
  dbProxy?.heal();
  httpProxy?.heal();
  httpProxy?.releaseReplies();
  await server?.close();
  await changes?.close();
  await store?.close();
  await httpProxy?.close();
  await dbProxy?.close();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

test('the server’s database away for 3 s mid-run: the CLI’s stream is answered 503, asks again, and follows the run to its end', async () => {
  const t = io(dir);
  const done = cli(['run', 'slow.yaml', '--server', via, '--api-key', KEYS.operator, '--run-id', 'blip-run', '--json'], t);
  // the three attempts run (each waits for the latch): the run is under way and the CLI follows it
  await until(() => latch.running === 3, 15_000);
  await until(() => t.err().includes('blip-run'), 5_000);
  const dbCut = dbProxy.cut(3_000);
  await httpProxy.cut(300);
  await dbCut;
  // the database is back: the attempts finish, the run completes
  latch.release();
  expect(await done, t.err()).toBe(0);
  const result = JSON.parse(t.out()) as { status: string; events: { seq: number }[] };
  expect(result.status).toBe('completed');
  expect(result.events.map((e) => e.seq)).toEqual(result.events.map((_, i) => i + 1));
  expect(result.events).toEqual(JSON.parse(JSON.stringify(await store.events('blip-run'))));
}, 60_000);

test('a start whose answer was lost is sent again under the id the command chose: one run, followed to its end', async () => {
  const before = (await store.runs({ limit: 1000 })).length;
  const t = io(dir);
  httpProxy.holdReplies();
  const done = cli(['run', 'chain.yaml', '--server', via, '--api-key', KEYS.operator, '--json'], t);
  // the run was created (its answer held on the way back); then the connection is lost with the answer
  await until(async () => (await store.runs({ limit: 1000 })).length === before + 1, 15_000);
  const cut = httpProxy.cut(300);
  httpProxy.releaseReplies();
  await cut;
  expect(await done, t.err()).toBe(0);
  expect(t.err()).toMatch(/server unavailable, retrying/);
  expect(t.err()).not.toMatch(/already started/);
  const result = JSON.parse(t.out()) as { runId: string; status: string };
  expect(result.status).toBe('completed');
  const runs = await store.runs({ limit: 1000 });
  expect(runs.length).toBe(before + 1);
  expect(runs.map((r) => r.runId)).toContain(result.runId);
}, 60_000);

/**
 * The loopback TCP proxy of the chaos tests: it forwards bytes both ways, `cut(ms)` drops every live
 * connection and refuses new ones until the cut ends, `pause()` holds bytes without closing anything,
 * `blackhole()` kills the live connections silently.
 * Against a loopback echo server, and once against the real PostgreSQL (a pg client sees the cut as a
 * connection error, and a new client gets through once it is over).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PG_SERVER } from './pg.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

let echo: Server;
let echoPort = 0;
const proxies: TcpProxy[] = [];

beforeAll(async () => {
  echo = createServer((s) => {
    s.on('data', (d) => s.write(d));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as { port: number }).port;
});
afterAll(async () => {
  for (const p of proxies) await p.close();
  await new Promise<void>((r) => echo.close(() => r()));
});

async function proxy(port = echoPort): Promise<TcpProxy> {
  const p = await startTcpProxy({ host: '127.0.0.1', port });
  proxies.push(p);
  return p;
}

/** A connected socket and what it has received so far; `closed` settles when the socket closes. */
async function client(port: number): Promise<{ s: Socket; got: () => string; closed: Promise<void> }> {
  const s = connect({ host: '127.0.0.1', port });
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString()));
  s.on('error', () => undefined);
  const closed = new Promise<void>((r) => s.on('close', () => r()));
  await new Promise<void>((resolve, reject) => {
    s.once('connect', resolve);
    s.once('error', reject);
  });
  return { s, got: () => got, closed };
}

async function until(check: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('tcp proxy', () => {
  test('blackhole(): a live connection goes dead for good (bytes dropped, nothing closed) while a new one works', async () => {
    const p = await proxy();
    const old = await client(p.port);
    old.s.write('a');
    await until(() => old.got() === 'a');
    p.blackhole();
    old.s.write('b');
    let closed = false;
    void old.closed.then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 200));
    expect(old.got()).toBe('a');
    expect(closed).toBe(false);
    const fresh = await client(p.port);
    fresh.s.write('c');
    await until(() => fresh.got() === 'c');
    old.s.destroy();
    fresh.s.destroy();
  });

  test('forwards bytes both ways', async () => {
    const p = await proxy();
    const c = await client(p.port);
    c.s.write('hello');
    await until(() => c.got() === 'hello');
    expect(p.stats()).toMatchObject({ accepted: 1, live: 1, refused: 0 });
    c.s.destroy();
    await until(() => p.stats().live === 0);
  });

  test('cut(ms) closes live connections, refuses new ones while it lasts, then (heal) lets them through', async () => {
    const p = await proxy();
    const c = await client(p.port);
    const over = p.cut(60_000); // ended by heal() below: a loaded machine cannot outlast it
    await c.closed; // the live connection is gone
    expect(p.stats().live).toBe(0);
    // a new connection during the cut is accepted by the kernel and reset at once: no byte gets through
    // (the reset may even beat the client's own 'connect')
    const s = connect({ host: '127.0.0.1', port: p.port });
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString()));
    s.on('error', () => undefined);
    s.on('connect', () => s.write('x'));
    await new Promise<void>((r) => s.on('close', () => r()));
    expect(got).toBe('');
    expect(p.stats().refused).toBe(1);
    p.heal();
    await over;
    const after = await client(p.port);
    after.s.write('back');
    await until(() => after.got() === 'back');
    after.s.destroy();
    expect(p.stats().cuts).toBe(1);
  });

  test('a cut ends by itself after its time', async () => {
    const p = await proxy();
    await p.cut(50);
    const c = await client(p.port);
    c.s.write('later');
    await until(() => c.got() === 'later');
    c.s.destroy();
  });

  test('pause() holds bytes without closing; resume() delivers them', async () => {
    const p = await proxy();
    const c = await client(p.port);
    p.pause();
    c.s.write('held');
    await new Promise((r) => setTimeout(r, 100));
    expect(c.got()).toBe('');
    expect(p.stats().live).toBe(1);
    p.resume();
    await until(() => c.got() === 'held');
    c.s.destroy();
  });

  test('close() ends a cut under way: whoever awaits it is released', async () => {
    const p = await startTcpProxy({ host: '127.0.0.1', port: echoPort });
    const over = p.cut(60_000);
    await p.close();
    await over;
  });

  test('in front of PostgreSQL: a cut fails the client, a new client connects after it', async () => {
    const target = new URL(PG_SERVER);
    const p = await proxy(Number(target.port || 5432));
    const url = p.rewrite(`${PG_SERVER}/postgres`);
    expect(new URL(url).port).toBe(String(p.port));
    const c1 = new pg.Client({ connectionString: url });
    const errors: Error[] = [];
    c1.on('error', (e) => errors.push(e));
    await c1.connect();
    expect((await c1.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    const over = p.cut(60_000);
    await expect(c1.query('SELECT pg_sleep(0.05)')).rejects.toThrow();
    const refused = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    refused.on('error', () => undefined);
    await expect(refused.connect()).rejects.toThrow();
    p.heal();
    await over;
    const c2 = new pg.Client({ connectionString: url });
    await c2.connect();
    expect((await c2.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    await c2.end();
    await c1.end().catch(() => undefined);
  });
});

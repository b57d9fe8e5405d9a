/**
 * A run with a long event log (a 1,500-item fan-out: about 4,500 events) behind a real server on a
 * loopback port, over SQLite: a page of its events reads what it shows (and a chunk more at most when
 * filtered), not the whole log after the cursor, and a stream from its start delivers every event once,
 * in order, a chunk of the store at a time; an unknown phase is named without listing every item. The
 * store is the real one; a wrapper counts what its `events` returned.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine, openStore, type RunStore } from '@baton-run/baton';
import { startServer, type BatonServer } from '@baton-run/baton/server';
import { api } from './harness.js';
import { eventsOf, readStream } from './sse.js';

const FAN = `openintent: "1.0"
info: {name: fan}
x-trigger: {items: array}
workflow:
  each:
    assign: x
    for_each: $trigger.items
    outputs: {n: number}
`;

let dir: string;
let store: RunStore;
let server: BatonServer;
/** Events the store's `events` returned since the last reset. */
let read = 0;
/** The most events one call of `events` returned since the last reset. */
let largest = 0;
let total = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-long-log-'));
  store = await openStore(join(dir, 'baton.db'), { cwd: dir });
  const counted = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'events') {
        return async (...args: Parameters<RunStore['events']>) => {
          const got = await target.events(...args);
          read += got.length;
          largest = Math.max(largest, got.length);
          return got;
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const engine = createEngine({ store: counted, agents: { x: (ctx) => ({ n: ctx.item?.index ?? 0 }) }, concurrency: 16 });
  server = await startServer({ engine, port: 0, keys: [], log: () => undefined, graceMs: 100 });
  const r = await api(server.url, 'POST', '/runs', { body: { workflow: FAN, run_id: 'long', trigger: { items: Array.from({ length: 1500 }, (_, i) => i) } } });
  expect(r.status).toBe(201);
  const s = await readStream(`${server.url}/runs/long/events?type=run.completed,run.failed`, { timeoutMs: 60_000 });
  expect(s.ended).toBe(true);
  total = (await store.events('long')).length;
}, 120_000);

afterAll(async () => {
  await server?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a page reads what it shows: every page of 100, through the whole log, each event once', async () => {
  expect(total).toBeGreaterThan(4000);
  read = 0;
  const first = await api(server.url, 'GET', '/runs/long/events?limit=100');
  expect((first.body['events'] as unknown[]).length).toBe(100);
  // the page and one more (to know there is a next page), not the 4,500 after it
  expect(read).toBeLessThanOrEqual(101);
  read = 0;
  const seqs: number[] = [];
  let cursor: string | null = null;
  do {
    const page: Awaited<ReturnType<typeof api>> = await api(server.url, 'GET', `/runs/long/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    seqs.push(...(page.body['events'] as { seq: number }[]).map((e) => e.seq));
    cursor = page.body['next_cursor'] as string | null;
  } while (cursor);
  expect(seqs).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  // each page read its own events and the next one: about the log once, never the log per page
  expect(read).toBeLessThanOrEqual(total + Math.ceil(total / 100));
});

test('a filtered page reads a chunk at a time until it has its page', async () => {
  read = 0;
  const page = await api(server.url, 'GET', '/runs/long/events?type=task.completed&limit=10');
  expect((page.body['events'] as { type: string }[]).map((e) => e.type)).toEqual(Array(10).fill('task.completed'));
  expect(read).toBeLessThanOrEqual(2000);
  const rest = await api(server.url, 'GET', '/runs/long/events?type=run.completed&limit=10');
  expect((rest.body['events'] as { type: string }[]).map((e) => e.type)).toEqual(['run.completed']);
  expect(rest.body['next_cursor']).toBeNull();
});

test('a stream from the start delivers every event once, in order, and ends, reading a chunk at a time', async () => {
  largest = 0;
  const s = await readStream(`${server.url}/runs/long/events`, { timeoutMs: 60_000 });
  expect(s.ended).toBe(true);
  expect(eventsOf(s.messages).map((e) => e.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  expect(largest).toBeLessThanOrEqual(1000);
  const resumed = await readStream(`${server.url}/runs/long/events`, { lastEventId: String(total - 1500), timeoutMs: 60_000 });
  expect(eventsOf(resumed.messages).map((e) => e.seq)).toEqual(Array.from({ length: 1500 }, (_, i) => total - 1500 + i + 1));
});

test("an unknown phase of a fan-out run is 404 naming the phases, not each of the fan-out's items", async () => {
  for (const name of ['nope', 'each%5B1500%5D']) {
    const r = await api(server.url, 'GET', `/runs/long/phases/${name}`);
    expect(r.status).toBe(404);
    const message = (r.body['error'] as { code: string; message: string }).message;
    expect(r.body['error']).toMatchObject({ code: 'unknown-phase' });
    expect(message).toMatch(/\(phases: each; and 1500 fan-out items/);
    expect(message.length).toBeLessThan(400);
  }
  expect((await api(server.url, 'GET', '/runs/long/phases/each%5B7%5D')).body).toMatchObject({ name: 'each[7]', status: 'completed' });
});

/**
 * Requests at the edges of the API's grammar, against a real server on a loopback port (SQLite): a
 * trailing slash, an event type that does not exist, every `invalid-request` with its `issues`, and
 * `baton run --server` flags that would be silently ignored there.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run as cli } from '../../src/cli/main.js';
import { CHAIN, KEYS, api, startHarness, startRun, toEnd, type Harness } from './harness.js';
import { readStream } from './sse.js';

let h: Harness;
let runId: string;

beforeAll(async () => {
  h = await startHarness('sqlite');
  runId = await startRun(h, CHAIN);
  await toEnd(h, runId);
}, 60_000);
afterAll(async () => {
  await h?.close();
});

describe('a path with a trailing slash', () => {
  test('is 404 naming the path without it, never a 405 that asks for the method used', async () => {
    for (const [method, path] of [
      ['GET', '/runs/'],
      ['GET', `/runs/${runId}/`],
      ['POST', `/runs/${runId}/cancel/`],
      ['GET', '/health/'],
    ] as const) {
      const r = await api(h.url, method, path, { key: KEYS.admin });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body).toMatchObject({ error: { code: 'not-found' } });
      expect(r.headers.get('allow')).toBeNull();
    }
    // another method on a route's path is still 405 with Allow
    const put = await api(h.url, 'PUT', '/runs/', { key: KEYS.admin });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    const del = await api(h.url, 'DELETE', `/runs/${runId}`, { key: KEYS.admin });
    expect(del.status).toBe(405);
    expect(del.headers.get('allow')).toBe('GET');
  });
});

describe('GET /runs/{id}/events?type=', () => {
  test('a type that is no event type is 400, on a page and on a stream; known types filter', async () => {
    for (const accept of [undefined, 'text/event-stream']) {
      const r = await api(h.url, 'GET', `/runs/${runId}/events?type=task.completed,task.complete`, { key: KEYS.reader, ...(accept ? { headers: { accept } } : {}) });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error: { code: 'invalid-request', issues: [{ path: '?type' }] } });
    }
    const page = await api(h.url, 'GET', `/runs/${runId}/events?type=task.completed,run.completed`, { key: KEYS.reader });
    expect(page.status).toBe(200);
    expect((page.body['events'] as { type: string }[]).map((e) => e.type)).toEqual(['task.completed', 'task.completed', 'run.completed']);
    const s = await readStream(`${h.url}/runs/${runId}/events?type=run.completed`, { key: KEYS.reader, timeoutMs: 10_000 });
    expect(s.messages.map((m) => m.event)).toEqual(['run.completed', 'end']);
  });

  test('the OpenAPI document lists the event types', async () => {
    const doc = (await api(h.url, 'GET', '/openapi.json')).body as { paths: Record<string, { get?: { parameters?: { name: string; schema: { pattern: string } }[] } }> };
    const type = doc.paths['/runs/{id}/events']?.get?.parameters?.find((p) => p.name === 'type');
    expect(new RegExp(type!.schema.pattern).test('task.completed,gate.opened')).toBe(true);
    expect(new RegExp(type!.schema.pattern).test('task.complete')).toBe(false);
    expect(new RegExp(type!.schema.pattern).test('taskXcompleted')).toBe(false);
  });
});

describe('every invalid-request lists its issues', () => {
  test('a bad cursor, a parameter given twice, a query on a route that takes none', async () => {
    for (const [path, where] of [
      ['/runs?cursor=garbage', '?cursor'],
      [`/runs/${runId}/phases?cursor=garbage`, '?cursor'],
      [`/runs/${runId}/events?cursor=garbage`, '?cursor'],
      ['/runs?limit=2&limit=3', '?limit'],
      ['/workflows?x=1', '?x'],
    ] as const) {
      const r = await api(h.url, 'GET', path, { key: KEYS.reader });
      expect(r.status, path).toBe(400);
      expect(r.body, path).toMatchObject({ error: { code: 'invalid-request', issues: [{ path: where }] } });
    }
  });
});

describe('baton run --server', () => {
  test('--workspace is refused (the server reads and writes files in its own directory); nothing is started', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-edges-'));
    try {
      writeFileSync(join(dir, 'chain.yaml'), CHAIN);
      const before = (await h.store.runs({ limit: 1000 })).length;
      let err = '';
      const io: CliIo = { stdout: () => undefined, stderr: (s) => (err += s), isTTY: false, cwd: dir, env: {} };
      expect(await cli(['run', 'chain.yaml', '--server', h.url, '--api-key', KEYS.operator, '--workspace', dir], io)).toBe(2);
      expect(err).toMatch(/--workspace does not go with --server/);
      expect((await h.store.runs({ limit: 1000 })).length).toBe(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * A cursor a client made up (or mangled) on the paged routes: 400 `invalid-request` on every store,
 * never a query the store refuses (PostgreSQL answered a created_at of 1.5 or 1e20, or a NUL in the run
 * id, with a 503 `store` that named its URL).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CHAIN, KEYS, api, startHarness, startRun, toEnd, type Harness, type StoreKind } from './harness.js';

const cursor = (json: string): string => Buffer.from(json, 'utf8').toString('base64url');

describe.each<StoreKind>(['sqlite', 'postgres'])('forged cursors over the %s store', (kind) => {
  let h: Harness;
  let runId: string;
  beforeAll(async () => {
    h = await startHarness(kind);
    runId = await startRun(h, CHAIN);
    await toEnd(h, runId);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  test('GET /runs and /runs/{id}/events: 400 invalid-request; a cursor they gave still pages', async () => {
    for (const path of [
      `/runs?cursor=${cursor('{"c":1.5,"r":"a"}')}`,
      `/runs?cursor=${cursor('{"c":1e20,"r":"a"}')}`,
      `/runs?cursor=${cursor('{"c":1e400,"r":"a"}')}`,
      `/runs?cursor=${cursor('{"c":1,"r":"a\\u0000b"}')}`,
      `/runs/${runId}/events?cursor=${cursor('{"s":1.5}')}`,
      `/runs/${runId}/events?cursor=${cursor('{"s":-3}')}`,
      `/runs/${runId}/events?cursor=${cursor('{"s":1e400}')}`,
    ]) {
      const r = await api(h.url, 'GET', path, { key: KEYS.reader });
      expect(r.status, path).toBe(400);
      expect(r.body, path).toMatchObject({ error: { code: 'invalid-request', issues: [{ path: '?cursor' }] } });
    }
    await startRun(h, CHAIN);
    const first = await api(h.url, 'GET', '/runs?limit=1', { key: KEYS.reader });
    const next = await api(h.url, 'GET', `/runs?limit=1&cursor=${first.body['next_cursor'] as string}`, { key: KEYS.reader });
    expect(next.status).toBe(200);
    expect((next.body['runs'] as { run_id: string }[]).map((r) => r.run_id)).toEqual([runId]);
  });
});

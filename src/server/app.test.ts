/** The app answers in memory (`app.request`), without a port: what a library user embedding it gets. */
import { describe, expect, test } from 'vitest';
import { createEngine } from '../api/engine.js';
import { MemoryStore } from '../store/memory.js';
import { createServerApp } from './app.js';
import { parseKeysEnv } from './keys.js';

const KEY = 'in-memory-key-0123456789';

describe('createServerApp in memory', () => {
  test('routes, keys and bad bodies without a socket', async () => {
    const store = new MemoryStore();
    const engine = createEngine({ store, stubAgents: true });
    const server = await createServerApp({ engine, keys: parseKeysEnv(`ops:operator:${KEY}`), bodyLimit: 1024, log: () => undefined });
    const { app } = server;
    try {
      expect((await app.request('/openapi.json')).status).toBe(200);
      expect((await app.request('/runs')).status).toBe(401);
      const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
      const bad = await app.request('/runs', { method: 'POST', headers: auth, body: '{"workflow": "x", "extra": 1}' });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ error: { code: 'invalid-request', issues: [{ path: '/extra' }] } });
      expect((await app.request('/runs', { method: 'POST', headers: auth, body: JSON.stringify({ workflow: 'x'.repeat(2000) }) })).status).toBe(413);
      const wf = 'openintent: "1.0"\ninfo: {name: m}\nworkflow:\n  a: {assign: x, outputs: {n: number}}\n';
      const started = await app.request('/runs', { method: 'POST', headers: auth, body: JSON.stringify({ workflow: wf, run_id: 'mem-1' }) });
      expect(started.status).toBe(201);
      // a timeout whose milliseconds are past a number: said as the field sent (it said `timeoutMs`), nothing stored
      const huge = await app.request('/runs', { method: 'POST', headers: auth, body: JSON.stringify({ workflow: wf, run_id: 'mem-huge', timeout_s: 1e306 }) });
      expect(huge.status).toBe(400);
      expect(await huge.json()).toMatchObject({ error: { code: 'invalid-request', message: expect.stringMatching(/^timeout_s must be/) as unknown } });
      expect(await store.run('mem-huge')).toBeUndefined();
      // a deadline no store holds (PostgreSQL answered 503 store, 22003; memory and SQLite took it): refused on every store
      const far = await app.request('/runs', { method: 'POST', headers: auth, body: JSON.stringify({ workflow: wf, run_id: 'mem-far', timeout_s: 1e16 }) });
      expect(far.status).toBe(400);
      expect(await far.json()).toMatchObject({ error: { code: 'invalid-request' } });
      expect(await store.run('mem-far')).toBeUndefined();
      expect((await store.run('mem-1'))?.status).toBe('running');
      // no worker runs here (startServer runs one): the run waits in the store
      expect(await (await app.request('/runs/mem-1', { headers: auth })).json()).toMatchObject({ run_id: 'mem-1', phases: { a: { status: 'ready' } } });
    } finally {
      server.close();
      await engine.close();
    }
  });

  test('numbers in a query are finite decimals; status filters name known statuses', async () => {
    const store = new MemoryStore();
    const engine = createEngine({ store, stubAgents: true });
    const server = await createServerApp({ engine, keys: parseKeysEnv(`ops:operator:${KEY},ag:agent:a:${KEY}-agent`), log: () => undefined });
    const { app } = server;
    try {
      const auth = { authorization: `Bearer ${KEY}` };
      const wf = 'openintent: "1.0"\ninfo: {name: m}\nworkflow:\n  a: {assign: x, outputs: {n: number}}\n';
      expect((await app.request('/runs', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ workflow: wf, run_id: 'q-1' }) })).status).toBe(201);
      // Infinity passed ajv's range checks: limit=1e400 reached the store (SQLite: 503 datatype mismatch), wait=Infinity answered at once
      for (const [path, name] of [
        ['/runs?limit=1e400', 'limit'],
        ['/runs?limit=Infinity', 'limit'],
        ['/runs?limit=0x10', 'limit'],
        ['/runs/q-1/events?after=1e999', 'after'],
        ['/runs/q-1/phases?limit=%207', 'limit'],
      ] as const) {
        const res = await app.request(path, { headers: auth });
        expect(res.status, path).toBe(400);
        expect(await res.json(), path).toMatchObject({ error: { code: 'invalid-request', issues: [{ path: `?${name}` }] } });
      }
      const claim = await app.request('/agents/a/claim?wait=Infinity', { method: 'POST', headers: { authorization: `Bearer ${KEY}-agent` } });
      expect(claim.status).toBe(400);
      expect(await claim.json()).toMatchObject({ error: { code: 'invalid-request', issues: [{ path: '?wait' }] } });
      expect((await app.request('/runs?limit=1e1', { headers: auth })).status).toBe(200);
      // a status that is no phase's or gate's was an empty page
      for (const path of ['/runs/q-1/phases?status=complete', '/runs/q-1/gates?status=opened', '/runs/q-1/phases?status=ready,bogus']) {
        const res = await app.request(path, { headers: auth });
        expect(res.status, path).toBe(400);
        expect(await res.json(), path).toMatchObject({ error: { code: 'invalid-request', issues: [{ path: '?status' }] } });
      }
      expect(await (await app.request('/runs/q-1/phases?status=ready,awaiting_approval', { headers: auth })).json()).toMatchObject({ phases: [{ name: 'a', status: 'ready' }] });
      expect(await (await app.request('/runs/q-1/gates?status=open,answered', { headers: auth })).json()).toEqual({ gates: [], next_cursor: null });
    } finally {
      server.close();
      await engine.close();
    }
  });

  test('/openapi.json: a body is required only where `{}` is refused', async () => {
    const engine = createEngine({ store: new MemoryStore(), stubAgents: true });
    const server = await createServerApp({ engine, log: () => undefined });
    try {
      const doc = (await (await server.app.request('/openapi.json')).json()) as { paths: Record<string, Record<string, { requestBody?: { required: boolean } }>> };
      const required = (path: string): boolean | undefined => doc.paths[path]?.['post']?.requestBody?.required;
      // `curl -X POST .../cancel` and a bare heartbeat are documented (an empty body is `{}`)
      for (const path of ['/runs/{id}/cancel', '/runs/{id}/gates/{gate}/approve', '/runs/{id}/gates/{gate}/deny', '/tasks/{token}/heartbeat', '/tasks/{token}/release', '/agents/{agent}/claim']) expect(required(path), path).toBe(false);
      for (const path of ['/runs', '/workflows/validate', '/runs/{id}/rerun', '/tasks/{token}/complete', '/tasks/{token}/fail', '/tasks/{token}/cost']) expect(required(path), path).toBe(true);
      // Last-Event-ID resumes a run's stream; the all-runs stream takes none
      const headers = (path: string): string[] => ((doc.paths[path]?.['get'] as { parameters?: { name: string; in: string }[] } | undefined)?.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
      expect(headers('/runs/{id}/events')).toEqual(['Last-Event-ID']);
      expect(headers('/events')).toEqual([]);
      // the claim's answer lists every field it may have (traceparent when the server traces)
      const claimed = (doc.paths['/agents/{agent}/claim']?.['post'] as { responses: Record<string, { content: Record<string, { schema: { properties: object } }> }> }).responses['200']!.content['application/json']!.schema.properties;
      expect(Object.keys(claimed)).toEqual(expect.arrayContaining(['token', 'input', 'item', 'remaining_budget_usd', 'last_checkpoint', 'traceparent']));
      const res = await server.app.request('/runs/x/cancel', { method: 'POST' });
      expect(res.status).toBe(404);
    } finally {
      server.close();
      await engine.close();
    }
  });
  test('a filtered page goes on where the last one ended when items leave the filter between pages: no gap, no repeat', async () => {
    const engine = createEngine({ store: new MemoryStore(), stubAgents: true });
    const server = await createServerApp({ engine, keys: parseKeysEnv(`ops:operator:${KEY}`), log: () => undefined });
    const { app } = server;
    try {
      const auth = { authorization: `Bearer ${KEY}` };
      const wf = ['openintent: "1.0"', 'info: {name: m}', 'workflow:', ...['a', 'b', 'c', 'd', 'e'].map((n) => `  ${n}: {assign: x, outputs: {n: number}, x-require_approval: true}`), ''].join('\n');
      expect((await app.request('/runs', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ workflow: wf, run_id: 'p-1' }) })).status).toBe(201);
      const walk = async (list: 'gates' | 'phases', filter: string, field: 'id' | 'name', decide: (first: string) => Promise<void>): Promise<string[]> => {
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page = (await (await app.request(`/runs/p-1/${list}?${filter}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, { headers: auth })).json()) as Record<string, unknown>;
          const items = page[list] as Record<string, string>[];
          seen.push(...items.map((i) => i[field]!));
          // the first item shown leaves the filter before the next page is read
          if (pages === 0) await decide(items[0]![field]!);
          cursor = page['next_cursor'] as string | null;
          pages++;
        } while (cursor && pages < 10);
        return seen;
      };
      // a decided gate is no longer open: the open gates after it were skipped (the cursor was an offset in the filtered list)
      expect(await walk('gates', 'status=open', 'id', async (g) => void (await engine.approve('p-1', g, 'ops')))).toEqual(['approve-a', 'approve-b', 'approve-c', 'approve-d', 'approve-e']);
      // likewise a phase whose gate was decided is no longer awaiting approval
      expect(await walk('phases', 'status=awaiting_approval', 'name', async (p) => void (await engine.approve('p-1', `approve-${p}`, 'ops')))).toEqual(['b', 'c', 'd', 'e']);
      // unfiltered, and the last page has a match: no empty page after it
      const all = (await (await app.request('/runs/p-1/phases?limit=5', { headers: auth })).json()) as { next_cursor: string | null };
      expect(all.next_cursor).toBeNull();
    } finally {
      server.close();
      await engine.close();
    }
  });
});

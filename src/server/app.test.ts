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
      expect((await store.run('mem-1'))?.status).toBe('running');
      // no worker runs here (startServer runs one): the run waits in the store
      expect(await (await app.request('/runs/mem-1', { headers: auth })).json()).toMatchObject({ run_id: 'mem-1', phases: { a: { status: 'ready' } } });
    } finally {
      server.close();
      await engine.close();
    }
  });
});

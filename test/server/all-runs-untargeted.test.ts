/**
 * The all-runs stream (`GET /events`) when the store cannot name the runs that changed (a library server
 * on a store without `changes`, PostgreSQL's LISTEN coming back, the hub forgetting past 10,000 runs):
 * each read is the newest 500 and the runs under way. An old run under way that ENDS between two such
 * reads is in neither (it is old, and no longer under way): its last move (cancelled) was never sent, and
 * a dashboard showed it waiting for ever. The stream now reads again, by id, the runs it last sent as
 * under way that such a read did not return.
 */
import { describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { WorkflowSpec } from '../../src/api/spec.js';
import { createServerApp } from '../../src/server/app.js';
import { sseMessages } from '../../src/server/client.js';
import { parseKeysEnv } from '../../src/server/keys.js';
import { MemoryStore } from '../../src/store/memory.js';

const KEY = 'all-runs-untargeted-key-0123456789';
const GATED = `openintent: "1.0"
info: {name: gated}
governance:
  require_approval: {approvers: [ops]}
workflow:
  a: {assign: x, outputs: {n: number}}
`;
const PLAIN = `openintent: "1.0"
info: {name: plain}
workflow:
  a: {assign: x, outputs: {n: number}}
`;

describe('the all-runs stream on a store that cannot name the runs that changed', () => {
  test('an old run under way that is cancelled is sent cancelled', async () => {
    const store = new MemoryStore();
    // as a store whose takeChanged does not name every commit: every wake reads the newest runs and those under way
    Object.defineProperty(store, 'changesComplete', { value: false });
    const engine = createEngine({ store, stubAgents: true });
    const server = await createServerApp({ engine, keys: parseKeysEnv(`ops:admin:${KEY}`), log: () => undefined });
    const ctl = new AbortController();
    try {
      const old = await engine.create(WorkflowSpec.fromString(GATED), { runId: 'old-gated' });
      const plain = WorkflowSpec.fromString(PLAIN);
      for (let i = 0; i < 510; i += 51) await Promise.all(Array.from({ length: 51 }, (_, k) => engine.create(plain, { runId: `new-${String(i + k).padStart(3, '0')}` })));
      const res = await server.app.request('/events', { headers: { authorization: `Bearer ${KEY}`, accept: 'text/event-stream' }, signal: ctl.signal });
      expect(res.status).toBe(200);
      const rows: { run_id: string; status: string }[] = [];
      const reading = (async () => {
        for await (const m of sseMessages(res.body!)) {
          if (m.event !== 'run') continue;
          rows.push(JSON.parse(m.data) as { run_id: string; status: string });
          if (rows.some((r) => r.run_id === old && r.status === 'cancelled')) return;
        }
      })();
      await until(() => rows.length >= 501);
      expect(rows.filter((r) => r.run_id === old).map((r) => r.status)).toEqual(['waiting']);
      await engine.cancel(old, 'not needed');
      expect((await store.run(old))!.status).toBe('cancelled');
      await Promise.race([reading, new Promise((_, reject) => setTimeout(() => reject(new Error('the old run was never sent cancelled')), 5000))]);
      expect(rows.filter((r) => r.run_id === old).map((r) => r.status)).toEqual(['waiting', 'cancelled']);
    } finally {
      ctl.abort();
      server.close();
      await engine.close();
      await store.close();
    }
  }, 30_000);
});

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

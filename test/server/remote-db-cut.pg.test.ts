/**
 * Remote agents while the server's PostgreSQL is cut mid-run (a real server on a loopback port, its
 * database behind a TCP proxy that resets every connection and refuses new ones for 2 s). Sixteen
 * pollers of `createRemoteAgent` work through a chain and a fan of `x-remote: true` phases; the cut lands
 * while tasks are claimed, running and completing. Both runs end completed, every phase ran once (the
 * handlers count) and has one `task.completed` in the stored log: no completion lost in the cut, none
 * applied twice, no task handed out twice.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createEngine, createRemoteAgent, openStore, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, RemoteAgents, startServer } from '@baton-run/baton/server';
import { testDatabase } from '../helpers/pg.js';
import { until } from '../helpers/spawn.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const db = testDatabase('baton_remote_db_cut');
const N = 60;
const ADMIN = 'admin-key-0123456789abcdef';
const AGENT = 'agent-key-0123456789abcdef';
let proxy: TcpProxy;
let store: RunStore;

function workflow(name: string, chain: boolean): string {
  let w = `openintent: "1.0"\ninfo: {name: ${name}}\nagents:\n  r: {x-remote: true}\nworkflow:\n`;
  for (let i = 0; i < N; i++) w += `  p${i}:\n    assign: r\n${chain && i > 0 ? `    depends_on: [p${i - 1}]\n` : ''}    outputs: {n: number}\n`;
  return w;
}

beforeAll(async () => {
  await db.create();
  proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(db.url).port || 5432) });
  store = await openStore(proxy.rewrite(db.url));
});

afterAll(async () => {
  await store?.close();
  await proxy?.close();
  await db.drop();
});

test('a 2 s cut of the database mid-run: both runs complete, every remote phase ran and completed once', async () => {
  const remote = new RemoteAgents({ leaseMs: 5000 });
  const engine = createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent });
  const server = await startServer({ engine, keys: parseKeysEnv(`root:admin:${ADMIN},ag:agent:r:${AGENT}`), port: 0, remote, log: () => undefined, graceMs: 100 });
  const ran = new Map<string, number>();
  const agents = Array.from({ length: 4 }, () =>
    createRemoteAgent({
      url: server.url,
      key: AGENT,
      agent: 'r',
      concurrency: 4,
      handler: async (ctx) => {
        const k = `${ctx.runId}/${ctx.phase}`;
        ran.set(k, (ran.get(k) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 10));
        return { n: 1 };
      },
    }),
  );
  const H = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  try {
    const ids: string[] = [];
    for (const [name, chain] of [['rchain', true], ['rfan', false]] as const) {
      const r = await fetch(`${server.url}/runs`, { method: 'POST', headers: H, body: JSON.stringify({ workflow: workflow(name, chain) }) });
      expect(r.status).toBe(201);
      ids.push(((await r.json()) as { run_id: string }).run_id);
    }
    // the cut lands mid-run: some phases ran, most are still to come
    await until(() => ran.size >= 10, 20_000);
    await proxy.cut(2000);
    expect(ran.size).toBeLessThan(2 * N);
    await until(async () => (await Promise.all(ids.map((id) => store.run(id)))).every((r) => r?.status === 'completed' || r?.status === 'failed'), 60_000);
    for (const id of ids) {
      expect((await store.run(id))?.status).toBe('completed');
      const completed = (await store.events(id)).filter((e) => e.type === 'task.completed').map((e) => ('phase' in e ? e.phase : ''));
      expect(completed.length).toBe(N);
      expect(new Set(completed).size).toBe(N);
    }
    expect(ran.size).toBe(2 * N);
    expect(Math.max(...ran.values())).toBe(1);
  } finally {
    await Promise.all(agents.map((a) => a.stop()));
    await server.close();
    await engine.close();
  }
}, 120_000);

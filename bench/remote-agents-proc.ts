/**
 * A process of remote agents for the remote benches, so that the agents' HTTP client does not run on
 * the server's thread (remote agents are remote). Two kinds:
 * - `sdk`: `count` createRemoteAgent clients (one slot each, `claim_next`, heartbeats), as users run them;
 * - `raw`: `count` loops of the bare protocol over keep-alive connections (undici's Pool, as the sdk):
 *   claim with a wait, then complete with `claim_next` while a next task comes back. A light load
 *   generator, so that the figure is the server's and not the client library's.
 * Each output names its phase (`{i: N}`). On IPC `stop` it stops and sends back `{completed, handled,
 * duplicates, lost, cpuMs}`: completions answered 200, phases handed to a handler, phases handed more
 * than once, and (raw) completions answered 200 whose run had not committed them (`committed: false`).
 * Args: kind url key agent count [waitS].
 */
import { Pool } from 'undici';
import { createRemoteAgent } from '../src/index.js';

const [kind, url, key, agent, countText, waitText] = process.argv.slice(2) as [string, string, string, string, string, string | undefined];
const count = Number(countText);
const waitS = Number(waitText ?? 5);
const calls = new Map<string, number>();
const errors: string[] = [];
let completed = 0;
let notCommitted = 0;
const note = (e: unknown): void => {
  if (errors.length < 20) errors.push((e as Error).message);
};
const handle = (runId: string, phase: string): { i: number } => {
  const k = `${runId}/${phase}`;
  calls.set(k, (calls.get(k) ?? 0) + 1);
  return { i: Number(phase.replace(/^\D+/, '')) };
};

let stop: () => Promise<void>;
if (kind === 'sdk') {
  const agents = Array.from({ length: count }, () => createRemoteAgent({ url, key, agent, waitS, onError: note, handler: (ctx) => handle(ctx.runId, ctx.phase) }));
  stop = async () => {
    await Promise.all(agents.map((a) => a.stop(0)));
    completed = agents.reduce((s, a) => s + a.completed, 0);
  };
} else {
  const pool = new Pool(new URL(url).origin, { headersTimeout: 0, bodyTimeout: 0 });
  let stopping = false;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const post = async (path: string, body: string): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await pool.request({ path, method: 'POST', headers, body });
    const text = await res.body.text();
    return { status: res.statusCode, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
  };
  interface Task {
    token: string;
    run_id: string;
    phase: string;
  }
  const loop = async (): Promise<void> => {
    while (!stopping) {
      let t: Task | undefined;
      try {
        const c = await post(`/agents/${agent}/claim?wait=${waitS}`, '');
        if (c.status === 200) t = c.body as unknown as Task;
        while (t) {
          const r = await post(`/tasks/${t.token}/complete`, JSON.stringify({ output: handle(t.run_id, t.phase), claim_next: !stopping }));
          if (r.status !== 200) throw new Error(`complete answered ${r.status}: ${JSON.stringify(r.body)}`);
          completed++;
          if (r.body['committed'] !== true) notCommitted++;
          t = (r.body['next'] ?? undefined) as Task | undefined;
        }
      } catch (e) {
        note(e);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const loops = Array.from({ length: count }, () => loop());
  stop = async () => {
    stopping = true;
    await Promise.all(loops);
    await pool.destroy();
  };
}

process.send?.({ type: 'ready' });
const cpu0 = process.cpuUsage();
process.on('message', (m: { type: string }) => {
  if (m.type !== 'stop') return;
  void stop().then(() => {
    const cpu = process.cpuUsage(cpu0);
    let duplicates = 0;
    for (const v of calls.values()) if (v > 1) duplicates += v - 1;
    process.send?.({ type: 'stopped', cpuMs: (cpu.user + cpu.system) / 1000, completed, handled: calls.size, duplicates, notCommitted, errors });
    process.disconnect();
  });
});

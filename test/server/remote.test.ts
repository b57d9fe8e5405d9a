/**
 * Remote agents against a real `baton serve` app on a loopback port, over real stores: a workflow that
 * mixes a remote agent with in-process ones, an output refused (422) then fixed, a cancel seen through
 * the heartbeat, a remote agent that dies and its task handed back and done again, role checks, many
 * remote agents on a fan with no task completed twice, input and cost, and the Python example.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine, createRemoteAgent, type ClaimRejection, type Engine, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, RemoteAgents, ServerMetrics, startServer, type BatonServer } from '@baton-run/baton/server';
import { baton, until } from '../helpers/spawn.js';
import { CHAIN, KEYS, KEYS_ENV, Latch, agents, api, openTestStore, type StoreKind, startRun, toEnd } from './harness.js';
import { eventsOf, readStream } from './sse.js';

const RKEY = 'remote-r-key-0123456789abcdef';
const OTHER = 'remote-other-key-0123456789ab';
const LEASE_MS = 1500;
/**
 * The remote lease of the hubs whose tests hear of claim-time rejections: a rejection no claim was
 * waiting for is kept for the next claim for a lease, then dropped (docs/server.md). With 1.5 s, a run
 * followed to its end on PostgreSQL, or a Python process started, between the rejection and the claim
 * could outlast it on a loaded machine, and the claim got 204; 30 s is the server's default lease.
 */
const REJECTION_LEASE_MS = 30_000;
/** The servers' log lines (faults that are not a caller's): none expected. */
const logged: string[] = [];

const MIXED = `openintent: "1.0"
info: {name: mixed}
agents:
  r: {x-remote: true}
workflow:
  a:
    assign: x
    outputs: {n: number}
  b:
    assign: r
    depends_on: [a]
    inputs: {n: a.n}
    outputs: {m: string}
  c:
    assign: y
    depends_on: [b]
    inputs: {m: b.m}
    outputs: {m: string}
`;

/** Phases of agent `q`, served remotely by `--remote q` (no declaration in the workflow). */
function fan(n: number): string {
  let s = 'openintent: "1.0"\ninfo: {name: fan}\nworkflow:\n';
  for (let i = 0; i < n; i++) s += `  p${i}:\n    assign: q\n    outputs: {i: number}\n`;
  return s;
}

const ASKING = `openintent: "1.0"
info: {name: asking}
agents:
  r: {x-remote: true}
workflow:
  q:
    assign: r
    outputs: {answer: string}
`;

/** Phase `b` of the remote agent `r` reads `a.opt`, an output `a` may leave out (it does): its claim is rejected, UnresolvableInputError. */
const UNRESOLVABLE = `openintent: "1.0"
info: {name: unresolvable}
agents:
  r: {x-remote: true}
workflow:
  a:
    assign: x
    outputs: {n: number, opt: {type: string, required: false}}
  b:
    assign: r
    depends_on: [a]
    inputs: {o: a.opt}
    outputs: {m: string}
`;

/** Phase `after` of the remote agent `r` waits on `q`, whose agent asks a human: its claim is rejected while the question is open, UpstreamIntentSuspendedError. */
const SUSPENDED = `openintent: "1.0"
info: {name: suspended}
agents:
  r: {x-remote: true}
workflow:
  q:
    assign: asker
    outputs: {answer: string}
  after:
    assign: r
    depends_on: [q]
    inputs: {a: q.answer}
    outputs: {m: string}
`;

/** A for_each phase of the remote agent `r` over `$trigger.list` (`$item` as input `v`), with `outputs`. */
function remoteFan(name: string, outputs: string): string {
  return `openintent: "1.0"
info: {name: ${name}}
agents:
  r: {x-remote: true}
workflow:
  each:
    assign: r
    for_each: $trigger.list
    inputs: {v: $item}
    outputs: ${outputs}
`;
}

interface Remote {
  url: string;
  remote: RemoteAgents;
  engine: Engine;
  store: RunStore;
  server: BatonServer;
  close(): Promise<void>;
}

async function startRemote(kind: StoreKind, graceMs = 100, leaseMs = LEASE_MS): Promise<Remote> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-remote-'));
  const { store, changes, drop } = await openTestStore(kind, dir);
  const latch = new Latch();
  const metrics = new ServerMetrics();
  const remote = new RemoteAgents({ agents: ['q'], leaseMs });
  const engine = createEngine({
    store,
    agents: agents(latch),
    bindRun: remote.bindRun,
    concurrency: 32,
    leaseMs: 5000,
    onEvent: (e, s) => {
      metrics.onEvent(e, s);
      remote.onEvent(e, s);
    },
  });
  const server = await startServer({
    engine,
    port: 0,
    keys: parseKeysEnv(`${KEYS_ENV},rk:agent:r:${RKEY},ok:agent:other:${OTHER},qk:agent:q:${RKEY.replace('r-', 'q-')}`),
    metrics,
    remote,
    ...(changes ? { changes } : {}),
    cwd: dir,
    log: (line) => logged.push(line),
    graceMs,
  });
  return {
    url: server.url,
    remote,
    engine,
    store,
    server,
    async close() {
      latch.release();
      await server.close();
      await store.close();
      await drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const claim = (h: Remote, agent: string, key: string = RKEY, wait = 10) => api(h.url, 'POST', `/agents/${agent}/claim?wait=${wait}`, { key });
const task = (h: Remote, token: string, what: string, body: unknown = {}, key: string = RKEY) => api(h.url, 'POST', `/tasks/${token}/${what}`, { key, body });

describe.each<StoreKind>(['memory', 'sqlite', 'postgres'])('remote agents over the %s store', (kind) => {
  let h: Remote;
  beforeAll(async () => {
    h = await startRemote(kind);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  }, 60_000);

  test('a remote agent (createRemoteAgent) does its phase of a workflow whose other phases run in process', async () => {
    const seen: unknown[] = [];
    const agent = createRemoteAgent({
      url: h.url,
      key: RKEY,
      agent: 'r',
      waitS: 2,
      handler: (ctx) => {
        seen.push({ input: ctx.input, phase: ctx.phase, attempt: ctx.attempt, aborted: ctx.signal.aborted });
        return { m: `remote got ${JSON.stringify(ctx.input)}` };
      },
    });
    try {
      const id = await startRun(h, MIXED);
      const { status, events } = await toEnd(h, id);
      expect(status).toBe('completed');
      expect(seen).toEqual([{ input: { n: 1 }, phase: 'b', attempt: 1, aborted: false }]);
      const completed = events.filter((e) => e.type === 'task.completed');
      expect(completed.map((e) => e['phase'])).toEqual(['a', 'b', 'c']);
      expect(completed[1]!['output']).toEqual({ m: 'remote got {"n":1}' });
      expect(completed[2]!['output']).toEqual({ m: 'got {"m":"remote got {\\"n\\":1}"}' });
    } finally {
      await agent.stop(0);
    }
    expect(agent.completed).toBe(1);
  }, 60_000);

  test('a wrong output is refused with 422 and the RFC payload, the task stays claimed, the fixed output completes it', async () => {
    const id = await startRun(h, MIXED);
    const c = await claim(h, 'r');
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ run_id: id, phase: 'b', attempt: 1, agent: 'r', input: { n: 1 }, lease_ms: LEASE_MS });
    const token = c.body['token'] as string;
    const wrongType = await task(h, token, 'complete', { output: { m: 5 } });
    expect(wrongType.status).toBe(422);
    expect(wrongType.body['error']).toMatchObject({ code: 'OutputTypeMismatchError', error: 'OutputTypeMismatchError' });
    const missing = await task(h, token, 'complete', { output: { other: 1 } });
    expect(missing.status).toBe(422);
    expect(missing.body['error']).toMatchObject({ code: 'MissingOutputError' });
    expect((await task(h, token, 'heartbeat')).body).toMatchObject({ status: 'running', stop: false });
    const done = await task(h, token, 'complete', { output: { m: 'fixed' }, claim_next: true });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ status: 'completed', committed: true, next: null });
    // the same token again: refused and recorded, never applied
    const again = await task(h, token, 'complete', { output: { m: 'twice' } });
    expect(again.status).toBe(409);
    expect(again.body['error']).toMatchObject({ code: 'task-ended', status: 'completed' });
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('completed');
    const b = events.filter((e) => e['phase'] === 'b');
    expect(b.filter((e) => e.type === 'task.completed').map((e) => e['output'])).toEqual([{ m: 'fixed' }]);
    expect(b.filter((e) => e.type === 'task.agent_event').map((e) => (e['data'] as { error: string }).error)).toEqual(['OutputTypeMismatchError', 'MissingOutputError']);
    const stale = await waitForEvent(h, id, 'task.stale_outcome');
    expect(stale).toMatchObject({ phase: 'b', attempt: 1, outcome: 'completed', worker: 'remote agent rk' });
  }, 60_000);

  test('a cancelled run is seen through the heartbeat; the completion is then refused', async () => {
    const id = await startRun(h, MIXED);
    const c = await claim(h, 'r');
    const token = c.body['token'] as string;
    expect((await api(h.url, 'POST', `/runs/${id}/cancel`, { key: KEYS.operator, body: {} })).status).toBe(200);
    let beat = await task(h, token, 'heartbeat');
    for (let i = 0; i < 50 && beat.body['stop'] !== true; i++) {
      await new Promise((r) => setTimeout(r, 50));
      beat = await task(h, token, 'heartbeat');
    }
    expect(beat.status).toBe(200);
    expect(beat.body).toMatchObject({ stop: true, cancelled: true, status: 'aborted' });
    const late = await task(h, token, 'complete', { output: { m: 'late' } });
    expect(late.status).toBe(409);
    expect((await toEnd(h, id)).status).toBe('cancelled');
  }, 60_000);

  test('a remote agent that stops heartbeating loses its task: handed back, claimed again as attempt 2 and done once', async () => {
    const id = await startRun(h, MIXED);
    const first = await claim(h, 'r');
    expect(first.body['attempt']).toBe(1);
    // no heartbeat: after the lease the task is handed back and parked again as a new attempt
    const second = await claim(h, 'r', RKEY, 20);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ run_id: id, phase: 'b', attempt: 2 });
    expect(second.body['token']).not.toBe(first.body['token']);
    const old = await task(h, first.body['token'] as string, 'complete', { output: { m: 'from the dead' } });
    expect(old.status).toBe(409);
    expect(old.body['error']).toMatchObject({ code: 'task-ended', status: 'lost' });
    expect((await task(h, second.body['token'] as string, 'complete', { output: { m: 'alive' } })).status).toBe(200);
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('completed');
    const b = events.filter((e) => e['phase'] === 'b');
    expect(b.filter((e) => e.type === 'task.lease_expired').map((e) => e['attempt'])).toEqual([1]);
    expect(b.filter((e) => e.type === 'task.completed').map((e) => [e['attempt'], e['output']])).toEqual([[2, { m: 'alive' }]]);
  }, 60_000);

  test('roles: agent:<id> keys act for their own agent only; admin for any; others 401/403', async () => {
    const id = await startRun(h, MIXED);
    expect((await api(h.url, 'POST', '/agents/r/claim?wait=0', {})).status).toBe(401);
    for (const key of [KEYS.reader, KEYS.operator, OTHER, KEYS.agent]) {
      const r = await claim(h, 'r', key, 0);
      expect(r.status, key).toBe(403);
      expect(r.body['error']).toMatchObject({ code: 'forbidden' });
    }
    const c = await claim(h, 'r', KEYS.admin);
    expect(c.status).toBe(200);
    const token = c.body['token'] as string;
    expect((await task(h, token, 'complete', { output: { m: 'x' } }, OTHER)).status).toBe(403);
    expect((await task(h, token, 'heartbeat', {}, KEYS.operator)).status).toBe(403);
    // bad requests: a malformed token, a body without output, an unknown field
    expect((await task(h, 'not-a-token', 'complete', { output: {} })).status).toBe(400);
    expect((await task(h, token, 'complete', {})).body['error']).toMatchObject({ code: 'invalid-request' });
    expect((await task(h, token, 'fail', { code: 'X', message: 'y', extra: 1 })).status).toBe(400);
    expect((await task(h, 'rt_AAAAAAAAAAAAAAAAAAAAAAAA', 'complete', { output: {} })).body['error']).toMatchObject({ code: 'unknown-token' });
    // the agent's own key completes a task an admin claimed
    expect((await task(h, token, 'complete', { output: { m: 'by r' } })).status).toBe(200);
    expect((await toEnd(h, id)).status).toBe('completed');
  }, 60_000);

  test('two completions of one token at the same moment: one is taken, the other refused (409); the phase completes once', async () => {
    const id = await startRun(h, MIXED);
    const c = await claim(h, 'r');
    const token = c.body['token'] as string;
    const both = await Promise.all([task(h, token, 'complete', { output: { m: 'one' } }), task(h, token, 'complete', { output: { m: 'two' } })]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    const won = both.find((r) => r.status === 200) === both[0] ? 'one' : 'two';
    const { events } = await toEnd(h, id);
    expect(events.filter((e) => e.type === 'task.completed' && e['phase'] === 'b').map((e) => e['output'])).toEqual([{ m: won }]);
  }, 60_000);

  test('a phase that delegates to another agent (permissions.delegate.to): that agent’s key may take its task', async () => {
    const delegated = `openintent: "1.0"
info: {name: delegated}
agents:
  r: {x-remote: true}
workflow:
  d:
    assign: r
    permissions: {delegate: {to: [other]}}
    outputs: {m: string}
`;
    const id = await startRun(h, delegated);
    const c = await claim(h, 'r', OTHER);
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body).toMatchObject({ run_id: id, phase: 'd' });
    expect((await task(h, c.body['token'] as string, 'complete', { output: { m: 'by other' } }, OTHER)).status).toBe(200);
    expect((await toEnd(h, id)).status).toBe('completed');
  }, 60_000);

  test('createRemoteAgent: ctx.signal aborts when the run is cancelled (found by the heartbeat)', async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    let reason = '';
    const agent = createRemoteAgent({
      url: h.url,
      key: RKEY,
      agent: 'r',
      waitS: 2,
      handler: (ctx) =>
        new Promise((_, rej) => {
          started();
          ctx.signal.addEventListener('abort', () => {
            reason = String((ctx.signal.reason as Error).message);
            rej(new Error('aborted'));
          });
        }),
    });
    try {
      const id = await startRun(h, MIXED);
      await running;
      expect((await api(h.url, 'POST', `/runs/${id}/cancel`, { key: KEYS.operator, body: {} })).status).toBe(200);
      for (let i = 0; i < 100 && reason === ''; i++) await new Promise((r) => setTimeout(r, 50));
      expect(reason).toMatch(/the server ended the attempt/);
      expect((await toEnd(h, id)).status).toBe('cancelled');
    } finally {
      await agent.stop(0);
    }
    expect(agent.completed).toBe(0);
  }, 60_000);

  test('a failure with a code and retryable: false fails the phase at once', async () => {
    const id = await startRun(h, MIXED);
    const c = await claim(h, 'r');
    const r = await task(h, c.body['token'] as string, 'fail', { code: 'Broken', message: 'no luck', retryable: false });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'failed', committed: true });
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('failed');
    expect(events.find((e) => e.type === 'task.failed')).toMatchObject({ phase: 'b', failure: { code: 'Broken', retryable: false } });
  }, 60_000);

  test('many remote agents on a fan (--remote q): every phase completed exactly once', async () => {
    const n = 24;
    const calls = new Map<string, number>();
    const pool = Array.from({ length: 4 }, () =>
      createRemoteAgent({
        url: h.url,
        key: RKEY.replace('r-', 'q-'),
        agent: 'q',
        concurrency: 4,
        waitS: 2,
        handler: async (ctx) => {
          calls.set(ctx.phase, (calls.get(ctx.phase) ?? 0) + 1);
          await new Promise((r) => setTimeout(r, 5));
          return { i: Number(ctx.phase.slice(1)) };
        },
      }),
    );
    try {
      const id = await startRun(h, fan(n));
      const { status, events } = await toEnd(h, id);
      expect(status).toBe('completed');
      const completed = events.filter((e) => e.type === 'task.completed');
      expect(completed).toHaveLength(n);
      expect(new Set(completed.map((e) => e['phase'])).size).toBe(n);
      for (const e of completed) expect(e['output']).toEqual({ i: Number((e['phase'] as string).slice(1)) });
      expect([...calls.values()].every((v) => v === 1)).toBe(true);
      expect(events.filter((e) => e.type === 'task.stale_outcome')).toEqual([]);
    } finally {
      await Promise.all(pool.map((a) => a.stop(0)));
    }
    // every completion was answered 200 (counted once the agents stopped: the run may end before the last answer arrives)
    expect(pool.reduce((s, a) => s + a.completed, 0)).toBe(n);
  }, 60_000);

  test('a for_each phase of a remote agent: each item is a task claimed over HTTP, and each completion is answered once committed', async () => {
    const wf = remoteFan('remote-fan', '{m: string}');
    const id = await startRun(h, wf, { list: [1, 2, 3] });
    const seen: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const c = await claim(h, 'r');
      expect(c.status).toBe(200);
      expect(c.body).toMatchObject({ run_id: id, phase: 'each' });
      seen.push((c.body['input'] as { v: number }).v);
      const t0 = performance.now();
      const done = await task(h, c.body['token'] as string, 'complete', { output: { m: `item ${String((c.body['input'] as { v: number }).v)}` } });
      // answered once its commit is seen (not after the hub's 10 s wait for an event it never matched)
      expect(done.status).toBe(200);
      expect(done.body).toMatchObject({ status: 'completed', committed: true });
      expect(performance.now() - t0).toBeLessThan(5_000);
    }
    expect(seen.sort()).toEqual([1, 2, 3]);
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('completed');
    const phase = events.find((e) => e.type === 'task.completed' && e['phase'] === 'each');
    expect(phase?.['output']).toEqual({ m: ['item 1', 'item 2', 'item 3'] });
  }, 60_000);

  test('a remote item whose agent stops heartbeating is handed back as that item and done again, once', async () => {
    const wf = remoteFan('remote-fan-lost', '{m: string}');
    const id = await startRun(h, wf, { list: [7, 8] });
    const lost = await claim(h, 'r');
    const kept = await claim(h, 'r');
    expect([lost.status, kept.status]).toEqual([200, 200]);
    expect((await task(h, kept.body['token'] as string, 'complete', { output: { m: 'kept' } })).body).toMatchObject({ status: 'completed' });
    // no heartbeat for the other: after the lease its item is handed back and parked again as attempt 2
    const again = await claim(h, 'r', RKEY, 20);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ run_id: id, phase: 'each', attempt: 2, input: lost.body['input'] });
    const late = await task(h, lost.body['token'] as string, 'complete', { output: { m: 'from the dead' } });
    expect(late.status).toBe(409);
    expect((await task(h, again.body['token'] as string, 'complete', { output: { m: 'again' } })).body).toMatchObject({ status: 'completed', committed: true });
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('completed');
    const items = events.filter((e) => typeof e['phase'] === 'string' && e['phase'].startsWith('each['));
    expect(items.filter((e) => e.type === 'task.lease_expired').map((e) => e['attempt'])).toEqual([1]);
    expect(items.filter((e) => e.type === 'task.completed')).toHaveLength(2);
    const lostIndex = (lost.body['input'] as { v: number }).v === 7 ? 0 : 1;
    const out = events.find((e) => e.type === 'task.completed' && e['phase'] === 'each')?.['output'] as { m: string[] };
    expect(out.m[lostIndex]).toBe('again');
    expect(out.m[1 - lostIndex]).toBe('kept');
  }, 60_000);

  test('load, small: 50 remote agents through a 300-phase run; each phase completed once, and the hub holds nothing after', async () => {
    const n = 300;
    const pool = Array.from({ length: 50 }, () => createRemoteAgent({ url: h.url, key: RKEY.replace('r-', 'q-'), agent: 'q', waitS: 2, handler: (ctx) => ({ i: Number(ctx.phase.slice(1)) }) }));
    try {
      const id = await startRun(h, fan(n));
      const { status, events } = await toEnd(h, id);
      expect(status).toBe('completed');
      const completed = events.filter((e) => e.type === 'task.completed');
      expect(completed).toHaveLength(n);
      expect(new Set(completed.map((e) => e['phase'])).size).toBe(n);
      expect(events.filter((e) => e.type === 'task.stale_outcome' || e.type === 'task.lease_expired')).toEqual([]);
    } finally {
      await Promise.all(pool.map((a) => a.stop(0)));
    }
    expect(pool.reduce((s, a) => s + a.completed, 0)).toBe(n);
    // nothing per task is kept once the tasks ended (the list of ended tokens is bounded); the claims of
    // the stopped agents end when their connections close, or at the latest when their wait (2 s) is over
    const drained = { live: 0, queued: 0, waitingClaims: 0, commitWaits: 0 };
    for (let i = 0; i < 60 && h.remote.stats().waitingClaims > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(h.remote.stats()).toMatchObject(drained);
  }, 90_000);

  test('/metrics: tasks parked for a remote agent and not claimed are queue depth, not running; a claimed one is running', async () => {
    const id = await startRun(h, fan(5));
    for (let i = 0; i < 200 && h.remote.stats().queued < 5; i++) await new Promise((r) => setTimeout(r, 25));
    expect(h.remote.stats().queued).toBe(5);
    const scrape = async (): Promise<string> => (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${KEYS.reader}` } })).text();
    let text = await scrape();
    expect(text).toMatch(/^baton_queue_depth\{agent="q"\} 5$/m);
    expect(text).not.toMatch(/^baton_tasks_running\{agent="q"\}/m);
    const c = await claim(h, 'q', RKEY.replace('r-', 'q-'));
    expect(c.status).toBe(200);
    text = await scrape();
    expect(text).toMatch(/^baton_queue_depth\{agent="q"\} 4$/m);
    expect(text).toMatch(/^baton_tasks_running\{agent="q"\} 1$/m);
    expect((await api(h.url, 'POST', `/runs/${id}/cancel`, { key: KEYS.operator, body: {} })).status).toBe(200);
    expect((await toEnd(h, id)).status).toBe('cancelled');
  }, 60_000);

  test('POST /tasks/T/cost answers what is left after that report, and says when it is exhausted; over the budget the run fails and the heartbeat says stop', async () => {
    const wf = `openintent: "1.0"
info: {name: costly}
governance: {max_cost_usd: 1.0}
agents:
  r: {x-remote: true}
workflow:
  spend:
    assign: r
    outputs: {m: string}
`;
    const id = await startRun(h, wf);
    const c = await claim(h, 'r');
    expect(c.body).toMatchObject({ run_id: id, remaining_budget_usd: 1 });
    const token = c.body['token'] as string;
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await task(h, token, 'cost', { usd: 0.4 })).body);
    expect(answers).toEqual([
      { recorded: true, remaining_budget_usd: 0.6, budget_exhausted: false },
      { recorded: true, remaining_budget_usd: 0.2, budget_exhausted: false },
      { recorded: true, remaining_budget_usd: 0, budget_exhausted: true },
    ]);
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('failed');
    expect(events.find((e) => e.type === 'run.failed')).toMatchObject({ failure: { code: 'BudgetExceededError' } });
    // the server's worker hears of the run's end just after the store has it (a loaded machine shows the gap)
    await expect.poll(async () => (await task(h, token, 'heartbeat')).body, { timeout: 10_000 }).toMatchObject({ stop: true });
  }, 60_000);

  test('a remote agent that completes or fails while its own question is open: the outcome is applied (200, committed) and the question withdrawn; an answer after is refused', async () => {
    for (const how of ['complete', 'fail'] as const) {
      const id = await startRun(h, ASKING);
      const c = await claim(h, 'r');
      expect(c.body).toMatchObject({ run_id: id, phase: 'q', attempt: 1 });
      const token = c.body['token'] as string;
      const asked = await api(h.url, 'POST', `/tasks/${token}/input?wait=0`, { key: RKEY, body: { question: 'ok?' } });
      expect(asked).toMatchObject({ status: 202, body: { input: 0, answered: false } });
      const out = how === 'complete' ? await task(h, token, 'complete', { output: { answer: 'without you' } }) : await task(h, token, 'fail', { code: 'Fatal', message: 'giving up', retryable: false });
      expect(out.status).toBe(200);
      expect(out.body).toEqual({ status: how === 'complete' ? 'completed' : 'failed', committed: true });
      const { status, events } = await toEnd(h, id);
      expect(status).toBe(how === 'complete' ? 'completed' : 'failed');
      const types = events.map((e) => e.type);
      expect(types).toContain('gate.withdrawn');
      expect(types).not.toContain('task.stale_outcome');
      expect(events.filter((e) => e.type === 'task.claimed')).toHaveLength(1);
      const gates = (await api(h.url, 'GET', `/runs/${id}/gates`, { key: KEYS.reader })).body['gates'] as { id: string; status: string }[];
      expect(gates).toEqual([expect.objectContaining({ status: 'withdrawn' })]);
      expect((await api(h.url, 'POST', `/runs/${id}/gates/${gates[0]!.id}/respond`, { key: KEYS.operator, body: { value: 'yes' } })).status).toBe(409);
    }
  }, 60_000);

  test('a second question while the first is open is refused (400 InvalidInputRequest), not answered 409 task-ended: the attempt goes on, the first question is answered and the task completes', async () => {
    const id = await startRun(h, ASKING);
    const c = await claim(h, 'r');
    const token = c.body['token'] as string;
    expect(await api(h.url, 'POST', `/tasks/${token}/input?wait=0`, { key: RKEY, body: { question: 'first?' } })).toMatchObject({ status: 202, body: { input: 0, answered: false } });
    const second = await api(h.url, 'POST', `/tasks/${token}/input?wait=5`, { key: RKEY, body: { question: 'second?' } });
    expect(second.status).toBe(400);
    expect(second.body).toMatchObject({ error: { code: 'invalid-request' } });
    expect(second.body['error']).not.toHaveProperty('stop');
    const beat = await task(h, token, 'heartbeat');
    expect(beat).toMatchObject({ status: 200, body: { stop: false } });
    await until(async () => ((await api(h.url, 'GET', `/runs/${id}/gates`, { key: KEYS.reader })).body['gates'] as unknown[]).length === 1);
    const gates = (await api(h.url, 'GET', `/runs/${id}/gates`, { key: KEYS.reader })).body['gates'] as { id: string; status: string }[];
    expect(gates).toEqual([expect.objectContaining({ status: 'open', question: 'first?' })]);
    expect((await api(h.url, 'POST', `/runs/${id}/gates/${gates[0]!.id}/respond`, { key: KEYS.operator, body: { value: 'yes' } })).status).toBe(200);
    expect(await api(h.url, 'POST', `/tasks/${token}/input?wait=10`, { key: RKEY, body: { input: 0 } })).toMatchObject({ status: 200, body: { input: 0, answered: true, value: 'yes' } });
    expect(await task(h, token, 'complete', { output: { answer: 'yes' } })).toMatchObject({ status: 200, body: { status: 'completed', committed: true } });
    expect((await toEnd(h, id)).status).toBe('completed');
  }, 60_000);

  test('a remote agent asks a human (an input gate answered with /respond) and reports cost', async () => {
    const agent = createRemoteAgent({
      url: h.url,
      key: RKEY,
      agent: 'r',
      waitS: 2,
      handler: async (ctx) => {
        ctx.reportCost(0.25);
        ctx.log('asking');
        const v = await ctx.requestInput({ question: 'which colour?', choices: ['red', 'blue'] });
        return { answer: typeof v === 'string' ? v : JSON.stringify(v) };
      },
    });
    try {
      const id = await startRun(h, ASKING);
      const s = await readStream(`${h.url}/runs/${id}/events`, { key: KEYS.reader, until: (m) => m.event === 'gate.opened' });
      const gate = eventsOf(s.messages).find((e) => e.type === 'gate.opened')!['gate_id'] as string;
      expect((await api(h.url, 'POST', `/runs/${id}/gates/${gate}/respond`, { key: KEYS.operator, body: { value: 'blue' } })).status).toBe(200);
      const { status, events } = await toEnd(h, id);
      expect(status).toBe('completed');
      expect(events.find((e) => e.type === 'task.completed')!['output']).toEqual({ answer: 'blue' });
      expect(events.find((e) => e.type === 'task.cost')).toMatchObject({ usd: 0.25 });
      expect(events.find((e) => e.type === 'task.log')).toMatchObject({ message: 'asking' });
    } finally {
      await agent.stop(0);
    }
  }, 60_000);

  test('a remote agent gets the in-process ctx: its item, checkpoint (lastCheckpoint on the retry), a sibling’s output, record, the remaining budget', async () => {
    const wf = `openintent: "1.0"
info: {name: ctx-parity}
governance: {max_cost_usd: 1}
agents:
  r: {x-remote: true}
workflow:
  first:
    assign: x
    outputs: {n: number}
  each:
    assign: r
    depends_on: [first]
    for_each: $trigger.list
    inputs: {v: $item}
    retry: {max_attempts: 2, backoff: constant, initial_delay_ms: 1}
    outputs: {m: string}
`;
    const seen: { index: number | undefined; value: unknown; attempt: number; last: unknown; sibling: unknown; missing: unknown; before?: number; after?: number }[] = [];
    const agent = createRemoteAgent({
      url: h.url,
      key: RKEY,
      agent: 'r',
      waitS: 2,
      onError: () => undefined,
      handler: async (ctx) => {
        const before = ctx.remainingBudgetUsd();
        ctx.reportCost(0.1);
        const after = ctx.remainingBudgetUsd();
        const sibling = await ctx.getSiblingOutput('first');
        const missing = await ctx.getSiblingOutput('nothing-here');
        ctx.record('usage', { tokens: 3, item: ctx.item?.index ?? -1 });
        seen.push({ index: ctx.item?.index, value: ctx.item?.value, attempt: ctx.attempt, last: ctx.lastCheckpoint, sibling, missing, ...(before !== undefined ? { before } : {}), ...(after !== undefined ? { after } : {}) });
        if (ctx.item?.index === 1 && ctx.attempt === 1) {
          await ctx.checkpoint({ step: 'half' });
          throw Object.assign(new Error('again'), { code: 'Transient' });
        }
        return { m: `${ctx.item?.value as string}:${JSON.stringify(ctx.lastCheckpoint ?? null)}` };
      },
    });
    try {
      const id = await startRun(h, wf, { list: ['a', 'b'] });
      const { status, events } = await toEnd(h, id);
      expect(status).toBe('completed');
      expect(events.find((e) => e.type === 'task.completed' && e['phase'] === 'each')?.['output']).toEqual({ m: ['a:null', 'b:{"step":"half"}'] });
      // the item each attempt ran on; the retried item's second attempt got the first's checkpoint
      expect(seen.map((s) => [s.index, s.value, s.attempt, s.last]).sort()).toEqual([
        [0, 'a', 1, undefined],
        [1, 'b', 1, undefined],
        [1, 'b', 2, { step: 'half' }],
      ]);
      for (const s of seen) {
        expect(s.sibling).toEqual({ n: 1 });
        expect(s.missing).toBeUndefined();
        // the run's budget as of the claim, less this attempt's own report at once
        expect(s.before).toBeGreaterThan(0);
        expect(s.before).toBeLessThanOrEqual(1);
        expect(s.after).toBeCloseTo(s.before! - 0.1, 9);
      }
      expect(events.filter((e) => e.type === 'task.checkpoint').map((e) => e['value'])).toEqual([{ step: 'half' }]);
      expect(events.filter((e) => e.type === 'task.sibling_output').map((e) => [e['sibling'], e['found']]).sort()).toEqual([
        ['first', true],
        ['first', true],
        ['first', true],
        ['nothing-here', false],
        ['nothing-here', false],
        ['nothing-here', false],
      ]);
      expect(events.filter((e) => e.type === 'task.agent_event' && e['kind'] === 'usage').map((e) => e['data']).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([
        { tokens: 3, item: 0 },
        { tokens: 3, item: 1 },
        { tokens: 3, item: 1 },
      ]);
    } finally {
      await agent.stop(0);
    }
  }, 60_000);

  test('remote fan-out items each ask a human: one gate per item, each answer reaches its own item', async () => {
    const wf = remoteFan('remote-fan-asking', '{answer: string}');
    const agent = createRemoteAgent({
      url: h.url,
      key: RKEY,
      agent: 'r',
      concurrency: 2,
      waitS: 2,
      handler: async (ctx) => {
        const item = JSON.stringify(ctx.input['v']);
        const v = await ctx.requestInput({ question: `colour for ${item}?` });
        return { answer: `${item}:${JSON.stringify(v)}` };
      },
    });
    try {
      const id = await startRun(h, wf, { list: ['a', 'b'] });
      let opened: Record<string, unknown>[] = [];
      for (let i = 0; i < 200 && opened.length < 2; i++) {
        const g = await api(h.url, 'GET', `/runs/${id}/events?type=gate.opened`, { key: KEYS.reader });
        opened = (g.body['events'] as Record<string, unknown>[] | undefined) ?? [];
        if (opened.length < 2) await new Promise((res) => setTimeout(res, 50));
      }
      expect(opened).toHaveLength(2);
      expect(new Set(opened.map((e) => e['gate_id'])).size).toBe(2);
      // each gate answered with a value naming its own question
      for (const e of opened) {
        const question = JSON.stringify(e);
        const value = question.includes('colour for \\"a\\"?') ? 'red' : 'blue';
        expect((await api(h.url, 'POST', `/runs/${id}/gates/${e['gate_id'] as string}/respond`, { key: KEYS.operator, body: { value } })).status).toBe(200);
      }
      const { status, events } = await toEnd(h, id);
      expect(status).toBe('completed');
      expect(events.find((e) => e.type === 'task.completed' && e['phase'] === 'each')?.['output']).toEqual({ answer: ['"a":"red"', '"b":"blue"'] });
    } finally {
      await agent.stop(0);
    }
  }, 60_000);
});

/**
 * Claim-time rejections on a hub of their own: nothing queued or kept by the tests above reaches their
 * claims, and a rejection is kept for the server's default lease, so that a claim a loaded machine
 * makes late still hears of it (the rule that a rejection goes away once its upstream question closes
 * is then checked by itself, not by a short lease running out first).
 */
describe.each<StoreKind>(['memory', 'sqlite', 'postgres'])('claim-time rejections over the %s store', (kind) => {
  let h: Remote;
  beforeAll(async () => {
    h = await startRemote(kind, 100, REJECTION_LEASE_MS);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  }, 60_000);

  test('claim-time rejections reach the claim: 422 with the UnresolvableInputError payload (a waiting long poll, or the next claim), each once; the run records them as before', async () => {
    // a long poll waiting when the engine rejects the task
    const waiting = claim(h, 'r', RKEY, 10);
    const id = await startRun(h, UNRESOLVABLE);
    const c = await waiting;
    expect(c.status).toBe(422);
    expect(c.body['error']).toEqual({
      code: 'UnresolvableInputError',
      message: expect.stringMatching(/could not be resolved|did not record/) as unknown,
      error: 'UnresolvableInputError',
      task_id: `${id}:b`,
      phase_name: 'b',
      unresolvable_refs: ['a.opt'],
      run_id: id,
      phase: 'b',
    });
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('failed');
    const rejected = events.filter((e) => e.type === 'task.claim_rejected');
    expect(rejected).toEqual([expect.objectContaining({ phase: 'b', error: expect.objectContaining({ error: 'UnresolvableInputError', unresolvable_refs: ['a.opt'] }) as unknown })]);
    // the payload the claim answered is the one the run recorded
    const { code: _code, run_id: _run, phase: _phase, ...payload } = c.body['error'] as Record<string, unknown>;
    expect(payload).toEqual(rejected[0]!['error']);
    expect(events.find((e) => e.type === 'task.failed')).toMatchObject({ phase: 'b', failure: { code: 'UnresolvableInputError' } });
    // told once
    expect((await claim(h, 'r', RKEY, 0)).status).toBe(204);
    // no claim waiting: the next claim hears of it
    const later = await startRun(h, UNRESOLVABLE);
    expect((await toEnd(h, later)).status).toBe('failed');
    const next = await claim(h, 'r', RKEY, 0);
    expect(next).toMatchObject({ status: 422, body: { error: { code: 'UnresolvableInputError', run_id: later, phase: 'b' } } });
    expect((await claim(h, 'r', RKEY, 0)).status).toBe(204);
    // a key that may not act as the agent hears of nothing (403, or 204 once a phase delegates to it: not this one)
    const third = await startRun(h, UNRESOLVABLE);
    expect((await toEnd(h, third)).status).toBe('failed');
    expect([403, 204]).toContain((await claim(h, 'r', OTHER, 0)).status);
    expect((await claim(h, 'r', KEYS.admin, 0)).status).toBe(422);
    expect(h.remote.stats().rejections).toBe(0);
  }, 60_000);

  test('claim-time rejections reach the claim: 409 with the UpstreamIntentSuspendedError payload while the upstream question is open; the task is claimed once it is answered', async () => {
    const waiting = claim(h, 'r', RKEY, 10);
    const id = await startRun(h, SUSPENDED);
    const c = await waiting;
    expect(c.status).toBe(409);
    expect(c.body['error']).toMatchObject({ code: 'UpstreamIntentSuspendedError', error: 'UpstreamIntentSuspendedError', task_id: `${id}:after`, phase_name: 'after', suspended_intent_id: `${id}:q`, run_id: id, phase: 'after' });
    expect(Object.keys(c.body['error'] as object)).toContain('expected_resume_at');
    expect((await claim(h, 'r', RKEY, 0)).status).toBe(204);
    const gates = (await api(h.url, 'GET', `/runs/${id}/gates?status=open`, { key: KEYS.reader })).body['gates'] as { id: string }[];
    expect((await api(h.url, 'POST', `/runs/${id}/gates/${gates[0]!.id}/respond`, { key: KEYS.operator, body: { value: 'blue' } })).status).toBe(200);
    const t = await claim(h, 'r', RKEY, 10);
    expect(t).toMatchObject({ status: 200, body: { run_id: id, phase: 'after', input: { a: 'blue' } } });
    expect((await task(h, t.body['token'] as string, 'complete', { output: { m: 'done' } })).status).toBe(200);
    const { status, events } = await toEnd(h, id);
    expect(status).toBe('completed');
    expect(events.filter((e) => e.type === 'task.claim_rejected')).toEqual([expect.objectContaining({ phase: 'after', error: expect.objectContaining({ error: 'UpstreamIntentSuspendedError' }) as unknown })]);
    expect(h.remote.stats().rejections).toBe(0);
  }, 60_000);

  test('a 409 nobody claimed is dropped once the upstream question is answered: a claim after it gets the task, not an old 409', async () => {
    const id = await startRun(h, SUSPENDED);
    const s = await readStream(`${h.url}/runs/${id}/events`, { key: KEYS.reader, until: (m) => m.event === 'task.claim_rejected' });
    expect(eventsOf(s.messages).some((e) => e.type === 'task.claim_rejected')).toBe(true);
    for (let i = 0; i < 100 && h.remote.stats().rejections === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(h.remote.stats().rejections).toBe(1);
    const gates = (await api(h.url, 'GET', `/runs/${id}/gates?status=open`, { key: KEYS.reader })).body['gates'] as { id: string }[];
    expect((await api(h.url, 'POST', `/runs/${id}/gates/${gates[0]!.id}/respond`, { key: KEYS.operator, body: { value: 'red' } })).status).toBe(200);
    const t = await claim(h, 'r', RKEY, 10);
    expect(t).toMatchObject({ status: 200, body: { run_id: id, phase: 'after' } });
    expect((await task(h, t.body['token'] as string, 'complete', { output: { m: 'done' } })).status).toBe(200);
    expect((await toEnd(h, id)).status).toBe('completed');
    expect(h.remote.stats().rejections).toBe(0);
  }, 60_000);

  test('a completion with claim_next hears of a claim-time rejection as next_rejection (next: null)', async () => {
    const first = await startRun(h, MIXED);
    const c = await claim(h, 'r');
    expect(c.body).toMatchObject({ run_id: first, phase: 'b' });
    const refused = await startRun(h, UNRESOLVABLE);
    expect((await toEnd(h, refused)).status).toBe('failed');
    const done = await task(h, c.body['token'] as string, 'complete', { output: { m: 'ok' }, claim_next: true });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', committed: true, next: null, next_rejection: { status: 422, error: { code: 'UnresolvableInputError', run_id: refused, phase: 'b', unresolvable_refs: ['a.opt'] } } });
    expect((await toEnd(h, first)).status).toBe('completed');
    expect(h.remote.stats().rejections).toBe(0);
  }, 60_000);

  test('createRemoteAgent: a claim-time rejection goes to onClaimRejected and the agent goes on claiming', async () => {
    const heard: ClaimRejection[] = [];
    const agent = createRemoteAgent({ url: h.url, key: RKEY, agent: 'r', waitS: 2, onClaimRejected: (r) => heard.push(r), handler: () => ({ m: 'after the rejection' }) });
    try {
      const refused = await startRun(h, UNRESOLVABLE);
      expect((await toEnd(h, refused)).status).toBe('failed');
      for (let i = 0; i < 200 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
      expect(heard).toEqual([{ status: 422, code: 'UnresolvableInputError', message: expect.any(String) as unknown, runId: refused, phase: 'b', taskId: `${refused}:b`, payload: expect.objectContaining({ unresolvable_refs: ['a.opt'] }) as unknown }]);
      const id = await startRun(h, MIXED);
      expect((await toEnd(h, id)).status).toBe('completed');
    } finally {
      await agent.stop(0);
    }
    expect(agent.completed).toBe(1);
  }, 60_000);
});

async function waitForEvent(h: Remote, id: string, type: string): Promise<Record<string, unknown> | undefined> {
  for (let i = 0; i < 100; i++) {
    const r = await api(h.url, 'GET', `/runs/${id}/events?type=${type}`, { key: KEYS.reader });
    const list = r.body['events'] as Record<string, unknown>[] | undefined;
    if (list && list.length > 0) return list[0];
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

const python = spawnSync('python3', ['--version']).status === 0;

describe.skipIf(!python)('the Python example (standard library only)', () => {
  let h: Remote;
  beforeAll(async () => {
    h = await startRemote('sqlite');
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  }, 60_000);

  test('examples/remote-python/agent.py does the remote phase of a run', async () => {
    const script = resolve(__dirname, '../../examples/remote-python/agent.py');
    const child = spawn('python3', [script, '--once'], { env: { ...process.env, BATON_URL: h.url, BATON_API_KEY: RKEY, BATON_AGENT: 'r' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const id = await startRun(h, MIXED);
      const { status, events } = await toEnd(h, id);
      expect(status, err).toBe('completed');
      expect(events.find((e) => e.type === 'task.completed' && e['phase'] === 'b')!['output']).toEqual({ m: 'python saw n=1' });
      expect(await exited).toBe(0);
    } finally {
      child.kill();
    }
  }, 60_000);
});

describe.skipIf(!python)('the Python example and claim-time rejections', () => {
  let h: Remote;
  beforeAll(async () => {
    // the rejection waits for agent.py, started after it, for a lease (REJECTION_LEASE_MS)
    h = await startRemote('postgres', 100, REJECTION_LEASE_MS);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  }, 60_000);

  test('agent.py hears of a claim refused at claim time (422), says so, and goes on to do the next task', async () => {
    const script = resolve(__dirname, '../../examples/remote-python/agent.py');
    const refused = await startRun(h, UNRESOLVABLE);
    expect((await toEnd(h, refused)).status).toBe('failed');
    const child = spawn('python3', [script, '--once'], { env: { ...process.env, BATON_URL: h.url, BATON_API_KEY: RKEY, BATON_AGENT: 'r' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const id = await startRun(h, MIXED);
      const { status } = await toEnd(h, id);
      expect(status, err).toBe('completed');
      expect(await exited).toBe(0);
      expect(err).toContain(`task ${refused}:b of run ${refused} was refused at claim time (422 UnresolvableInputError)`);
    } finally {
      child.kill();
    }
  }, 60_000);
});

describe.skipIf(!python)('the Python example when the server is away', () => {
  /**
   * A stub server hands out one task, then goes away (connections refused) for longer than the task's
   * lease, as a server restart that takes a while does, and comes back. agent.py's completion cannot
   * be delivered: it says so and claims again. (It exited with a traceback: no agent left to claim.)
   * A claim answered 503 (a proxy before a server that is away) is retried too.
   */
  test('agent.py outlives a completion it cannot deliver and a 503 on a claim, and claims again', async () => {
    const http = await import('node:http');
    const script = resolve(__dirname, '../../examples/remote-python/agent.py');
    const port = await freePort();
    const claims: string[] = [];
    const task = { token: 'rt_stub', task_id: 'run_s:b', run_id: 'run_s', phase: 'b', attempt: 1, agent: 'r', input: { n: 1 }, initial_state: {}, idempotency_key: 'run_s:b', lease_ms: 600, lease_expires_at: 0 };
    let up: import('node:http').Server | undefined;
    const listen = (): Promise<void> =>
      new Promise((res) => {
        up = http.createServer((req, resp) => {
          req.resume();
          req.on('end', () => {
            if (req.url?.startsWith('/agents/r/claim')) {
              claims.push(req.url);
              if (claims.length === 1) {
                resp.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(task));
                // away before the agent completes: every connection refused for more than the lease
                const srv = up!;
                srv.close();
                srv.closeAllConnections();
                setTimeout(() => void listen(), 6_000);
              } else if (claims.length === 2) resp.writeHead(503, { 'content-type': 'text/html' }).end('<html>502 Bad Gateway</html>');
              else resp.writeHead(204).end();
            } else resp.writeHead(200, { 'content-type': 'application/json' }).end('{"status": "running", "stop": false}');
          });
        });
        up.listen(port, '127.0.0.1', () => res());
      });
    await listen();
    const child = spawn('python3', [script], { env: { ...process.env, BATON_URL: `http://127.0.0.1:${port}`, BATON_API_KEY: RKEY, BATON_AGENT: 'r' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    let exit: number | null | undefined;
    child.on('exit', (code) => (exit = code));
    try {
      await until(() => claims.length >= 3 || exit !== undefined, 20_000);
      expect(exit, err).toBeUndefined();
      expect(claims.length).toBeGreaterThanOrEqual(3);
      expect(err).toContain('outcome of task run_s:b not delivered');
      expect(err).not.toContain('Traceback');
    } finally {
      child.kill();
      up?.close();
      up?.closeAllConnections();
    }
  }, 60_000);
});

afterAll(() => {
  // an unknown token's completion logs a line (the roles test sends one); nothing else may
  expect(logged.filter((l) => !l.includes('unknown token'))).toEqual([]);
});

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

describe('baton serve --remote as a process', () => {
  test('--remote with something that is not an agent id is a usage error (exit 2)', async () => {
    const { run } = await import('../../src/cli/main.js');
    let err = '';
    const code = await run(['serve', '--port', '0', '--store', 'memory', '--remote', 'not an id'], { stdout: () => undefined, stderr: (s) => (err += s), isTTY: false, cwd: tmpdir(), env: { BATON_API_KEYS: '' } });
    expect(code).toBe(2);
    expect(err).toMatch(/--remote expects an agent id/);
  });

  test('a remote agent rides out a server crash and restart in the middle of its task: the task is done again, once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-remote-serve-'));
    writeFileSync(join(dir, 'chain.yaml'), CHAIN);
    const port = String(await freePort());
    const env = { BATON_API_KEYS: `${KEYS_ENV},yk:agent:y:${RKEY}` };
    const serve = () => baton(['serve', '--port', port, '--store', 'runs.db', '--stub-agents', '--remote', 'y', '--lease', '1', '--workflows', '.'], { cwd: dir, env });
    const listening = async (p: ReturnType<typeof serve>): Promise<string> => {
      let err = '';
      p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      // the lines come in separate writes (a loaded machine reads them in separate chunks): wait for the last one said
      for (let i = 0; i < 300 && !/remote agents: .*\n/.test(err); i++) await new Promise((r) => setTimeout(r, 100));
      expect(err).toMatch(/listening on/);
      expect(err).toMatch(/remote agents: y, and those the workflows declare/);
      return /listening on (http:\/\/\S+)/.exec(err)![1]!;
    };
    const first = serve();
    let second: ReturnType<typeof serve> | undefined;
    const calls: number[] = [];
    const agent = createRemoteAgent({
      url: `http://127.0.0.1:${port}`,
      key: RKEY,
      agent: 'y',
      waitS: 1,
      onError: () => undefined,
      handler: async (ctx) => {
        calls.push(ctx.attempt);
        if (calls.length === 1) {
          // the first attempt never finishes: its server dies under it
          await new Promise((_, rej) => ctx.signal.addEventListener('abort', () => rej(new Error('stopped')), { once: true }));
        }
        return { m: `done by attempt ${ctx.attempt}` };
      },
    });
    try {
      const url = await listening(first);
      const started = await api(url, 'POST', '/runs', { key: KEYS.operator, body: { workflow_name: 'chain', run_id: 'ride-out' } });
      expect(started.status).toBe(201);
      for (let i = 0; i < 200 && calls.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(calls).toEqual([1]);
      first.kill('SIGKILL');
      await first.done;
      second = serve();
      await listening(second);
      let status = '';
      for (let i = 0; i < 300 && status !== 'completed'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = ((await api(url, 'GET', '/runs/ride-out', { key: KEYS.reader })).body['status'] as string | undefined) ?? '';
      }
      expect(status).toBe('completed');
      const events = (await api(url, 'GET', '/runs/ride-out/events?limit=1000', { key: KEYS.reader })).body['events'] as { type: string; phase?: string; attempt?: number; output?: unknown }[];
      const b = events.filter((e) => e.phase === 'b');
      const done = b.filter((e) => e.type === 'task.completed');
      expect(done).toHaveLength(1);
      expect(done[0]!.output).toEqual({ m: `done by attempt ${done[0]!.attempt}` });
      expect(done[0]!.attempt).toBeGreaterThan(1);
      expect(calls.length).toBe(2);
    } finally {
      await agent.stop(0);
      first.kill('SIGKILL');
      second?.kill('SIGTERM');
      if (second) await second.done;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('the server stops with remote tasks in hand and in the queue', () => {
  test("a remote agent's completion sent while the server stops is committed, and the server stops once it is, not after the grace", async () => {
    const h = await startRemote('memory', 20_000);
    try {
      const id = await startRun(h, MIXED);
      const c = await claim(h, 'r');
      expect(c.body).toMatchObject({ run_id: id, phase: 'b' });
      const t0 = Date.now();
      const closed = h.server.close();
      await new Promise((r) => setTimeout(r, 50));
      // anything else is refused while the server stops; what the agent holds it may still settle (then the server is gone)
      expect(await claim(h, 'r', RKEY, 0)).toMatchObject({ status: 503, body: { error: { code: 'server-stopping' } } });
      expect(await task(h, c.body['token'] as string, 'heartbeat')).toMatchObject({ status: 200, body: { stop: false } });
      expect(await task(h, c.body['token'] as string, 'complete', { output: { m: 'in time' } })).toMatchObject({ status: 200, body: { status: 'completed', committed: true } });
      await closed;
      expect(Date.now() - t0).toBeLessThan(10_000);
      const events = await h.store.events(id);
      expect(events.filter((e) => e.type === 'task.completed' && e.phase === 'b').map((e) => (e as { output?: unknown }).output)).toEqual([{ m: 'in time' }]);
      expect(events.filter((e) => e.type === 'task.lease_expired')).toEqual([]);
    } finally {
      await h.close();
    }
  }, 60_000);

  test('a remote task no agent claimed yet is handed back as the server stops, not after the grace', async () => {
    const h = await startRemote('memory', 20_000);
    try {
      const id = await startRun(h, MIXED);
      await until(async () => (await h.store.events(id)).some((e) => e.type === 'task.claimed' && e.phase === 'b'));
      await until(() => h.remote.stats().queued === 1);
      const t0 = Date.now();
      await h.server.close();
      expect(Date.now() - t0).toBeLessThan(10_000);
      const back = (await h.store.events(id)).filter((e) => e.type === 'task.lease_expired' && e.phase === 'b');
      expect(back).toMatchObject([{ attempt: 1, handed_back: true }]);
    } finally {
      await h.close();
    }
  }, 60_000);
});

describe('the server stops with remote agents waiting', () => {
  test('a long-polled claim and an input poll both get an answer (204, and 202 not answered) when the server closes, not a connection cut with no answer', async () => {
    const h = await startRemote('memory');
    try {
      const id = await startRun(h, ASKING);
      const c = await claim(h, 'r');
      expect(c.body).toMatchObject({ run_id: id, phase: 'q' });
      const token = c.body['token'] as string;
      const input = api(h.url, 'POST', `/tasks/${token}/input?wait=60`, { key: RKEY, body: { question: 'still there?' } });
      const poll = claim(h, 'r', RKEY, 60);
      await until(() => h.remote.stats().waitingClaims === 1);
      await until(async () => ((await api(h.url, 'GET', `/runs/${id}/gates`, { key: KEYS.reader })).body['gates'] as unknown[]).length === 1);
      const closed = h.server.close();
      expect(await poll).toMatchObject({ status: 204 });
      expect(await input).toMatchObject({ status: 202, body: { input: 0, answered: false } });
      await closed;
    } finally {
      await h.close();
    }
  }, 60_000);
});

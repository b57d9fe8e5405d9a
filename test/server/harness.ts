/**
 * A Baton server on a loopback port (an ephemeral one) over a real store, with keys of every role
 * and in-process agents, for the server tests and the bench. Nothing is mocked: requests go through
 * fetch, the server's Node HTTP stack, the engine and the store.
 */
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentError, createEngine, openStore, type AgentHandler, type Engine, type RunStore } from '@baton-run/baton';
import { loadA2aServer, parseKeysEnv, RemoteAgents, scanWorkflows, ServerMetrics, startServer, type BatonServer } from '@baton-run/baton/server';
import { testDatabase } from '../helpers/pg.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { eventsOf, readStream } from './sse.js';

export type StoreKind = 'memory' | 'sqlite' | 'postgres';

export const KEYS = {
  admin: 'admin-key-0123456789abcdef',
  operator: 'operator-key-0123456789abcdef',
  reader: 'reader-key-0123456789abcdef',
  alice: 'alice-key-0123456789abcdef',
  agent: 'agent-key-0123456789abcdef',
} as const;

export const KEYS_ENV = `root:admin:${KEYS.admin},bob:operator:${KEYS.operator},carol:reader:${KEYS.reader},alice:operator:${KEYS.alice},fetcher:agent:x:${KEYS.agent}`;

export const CHAIN = `openintent: "1.0"
info: {name: chain}
workflow:
  a:
    assign: x
    outputs: {n: number}
  b:
    assign: y
    depends_on: [a]
    inputs: {n: a.n}
    outputs: {m: string}
`;

export const GATED = `openintent: "1.0"
info: {name: gated}
governance:
  require_approval: {approvers: [alice]}
workflow:
  a:
    assign: x
    outputs: {n: number}
  b:
    assign: y
    depends_on: [a]
    outputs: {m: string}
`;

export const ASK = `openintent: "1.0"
info: {name: ask}
workflow:
  q:
    assign: asker
    outputs: {answer: string}
`;

/** A workflow of one phase whose `greeter` agent says hello to `$trigger.name` (the A2A tests' skill `hello`). */
export const HELLO = `openintent: "1.0"
info: {name: hello, description: greets}
x-trigger: {name: string}
workflow:
  greet:
    assign: greeter
    inputs: {name: $trigger.name}
    outputs: {greeting: string}
`;

/** One phase of the `slow` agent (it waits for the latch). */
export const SLOW_ONE = `openintent: "1.0"
info: {name: slow}
workflow:
  s1: {assign: slow, outputs: {n: number}}
`;

export const FAILS = `openintent: "1.0"
info: {name: fails}
workflow:
  a:
    assign: boom
    outputs: {n: number}
`;

export const SLOW = `openintent: "1.0"
info: {name: slow}
workflow:
  s1: {assign: slow, outputs: {n: number}}
  s2: {assign: slow, outputs: {n: number}}
  s3: {assign: slow, outputs: {n: number}}
`;

export const TRIGGERED = `openintent: "1.0"
info: {name: triggered}
x-trigger: {topic: string}
workflow:
  a:
    assign: x
    inputs: {t: $trigger.topic}
    outputs: {n: number}
`;

/**
 * Releases the `slow` agent's attempts (they wait until released). An attempt aborted while it waits
 * (a cancel, a lost lease) stops waiting: `running` counts the attempts that wait now, never one a test
 * before cancelled, so a test that waits for its own attempt to be waiting is not satisfied by another's.
 */
export class Latch {
  private waiting: { runId: string | undefined; go: () => void }[] = [];
  get running(): number {
    return this.waiting.length;
  }
  /** Whether an attempt of run `runId` waits on the latch now. */
  holds(runId: string): boolean {
    return this.waiting.some((w) => w.runId === runId);
  }
  wait(ctx?: { runId: string; signal: AbortSignal }): Promise<void> {
    return new Promise((resolve, reject) => {
      if (ctx?.signal.aborted) return reject(ctx.signal.reason);
      const w = { runId: ctx?.runId, go: resolve };
      this.waiting.push(w);
      ctx?.signal.addEventListener(
        'abort',
        () => {
          this.waiting = this.waiting.filter((x) => x !== w);
          reject(ctx.signal.reason);
        },
        { once: true },
      );
    });
  }
  release(): void {
    for (const w of this.waiting.splice(0)) w.go();
  }
}

export interface Harness {
  url: string;
  store: RunStore;
  engine: Engine;
  server: BatonServer;
  latch: Latch;
  dir: string;
  close(): Promise<void>;
}

export function agents(latch: Latch): Record<string, AgentHandler> {
  return {
    x: () => ({ n: 1 }),
    y: (ctx) => ({ m: `got ${JSON.stringify(ctx.input)}` }),
    asker: async (ctx) => ({ answer: JSON.stringify(await ctx.requestInput({ question: 'which colour?', choices: ['red', 'blue'] })).slice(1, -1) }),
    boom: () => {
      throw new AgentError('Broken', 'the agent is broken', {}, false);
    },
    slow: async (ctx) => {
      await latch.wait(ctx);
      return { n: 2 };
    },
  };
}

/** PostgreSQL: also a second store object for the server's change notifications, as `baton serve` opens one. */
export async function openTestStore(kind: StoreKind, dir: string): Promise<{ store: RunStore; changes?: RunStore; drop: () => Promise<void>; spec: string }> {
  if (kind === 'memory') return { store: await openStore('memory', { cwd: dir }), drop: () => Promise.resolve(), spec: 'memory' };
  if (kind === 'sqlite') return { store: await openStore(join(dir, 'baton.db'), { cwd: dir }), drop: () => Promise.resolve(), spec: join(dir, 'baton.db') };
  const db = testDatabase('baton_server');
  await db.create();
  const store = await openStore(db.url, { cwd: dir });
  const changes = await openStore(db.url, { cwd: dir });
  return {
    store,
    changes,
    drop: async () => {
      await changes.close();
      await db.drop();
    },
    spec: db.url,
  };
}

export async function startHarness(kind: StoreKind, opts: { bodyLimit?: number; keys?: boolean; concurrency?: number } = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-server-'));
  mkdirSync(join(dir, 'flows'));
  writeFileSync(join(dir, 'flows', 'chain.yaml'), CHAIN);
  writeFileSync(join(dir, 'flows', 'triggered.yaml'), TRIGGERED);
  const { store, changes, drop } = await openTestStore(kind, dir);
  const latch = new Latch();
  const metrics = new ServerMetrics();
  const engine = createEngine({ store, agents: agents(latch), concurrency: opts.concurrency ?? 8, onEvent: metrics.onEvent, leaseMs: 5000 });
  const server = await startServer({
    engine,
    port: 0,
    keys: opts.keys === false ? [] : parseKeysEnv(KEYS_ENV),
    workflows: scanWorkflows(join(dir, 'flows')),
    metrics,
    ...(changes ? { changes } : {}),
    cwd: dir,
    ...(opts.bodyLimit !== undefined ? { bodyLimit: opts.bodyLimit } : {}),
    log: () => undefined,
    graceMs: 100,
  });
  return {
    url: server.url,
    store,
    engine,
    server,
    latch,
    dir,
    async close() {
      latch.release();
      await server.close();
      await store.close();
      await drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A JSON request with a key; the answer's status and parsed body. */
export async function api(url: string, method: string, path: string, opts: { key?: string; body?: unknown; raw?: string; type?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== undefined) headers['authorization'] = `Bearer ${opts.key}`;
  const payload = opts.raw ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined);
  if (payload !== undefined) headers['content-type'] = opts.type ?? 'application/json';
  const res = await fetch(url + path, { method, headers, ...(payload !== undefined ? { body: payload } : {}) });
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { text };
  }
  return { status: res.status, body, headers: res.headers };
}

/** A server of remote agent `q` on a memory store, behind a loopback TCP proxy (to cut, hold or blackhole its connections). */
export interface ProxiedRemote {
  store: RunStore;
  server: BatonServer;
  proxy: TcpProxy;
  close(): Promise<void>;
}

export async function proxiedRemoteServer(dir: string, leaseMs: number, keys: string): Promise<ProxiedRemote> {
  const store = await openStore('memory', { cwd: dir });
  const remote = new RemoteAgents({ agents: ['q'], leaseMs });
  const engine = createEngine({ store, bindRun: remote.bindRun, onEvent: remote.onEvent });
  const server = await startServer({ engine, port: 0, keys: parseKeysEnv(keys), remote, log: () => undefined, graceMs: 100 });
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: server.port });
  return {
    store,
    server,
    proxy,
    close: async () => {
      proxy.resume();
      proxy.releaseReplies();
      proxy.heal();
      await proxy.close();
      await server.close();
      await store.close();
    },
  };
}

/** Starts a run on a server (operator key): its id. */
/** Starts a posted workflow as an operator, or as `key` (an admin's, for a text that declares files: operators may not run those). */
export async function startRun(h: { url: string }, workflow: string, trigger?: Record<string, unknown>, key: string = KEYS.operator): Promise<string> {
  const r = await api(h.url, 'POST', '/runs', { key, body: { workflow, ...(trigger ? { trigger } : {}) } });
  if (r.status !== 201) throw new Error(`POST /runs answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body['run_id'] as string;
}

/** Follows a run's event stream to its end: its final status and every event. */
export async function toEnd(h: { url: string }, id: string): Promise<{ status: string; events: ReturnType<typeof eventsOf> }> {
  const s = await readStream(`${h.url}/runs/${id}/events`, { key: KEYS.reader, timeoutMs: 30_000 });
  if (!s.ended) throw new Error(`the event stream of ${id} did not end`);
  const end = JSON.parse(s.messages[s.messages.length - 1]!.data) as { status: string };
  return { status: end.status, events: eventsOf(s.messages) };
}

/** `baton serve --a2a` over a SQLite store (a2aServe). */
export interface A2aServe {
  dir: string;
  store: RunStore;
  engine: Engine;
  server: BatonServer;
  latch: Latch;
  close(): Promise<void>;
}

/**
 * `baton serve --a2a` on a loopback port over a SQLite store in a fresh directory (`prefix`), with HELLO,
 * ASK and SLOW_ONE registered (and `extra`, file name to text), the harness's agents and a greeter.
 */
export async function startA2aServe(prefix: string, extra: Record<string, string> = {}): Promise<A2aServe> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(dir, 'flows'));
  for (const [file, text] of Object.entries({ 'hello.yaml': HELLO, 'ask.yaml': ASK, 'slow.yaml': SLOW_ONE, ...extra })) writeFileSync(join(dir, 'flows', file), text);
  const latch = new Latch();
  const store = await openStore(join(dir, 'baton.db'), { cwd: dir });
  const engine = createEngine({ store, agents: { ...agents(latch), greeter: (ctx) => ({ greeting: `hello ${String(ctx.input['name'])}` }) }, concurrency: 8 });
  const server = await startServer({ engine, port: 0, keys: parseKeysEnv(KEYS_ENV), workflows: scanWorkflows(join(dir, 'flows')), a2a: await loadA2aServer(), cwd: dir, log: () => undefined, graceMs: 100, version: '9.9.9' });
  return {
    dir,
    store,
    engine,
    server,
    latch,
    async close() {
      latch.release();
      await server.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

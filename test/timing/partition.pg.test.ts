/**
 * PostgreSQL behind a partition: the connections the store holds go dead without a reset (a NAT or a
 * firewall that forgot them: nothing comes back, nothing closes), through a loopback TCP proxy whose
 * `blackhole()` does just that; new connections work. Every statement waits at most `queryTimeoutMs` for
 * its answer, then its connection is dropped and the call is retried on a new one, so the run goes on:
 * it completes, each phase once. (Without the bound, the first statement on a dead connection waited
 * for as long as TCP takes to give up: minutes to hours.) The LISTEN connection is asked a `SELECT 1`
 * every `listenCheckMs`: a dead one is replaced, and NOTIFY wakes the store's waiters again.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { WorkflowSpec } from '../../src/api/spec.js';
import { CLOSE_WAIT_MS, openPostgresStore, type PostgresStore } from '../../src/store/postgres.js';
import { PG_SERVER, testDatabase } from '../helpers/pg.js';
import { WORKER_STOP_BOUND_MS } from '../../src/cli/resume.js';
import { baton, until } from '../helpers/spawn.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const db = testDatabase('baton_test_partition');
let proxy: TcpProxy;
let store: PostgresStore;

beforeAll(async () => {
  await db.create();
  const pg = new URL(PG_SERVER);
  proxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
  store = await openPostgresStore(proxy.rewrite(db.url), { queryTimeoutMs: 1000 });
}, 60_000);

afterAll(async () => {
  await store?.close();
  await proxy?.close();
  await db.drop();
});

test('the store’s connections go dead mid-run: each statement gives up after queryTimeoutMs, a new connection carries on, the run completes with each phase once', async () => {
  const phases = ['a', 'b', 'c', 'd'];
  const wf = WorkflowSpec.fromString(`openintent: "1.0"\ninfo: {name: partition}\nworkflow:\n${phases.map((p, i) => `  ${p}: {assign: w, outputs: {n: number}${i > 0 ? `, depends_on: [${phases[i - 1]}]` : ''}}\n`).join('')}`);
  const calls: string[] = [];
  let holed = false;
  const engine = createEngine({
    store,
    agents: {
      w: (ctx) => {
        calls.push(`${ctx.phase}#${ctx.attempt}`);
        // while phase b runs, every connection of the pool dies silently
        if (ctx.phase === 'b' && !holed) {
          holed = true;
          proxy.blackhole();
        }
        return { n: 1 };
      },
    },
  });
  try {
    const t0 = performance.now();
    const r = await engine.run(wf, {});
    expect(r.status).toBe('completed');
    expect(holed).toBe(true);
    expect(calls).toEqual(['a#1', 'b#1', 'c#1', 'd#1']);
    const events = await store.events(r.runId);
    expect(events.filter((e) => e.type === 'task.completed').map((e) => (e as { phase: string }).phase)).toEqual(phases);
    // a dead connection costs a statement's timeout (the pool holds up to 10 of them); a transaction left
    // open on one holds its run until PostgreSQL ends that session (idle_in_transaction_session_timeout, 30 s)
    expect(performance.now() - t0).toBeLessThan(45_000);
  } finally {
    await engine.close();
  }
}, 90_000);

test('a LISTEN connection gone dead is found by its check and replaced: a commit elsewhere wakes the waiter again', async () => {
  const watched = await openPostgresStore(proxy.rewrite(db.url), { queryTimeoutMs: 1000, listenCheckMs: 300 });
  const direct = await openPostgresStore(db.url);
  const engine = createEngine({ store: direct, agents: { w: () => ({ n: 1 }) } });
  const wf = WorkflowSpec.fromString('openintent: "1.0"\ninfo: {name: wake}\nworkflow:\n  a: {assign: w, outputs: {n: number}}\n');
  /** ms until a run started on the direct store wakes `watched`'s wait (at most 4 s). */
  const wakeMs = async (): Promise<number> => {
    // what the wait owes from before (a new LISTEN wakes its waiters once) is taken first
    for (let i = 0; i < 5; i++) await watched.waitForChange(20);
    const t0 = performance.now();
    const woken = watched.waitForChange(4_000);
    await engine.start(wf, { detach: true });
    await woken;
    return performance.now() - t0;
  };
  try {
    // LISTEN is opened by the first wait; a commit then wakes the waiter at once
    await watched.waitForChange(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(await wakeMs()).toBeLessThan(2_000);
    // the LISTEN connection (and the pool's) go dead without a reset
    proxy.blackhole();
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await wakeMs()).toBeLessThan(2_000);
  } finally {
    await engine.close();
    await direct.close();
    await watched.close();
  }
}, 60_000);

test('close() after the connections went dead returns within its bound (their goodbyes are never answered: the sockets are destroyed)', async () => {
  const s = await openPostgresStore(proxy.rewrite(db.url), { queryTimeoutMs: 1000 });
  // a pooled connection and the LISTEN one, both live
  await s.runs();
  await s.waitForChange(300);
  proxy.blackhole();
  const t0 = performance.now();
  const closed = await Promise.race([s.close().then(() => 'closed'), new Promise((r) => setTimeout(() => r('still closing after 10 s'), 10_000))]);
  expect(closed).toBe('closed');
  expect(performance.now() - t0).toBeLessThan(3 * CLOSE_WAIT_MS);
}, 30_000);

describe('processes across a partition', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-partition-'));
    writeFileSync(join(dir, 'workflow.yaml'), `openintent: "1.0"\ninfo: {name: part}\nworkflow:\n${['a', 'b', 'c', 'd'].map((p, i) => `  ${p}: {assign: w, outputs: {n: number}${i > 0 ? `, depends_on: [${'abcd'[i - 1]}]` : ''}}\n`).join('')}`);
    // phase b waits for a file GO names, when it is set: the test cuts the network meanwhile
    writeFileSync(
      join(dir, 'agents.mjs'),
      `import { appendFileSync, existsSync } from 'node:fs';\nexport default { w: async (ctx) => {\n  appendFileSync(process.env.CALLS, ctx.phase + ' ' + ctx.attempt + '\\n');\n  if (ctx.phase === 'b' && process.env.GO) while (!existsSync(process.env.GO)) await new Promise((r) => setTimeout(r, 20));\n  return { n: 1 };\n} };\n`,
    );
  });

  /** The store through the proxy; `queryTimeoutMs` as pg reads it from the URL (the CLI's default is 60 s). */
  const url = (queryTimeoutMs?: number): string => proxy.rewrite(db.url) + (queryTimeoutMs !== undefined ? `?query_timeout=${queryTimeoutMs}` : '');
  const lines = (file: string): string[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []);

  test('baton run whose connections go dead mid-run completes the run, prints it, and exits', async () => {
    // it printed its result and stayed alive for good: closing the store waited for goodbyes nobody answers
    const calls = join(dir, 'calls-run');
    const go = join(dir, 'go-run');
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', url(1000), '--json'], { cwd: dir, env: { CALLS: calls, GO: go } });
    // while b runs (the command listening for changes meanwhile), every connection dies; b's completion is
    // then committed on a new one
    await until(() => lines(calls).length >= 2, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    proxy.blackhole();
    writeFileSync(go, '');
    const exited = await Promise.race([child.done, new Promise<undefined>((r) => setTimeout(() => r(undefined), 30_000))]);
    if (!exited) child.kill('SIGKILL');
    expect(exited, 'still running 30 s after the partition').toBeDefined();
    expect(exited!.code, exited!.stderr).toBe(0);
    expect((JSON.parse(exited!.stdout) as { status: string }).status).toBe('completed');
    // each phase ran once (a claim whose answer was lost with its connection is handed back, and its next attempt runs)
    expect(lines(calls).map((l) => l.split(' ')[0])).toEqual(['a', 'b', 'c', 'd']);
  }, 60_000);

  /** An idle `baton worker` (or `baton serve`) on `storeUrl` whose connections then go dead; resolves once they are. */
  async function deadWorker(storeUrl: string, command: 'worker' | 'serve' = 'worker'): Promise<ReturnType<typeof baton>> {
    const w = baton([command, '--store', storeUrl, '--agents', 'agents.mjs', ...(command === 'serve' ? ['--port', '0'] : [])], { cwd: dir, env: { CALLS: join(dir, 'calls-worker') } });
    let err = '';
    w.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    await until(() => (command === 'serve' ? /listening on/ : /serving/).test(err), 30_000);
    // it looks at the store and listens on it: connections live, some with a statement in flight once dead
    await new Promise((r) => setTimeout(r, 1_500));
    proxy.blackhole();
    await new Promise((r) => setTimeout(r, 1_500));
    return w;
  }

  async function exitWithin(w: ReturnType<typeof baton>, ms: number): Promise<Awaited<ReturnType<typeof baton>['done']> | undefined> {
    const r = await Promise.race([w.done, new Promise<undefined>((res) => setTimeout(() => res(undefined), ms))]);
    if (!r) w.kill('SIGKILL');
    return r;
  }

  test('an idle baton worker whose connections went dead stops on SIGTERM', async () => {
    const w = await deadWorker(url(1000));
    w.kill('SIGTERM');
    const r = await exitWithin(w, 10_000);
    expect(r, 'still running 10 s after SIGTERM').toBeDefined();
    expect(r!.code, r!.stderr).toBe(0);
  }, 60_000);

  test('a stopping worker whose store does not answer has exited within 15 s of SIGTERM (a statement on a dead connection waits 60 s)', async () => {
    const w = await deadWorker(url());
    const t0 = performance.now();
    w.kill('SIGTERM');
    const r = await exitWithin(w, 20_000);
    expect(r, 'still running 20 s after SIGTERM').toBeDefined();
    expect(performance.now() - t0).toBeLessThan(WORKER_STOP_BOUND_MS + 1_500);
    expect(r!.code).toBe(143);
    expect(r!.stderr).toMatch(/the stop unfinished/);
  }, 60_000);

  test.each(['worker', 'serve'] as const)('a second SIGTERM ends a stopping baton %s at once, whatever it waits for (a statement on a dead connection: 60 s)', async (command) => {
    const w = await deadWorker(url(), command);
    w.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1_000));
    const t0 = performance.now();
    w.kill('SIGTERM');
    const r = await exitWithin(w, 5_000);
    expect(r, 'still running 5 s after the second SIGTERM').toBeDefined();
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(r!.code).toBe(143);
    expect(r!.stderr).toMatch(command === 'serve' ? /baton serve: stopping now/ : /worker stopping now/);
  }, 60_000);
});

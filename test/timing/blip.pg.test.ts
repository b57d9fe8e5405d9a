/**
 * `baton run` on PostgreSQL through a loopback TCP proxy that cuts every connection: a cut as the
 * command starts (before its first connection) and a cut mid-run are ridden out, with one line each,
 * and every phase runs once; a database that cannot be right however long one waits (it does not
 * exist) is said at once, exit 2.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PG_SERVER, testDatabase } from '../helpers/pg.js';
import { baton, until } from '../helpers/spawn.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { createEngine, createRemoteAgent, loadWorkflow } from '../../src/index.js';
import { openPostgresStore } from '../../src/store/postgres.js';

const db = testDatabase('baton_test_blip');
/** Phases of the chain whose commits are in flight nearly all the time. */
const INSTANT = 200;
let proxy: TcpProxy;
let dir: string;

beforeAll(async () => {
  await db.create();
  const pg = new URL(PG_SERVER);
  proxy = await startTcpProxy({ host: pg.hostname, port: Number(pg.port || 5432) });
  dir = mkdtempSync(join(tmpdir(), 'baton-blip-'));
  const phases = ['a', 'b', 'c', 'd', 'e'];
  writeFileSync(
    join(dir, 'workflow.yaml'),
    `openintent: "1.0"\ninfo: {name: blip}\nworkflow:\n${phases.map((p, i) => `  ${p}: {assign: slow, outputs: {n: number}${i > 0 ? `, depends_on: [${phases[i - 1]}]` : ''}}\n`).join('')}`,
  );
  writeFileSync(join(dir, 'instant.yaml'), chainOf('instant', INSTANT, 'quick'));
  writeFileSync(join(dir, 'instant.mjs'), `import { appendFileSync } from 'node:fs';\nexport default { quick: (ctx) => { appendFileSync(process.env.CALLS, ctx.runId + ' ' + ctx.phase + ' ' + ctx.attempt + '\\n'); return { n: 1 }; } };\n`);
  // each call is logged (a phase run twice would show twice), then takes 150 ms
  writeFileSync(join(dir, 'agents.mjs'), `import { appendFileSync } from 'node:fs';\nexport default { slow: async (ctx) => { appendFileSync(process.env.CALLS, ctx.runId + ' ' + ctx.phase + ' ' + ctx.attempt + '\\n'); await new Promise((r) => setTimeout(r, 150)); return { n: 1 }; } };\n`);
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await db.drop();
});

/** A run id fresh for each attempt of a test (CI runs a failed test again, on the same database). */
function fresh(name: string): string {
  return `${name}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

function storeUrl(): string {
  const u = new URL(db.url);
  u.port = String(proxy.port);
  u.hostname = '127.0.0.1';
  return u.href;
}

/** A workflow of `n` phases p0 ... p(n-1) of `agent`, each after the one before. */
function chainOf(name: string, n: number, agent: string, head = ''): string {
  let y = `openintent: "1.0"\ninfo: {name: ${name}}\n${head}workflow:\n`;
  for (let i = 0; i < n; i++) y += `  p${i}: {assign: ${agent}, outputs: {n: number}${i > 0 ? `, depends_on: [p${i - 1}]` : ''}}\n`;
  return y;
}

/**
 * The network holds every byte for 50 ms, then every connection is cut for `ms`: a commit that reached
 * the database meanwhile commits there and its answer is lost (whether one was on its way is timing;
 * the scenarios of test/engine/scenarios/in-doubt.ts make it certain on every store).
 */
async function heldThenCut(ms: number): Promise<void> {
  proxy.pause();
  await new Promise((r) => setTimeout(r, 50));
  const cut = proxy.cut(ms);
  proxy.resume();
  await cut;
}

function callsOf(runId: string, file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith(`${runId} `))
    .map((l) => l.slice(runId.length + 1));
}

describe('baton run rides out a database blip', () => {
  test('cut before the command connects (2 s): it waits with one line, then runs every phase once', async () => {
    const calls = join(dir, 'calls-start');
    writeFileSync(calls, '');
    const id = fresh('blip-start');
    // the cut lasts until 2 s after the command's first connection was refused: a cut of a fixed 2 s from
    // the spawn could be over before a loaded machine had started the command (it then connected at once)
    const refused = proxy.stats().refused;
    const cut = proxy.cut(60_000);
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', storeUrl(), '--run-id', id, '--json'], { cwd: dir, env: { CALLS: calls } });
    await until(() => proxy.stats().refused > refused, 30_000);
    await new Promise((r) => setTimeout(r, 2_000));
    proxy.heal();
    await cut;
    const r = await child.done;
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('store '));
    expect(lines).toEqual([expect.stringMatching(/^store unavailable, retrying for up to 30 s: cannot reach the PostgreSQL store/), expect.stringMatching(/^store available again after \d+\.\d s$/)]);
    // the command waited out the cut (2 s after its first refusal)
    expect(Number(/after (\d+\.\d) s$/.exec(lines[1]!)![1])).toBeGreaterThanOrEqual(1.5);
    expect((JSON.parse(r.stdout) as { status: string }).status).toBe('completed');
    expect(callsOf(id, calls)).toEqual(['a 1', 'b 1', 'c 1', 'd 1', 'e 1']);
  }, 60_000);

  test('cut mid-run (3 s): the run goes on when the database answers again, every phase once', async () => {
    const calls = join(dir, 'calls-mid');
    writeFileSync(calls, '');
    const id = fresh('blip-mid');
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', storeUrl(), '--run-id', id, '--json'], { cwd: dir, env: { CALLS: calls } });
    await until(() => callsOf(id, calls).length >= 2, 30_000);
    await proxy.cut(3_000);
    const r = await child.done;
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { status: string }).status).toBe('completed');
    expect(callsOf(id, calls)).toEqual(['a 1', 'b 1', 'c 1', 'd 1', 'e 1']);
  }, 60_000);

  test('cut as the run is created (3 s, as run.started is printed): the command waits as a worker does, every phase once', async () => {
    // the first reads after the creation (the drive taking the run up) were outside the store-retry
    // policy: `cannot reach the PostgreSQL store ...: ECONNRESET`, exit 2, the run left running
    const calls = join(dir, 'calls-created');
    writeFileSync(calls, '');
    const id = fresh('blip-created');
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', storeUrl(), '--run-id', id, '--json'], { cwd: dir, env: { CALLS: calls } });
    let err = '';
    let cut: Promise<void> | undefined;
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      // at once, in the same turn as the line arrives: not at the next poll of a condition
      if (cut === undefined && /run\.started/.test(err)) cut = proxy.cut(3_000);
    });
    const r = await child.done;
    await cut;
    expect(cut).toBeDefined();
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { status: string }).status).toBe('completed');
    expect(callsOf(id, calls)).toEqual(['a 1', 'b 1', 'c 1', 'd 1', 'e 1']);
    expect(r.stderr.split('\n').filter((l) => l.startsWith('store unavailable'))).toHaveLength(1);
  }, 60_000);

  test('cut while commits are in flight (a chain of instant phases): a commit that landed without its answer is found, every phase once', async () => {
    // the cut lands as a commit goes through, nearly always: its claim landed, its answer was lost. The
    // engine took that claim for failed and left the task running under its own live lease: the run hung
    const calls = join(dir, 'calls-flight');
    writeFileSync(calls, '');
    const id = fresh('blip-flight');
    const child = baton(['run', 'instant.yaml', '--agents', 'instant.mjs', '--store', storeUrl(), '--run-id', id, '--json'], { cwd: dir, env: { CALLS: calls } });
    // three cuts, each held first: what reached the database commits there, and its answer is lost
    for (const at of [40, 80, 120]) {
      await until(() => callsOf(id, calls).length >= at, 30_000);
      await heldThenCut(800);
    }
    const r = await child.done;
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { status: string }).status).toBe('completed');
    const ran = callsOf(id, calls).map((l) => l.split(' ')[0]!);
    expect(ran).toHaveLength(INSTANT);
    expect(new Set(ran).size).toBe(INSTANT);
  }, 60_000);

  test('a decision made during a cut (baton approve) waits for the database, then the gate is decided once', async () => {
    // it used to fail at once (exit 2), and a second try after a cut that lost only the answer was refused as already approved
    writeFileSync(join(dir, 'gated.yaml'), chainOf('gated', 2, 'quick').replace('p0: {assign: quick,', 'p0: {assign: quick, x-require_approval: {approvers: [alice]},'));
    const calls = join(dir, 'calls-gated');
    writeFileSync(calls, '');
    const id = fresh('blip-gate');
    const started = await baton(['run', 'gated.yaml', '--agents', 'instant.mjs', '--store', storeUrl(), '--run-id', id, '--detach', '--json'], { cwd: dir, env: { CALLS: calls } }).done;
    expect(started.code, started.stderr).toBe(0);
    // cut until the command has met it (a command that starts slowly on a loaded machine must still meet the cut), then healed
    const cut = proxy.cut(30_000);
    const approving = baton(['approve', id, 'approve-p0', '--store', storeUrl(), '--as', 'alice'], { cwd: dir });
    let said = '';
    approving.stderr!.on('data', (d: Buffer) => (said += d.toString()));
    await until(() => /store unavailable/.test(said), 25_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    proxy.heal();
    await cut;
    const r = await approving.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`gate approve-p0 of run ${id} approved by alice`);
    expect(r.stderr).toMatch(/^store unavailable, retrying for up to 30 s: cannot reach the PostgreSQL store/m);
    const done = await baton(['resume', id, '--agents', 'instant.mjs', '--store', storeUrl(), '--json'], { cwd: dir, env: { CALLS: calls } }).done;
    expect(done.code, done.stderr).toBe(0);
    expect((JSON.parse(done.stdout) as { status: string }).status).toBe('completed');
    const store = await openPostgresStore(db.url);
    try {
      expect((await store.events(id)).filter((e) => e.type === 'gate.decided')).toHaveLength(1);
    } finally {
      await store.close();
    }
    expect(callsOf(id, calls)).toEqual(['p0 1', 'p1 1']);
  }, 60_000);

  test('a port where nothing listens is waited for only briefly (a mistyped port), then exit 2', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const t0 = performance.now();
    const r = await baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', `postgres://postgres@127.0.0.1:${port}/nothing_here`], { cwd: dir, env: { CALLS: join(dir, 'calls-refused') } }).done;
    expect(r.code).toBe(2);
    expect(performance.now() - t0).toBeLessThan(15_000);
    expect(r.stderr).toMatch(/^store unavailable, retrying for up to 5 s: .*ECONNREFUSED/m);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);

  test('a database that does not exist is said at once (exit 2), not waited for', async () => {
    const u = new URL(storeUrl());
    u.pathname = '/baton_test_blip_no_such_database';
    const t0 = performance.now();
    const r = await baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', u.href], { cwd: dir, env: { CALLS: join(dir, 'calls-none') } }).done;
    expect(r.code).toBe(2);
    expect(performance.now() - t0).toBeLessThan(10_000);
    expect(r.stderr).not.toContain('retrying');
    expect(r.stderr).toMatch(/does not exist/);
  }, 60_000);

  test('so is it to a worker (which waits minutes for a store that is away), and an unknown role too', async () => {
    const u = new URL(storeUrl());
    u.pathname = '/baton_test_blip_no_such_database';
    const role = new URL(storeUrl());
    role.username = 'baton_test_no_such_role';
    for (const store of [u.href, role.href]) {
      const t0 = performance.now();
      const r = await baton(['worker', '--agents', 'agents.mjs', '--store', store], { cwd: dir, env: { CALLS: join(dir, 'calls-none') } }).done;
      expect(r.code, r.stderr).toBe(2);
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect(r.stderr).not.toContain('retrying');
      expect(r.stderr).toMatch(/does not exist/);
    }
  }, 60_000);

  test('a host name that does not resolve yet is waited for by a worker (a database container not up yet), and said at once to a command', async () => {
    const store = 'postgres://postgres@baton-test-no-such-host.invalid:5432/x';
    const run = await baton(['runs', '--store', store], { cwd: dir }).done;
    expect(run.code, run.stderr).toBe(2);
    const worker = baton(['worker', '--agents', 'agents.mjs', '--store', store], { cwd: dir, env: { CALLS: join(dir, 'calls-none') } });
    let err = '';
    worker.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    let exited = false;
    void worker.done.then(() => (exited = true));
    try {
      await until(() => err.includes('retrying') || exited, 15_000);
      expect(exited, err).toBe(false);
      expect(err).toMatch(/store unavailable, retrying/);
    } finally {
      worker.kill('SIGTERM');
      await worker.done;
    }
  }, 60_000);
});

describe('baton serve rides out a database blip with remote agents', () => {
  test('cut while remote completions commit: the run completes, every phase ran once and completed once, nothing stale', async () => {
    const OPS = 'ops-key-0123456789abcdef0123';
    const AGENT = 'agent-key-0123456789abcdef01';
    const server = baton(['serve', '--store', storeUrl(), '--port', '0'], { cwd: dir, env: { BATON_API_KEYS: `ops:operator:${OPS},q:agent:q:${AGENT}` } });
    let log = '';
    server.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    const ran = new Map<string, number>();
    let agent: { stop: (graceMs?: number) => Promise<void> } | undefined;
    try {
      await until(() => /listening on http:\/\/\S+/.test(log), 30_000);
      const url = /listening on (http:\/\/\S+)/.exec(log)![1]!;
      const n = 120;
      const y = chainOf('remote-blip', n, 'q', 'agents:\n  q: {x-remote: true}\n');
      agent = createRemoteAgent({
        url,
        key: AGENT,
        agent: 'q',
        concurrency: 2,
        handler: (ctx) => {
          ran.set(ctx.phase, (ran.get(ctx.phase) ?? 0) + 1);
          return { n: Number(ctx.phase.slice(1)) };
        },
      });
      const res = await fetch(`${url}/runs`, { method: 'POST', headers: { authorization: `Bearer ${OPS}`, 'content-type': 'application/json' }, body: JSON.stringify({ workflow: y }) });
      expect(res.status).toBe(201);
      const { run_id } = (await res.json()) as { run_id: string };
      for (const at of [25, 50, 75]) {
        await until(() => ran.size >= at, 30_000);
        await heldThenCut(800);
      }
      let status = '';
      await until(async () => {
        const r = await fetch(`${url}/runs/${run_id}`, { headers: { authorization: `Bearer ${OPS}` } });
        status = ((await r.json()) as { status: string }).status;
        return status !== 'running' && status !== 'waiting';
      }, 45_000);
      expect(status, log).toBe('completed');
      expect(ran.size).toBe(n);
      expect([...ran].filter(([, c]) => c !== 1)).toEqual([]);
      // the stored log, straight from the database (not through the proxy)
      const store = await openPostgresStore(db.url);
      try {
        const events = await store.events(run_id);
        expect(events.filter((e) => e.type === 'task.completed')).toHaveLength(n);
        expect(events.filter((e) => e.type === 'task.stale_outcome')).toEqual([]);
      } finally {
        await store.close();
      }
    } finally {
      await agent?.stop(500);
      server.kill('SIGTERM');
      await server.done;
    }
  }, 90_000);
});

describe('the package rides out a database blip in its commands', () => {
  test('rerun and resume called while every connection is cut wait for the database, then do their work once', async () => {
    // they failed at once (the reads before the creation were not waited out), where approve and cancel waited
    const store = await openPostgresStore(storeUrl());
    const ran: string[] = [];
    const engine = createEngine({ store, agents: { quick: (ctx) => (ran.push(`${ctx.runId} ${ctx.phase}`), { n: 1 }) }, storeRetryMs: 20_000 });
    try {
      writeFileSync(join(dir, 'pair.yaml'), chainOf('pair', 2, 'quick'));
      const compiled = await loadWorkflow(join(dir, 'pair.yaml'));
      if (!compiled.ok) throw new Error('pair.yaml does not compile');
      const first = await engine.run(compiled.model, { runId: fresh('pkg-blip') });
      expect(first.status).toBe('completed');
      const cut = proxy.cut(1_500);
      const t0 = performance.now();
      const again = await engine.rerun(first.runId, 'p1');
      expect(performance.now() - t0).toBeGreaterThan(1_000);
      await cut;
      const cut2 = proxy.cut(1_500);
      const result = await engine.resume(again);
      await cut2;
      expect(result.status).toBe('completed');
      expect(ran).toEqual([`${first.runId} p0`, `${first.runId} p1`, `${again} p1`]);
    } finally {
      await engine.close();
      await store.close();
    }
  }, 60_000);
});

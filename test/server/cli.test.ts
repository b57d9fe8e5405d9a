/**
 * `baton serve` and `baton run FILE --server URL --api-key KEY` through the CLI: in process against
 * a loopback server, through a TCP proxy that cuts the event stream mid-run (the run is followed to
 * its end, every event once), and as real processes (serve in one, run in another).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run as cli } from '../../src/cli/main.js';
import { baton, batonRun, until } from '../helpers/spawn.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { ASK, CHAIN, FAILS, GATED, KEYS, KEYS_ENV, SLOW, api, startHarness, type Harness } from './harness.js';
import { eventsOf, readStream } from './sse.js';

function io(cwd: string, env: Record<string, string> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => (out += s), stderr: (s) => (err += s), isTTY: false, cwd, env, out: () => out, err: () => err };
}

describe('baton run FILE --server URL', () => {
  let h: Harness;
  let dir: string;
  beforeAll(async () => {
    h = await startHarness('sqlite');
    dir = mkdtempSync(join(tmpdir(), 'baton-remote-'));
    writeFileSync(join(dir, 'chain.yaml'), CHAIN);
    writeFileSync(join(dir, 'fails.yaml'), FAILS);
    writeFileSync(join(dir, 'gated.yaml'), GATED);
    writeFileSync(join(dir, 'broken.yaml'), 'openintent: "1.0"\ninfo: {name: b}\nworkflow:\n  a: {assign: x, depends_on: [zz]}\n');
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The id of the run's open gate, once it has one. */
  const openGate = async (runId: string): Promise<string> => {
    let id: string | undefined;
    await until(async () => {
      const gates = (await api(h.url, 'GET', `/runs/${runId}/gates?status=open`, { key: KEYS.reader })).body['gates'] as { id: string }[] | undefined;
      id = gates?.[0]?.id;
      return id !== undefined;
    }, 10_000);
    return id!;
  };

  test('runs on the server with progress, exits 0 when the run completes', async () => {
    const t = io(dir);
    expect(await cli(['run', 'chain.yaml', '--server', h.url, '--api-key', KEYS.operator], t)).toBe(0);
    expect(t.err()).toMatch(new RegExp(`^run \\S+ on ${h.url.replace(/[.:/]/g, '\\$&')}`, 'm'));
    // the progress view of a local run: a line per phase as it starts and ends
    expect(t.out()).toMatch(/\ba\b[\s\S]*\bb\b/);
    expect(t.out()).toMatch(/^run \S+ completed in/m);
  });

  test('--json prints the result with its events; BATON_API_KEY stands for --api-key', async () => {
    const t = io(dir, { BATON_API_KEY: KEYS.operator });
    expect(await cli(['run', 'chain.yaml', '--server', h.url, '--json', '--run-id', 'cli-json'], t)).toBe(0);
    const result = JSON.parse(t.out()) as { runId: string; status: string; phases: Record<string, { output: unknown }>; events: { seq: number }[] };
    expect(result).toMatchObject({ runId: 'cli-json', status: 'completed', phases: { b: { output: { m: 'got {"n":1}' } } } });
    expect(result.events.map((e) => e.seq)).toEqual(result.events.map((_, i) => i + 1));
    expect(result.events).toEqual(JSON.parse(JSON.stringify(await h.store.events('cli-json'))));
  });

  test('TRACEPARENT goes to the server with the start: the run records it, so its trace continues the caller\'s', async () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const t = io(dir, { BATON_API_KEY: KEYS.operator, TRACEPARENT: tp });
    expect(await cli(['run', 'chain.yaml', '--server', h.url, '-q', '--run-id', 'cli-traced'], t)).toBe(0);
    expect((await h.store.run('cli-traced'))?.options['traceparent']).toBe(tp);
  });

  test('a failed run exits 1; --detach prints the id and exits 0', async () => {
    expect(await cli(['run', 'fails.yaml', '--server', h.url, '--api-key', KEYS.operator, '-q'], io(dir))).toBe(1);
    const t = io(dir);
    expect(await cli(['run', 'chain.yaml', '--server', h.url, '--api-key', KEYS.operator, '--detach'], t)).toBe(0);
    const id = t.out().trim();
    expect((await h.store.run(id))?.workflowName).toBe('chain');
    await readStream(`${h.url}/runs/${id}/events`, { key: KEYS.reader });
  });

  test('refusals exit 2 with the server’s message: no key, a reader key, an unreachable server, local-only flags, an invalid workflow', async () => {
    const before = (await h.store.runs({ limit: 1000 })).length;
    const noKey = io(dir);
    expect(await cli(['run', 'chain.yaml', '--server', h.url], noKey)).toBe(2);
    expect(noKey.err()).toMatch(/an API key is required.*HTTP 401/);
    const readerKey = io(dir);
    expect(await cli(['run', 'chain.yaml', '--server', h.url, '--api-key', KEYS.reader, '--json'], readerKey)).toBe(2);
    expect(JSON.parse(readerKey.out())).toMatchObject({ error: { code: 'forbidden' } });
    const down = io(dir);
    expect(await cli(['run', 'chain.yaml', '--server', 'http://127.0.0.1:9', '--api-key', KEYS.operator], down)).toBe(2);
    expect(down.err()).toMatch(/cannot be reached/);
    const local = io(dir);
    expect(await cli(['run', 'chain.yaml', '--server', h.url, '--stub-agents'], local)).toBe(2);
    expect(local.err()).toMatch(/--stub-agents does not go with --server/);
    const bad = io(dir);
    expect(await cli(['run', 'broken.yaml', '--server', h.url, '--api-key', KEYS.operator], bad)).toBe(2);
    expect(bad.err()).toMatch(/the workflow is invalid; nothing was run/);
    expect(await cli(['run', 'chain.yaml', '--server', 'ftp://x', '--api-key', KEYS.operator], io(dir))).toBe(2);
    expect(await cli(['run', 'chain.yaml', '--api-key', KEYS.operator], io(dir))).toBe(2);
    expect((await h.store.runs({ limit: 1000 })).length).toBe(before);
  });

  test('approve, deny, respond and cancel with --server act through the API, as the key’s name', async () => {
    writeFileSync(join(dir, 'ask.yaml'), ASK);
    writeFileSync(join(dir, 'slow.yaml'), SLOW);
    // an approval gate whose approvers are [alice]
    expect(await cli(['run', 'gated.yaml', '--server', h.url, '--api-key', KEYS.operator, '--detach', '--run-id', 'cli-decide'], io(dir))).toBe(0);
    const gate = await openGate('cli-decide');
    const bob = io(dir);
    expect(await cli(['approve', 'cli-decide', gate, '--server', h.url, '--api-key', KEYS.operator], bob)).toBe(1);
    expect(bob.err()).toMatch(/HTTP 403/);
    const carol = io(dir);
    expect(await cli(['deny', 'cli-decide', gate, '--server', h.url, '--api-key', KEYS.reader, '--json'], carol)).toBe(2);
    expect(JSON.parse(carol.out())).toMatchObject({ error: { code: 'forbidden' } });
    const both = io(dir);
    expect(await cli(['approve', 'cli-decide', gate, '--server', h.url, '--store', 'memory'], both)).toBe(2);
    expect(both.err()).toMatch(/--store does not go with --server/);
    const alice = io(dir, { BATON_API_KEY: KEYS.alice });
    expect(await cli(['approve', 'cli-decide', gate, '--server', h.url, '--comment', 'fine'], alice)).toBe(0);
    expect(alice.out()).toMatch(new RegExp(`gate ${gate} of run cli-decide approved by alice`));
    await until(async () => (await h.store.run('cli-decide'))?.status === 'completed', 10_000);
    // an input gate with choices: a bare word that is one of them is that string
    expect(await cli(['run', 'ask.yaml', '--server', h.url, '--api-key', KEYS.operator, '--detach', '--run-id', 'cli-ask'], io(dir))).toBe(0);
    const q = await openGate('cli-ask');
    const answer = io(dir);
    expect(await cli(['respond', 'cli-ask', q, '--value', 'blue', '--server', h.url, '--api-key', KEYS.operator, '--json'], answer)).toBe(0);
    expect(JSON.parse(answer.out())).toMatchObject({ runId: 'cli-ask', gateId: q, decision: 'answered', value: 'blue', by: 'bob' });
    await until(async () => (await h.store.run('cli-ask'))?.status === 'completed', 10_000);
    expect((await api(h.url, 'GET', '/runs/cli-ask', { key: KEYS.reader })).body).toMatchObject({ phases: { q: { output: { answer: 'blue' } } } });
    // cancel a running run; once more: it has ended (1)
    expect(await cli(['run', 'slow.yaml', '--server', h.url, '--api-key', KEYS.operator, '--detach', '--run-id', 'cli-cancel'], io(dir))).toBe(0);
    const cancel = io(dir);
    expect(await cli(['cancel', 'cli-cancel', '--server', h.url, '--api-key', KEYS.operator, '--reason', 'no longer needed'], cancel)).toBe(0);
    expect(cancel.out()).toMatch(/run cli-cancel cancelled on/);
    await until(async () => (await h.store.run('cli-cancel'))?.status === 'cancelled', 10_000);
    const again = io(dir);
    expect(await cli(['cancel', 'cli-cancel', '--server', h.url, '--api-key', KEYS.operator], again)).toBe(1);
    expect(again.err()).toMatch(/already cancelled.*HTTP 409/);
  });

  test('approve --server rides out a cut: tried again, and when the lost answer was its own decision, that is its success (exit 0, decided once)', async () => {
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(h.url).port) });
    const via = `http://127.0.0.1:${proxy.port}`;
    try {
      const decisions = async (runId: string): Promise<number> =>
        ((await api(h.url, 'GET', `/runs/${runId}/events?type=gate.decided`, { key: KEYS.reader })).body['events'] as unknown[]).length;

      // 1. the server unreachable for a moment (every connection reset): the command waits, then decides
      expect(await cli(['run', 'gated.yaml', '--server', h.url, '--api-key', KEYS.operator, '--detach', '--run-id', 'cli-blip'], io(dir))).toBe(0);
      const g1 = await openGate('cli-blip');
      const cut = proxy.cut(1_200);
      const first = io(dir, { BATON_API_KEY: KEYS.alice });
      expect(await cli(['approve', 'cli-blip', g1, '--server', via, '--comment', 'ok'], first)).toBe(0);
      await cut;
      expect(first.out()).toMatch(new RegExp(`gate ${g1} of run cli-blip approved by alice`));
      expect(first.err()).toMatch(/server unavailable, retrying/);
      expect(await decisions('cli-blip')).toBe(1);

      // 2. the approval lands and its answer is lost (held, then the connection reset): the retry is refused
      // as already approved, finds the gate approved as it asked, and succeeds
      expect(await cli(['run', 'gated.yaml', '--server', h.url, '--api-key', KEYS.operator, '--detach', '--run-id', 'cli-lost'], io(dir))).toBe(0);
      const g2 = await openGate('cli-lost');
      proxy.holdReplies();
      const second = io(dir, { BATON_API_KEY: KEYS.alice });
      const running = cli(['approve', 'cli-lost', g2, '--server', via, '--comment', 'fine'], second);
      await until(async () => (await decisions('cli-lost')) === 1, 10_000);
      proxy.releaseReplies();
      await proxy.cut(300);
      expect(await running).toBe(0);
      expect(second.out()).toMatch(new RegExp(`gate ${g2} of run cli-lost approved by alice`));
      expect(await decisions('cli-lost')).toBe(1);
      // a plain repeat, with no lost answer before it, is still refused (the gate decided, or the run since ended)
      const repeat = io(dir, { BATON_API_KEY: KEYS.alice });
      expect(await cli(['approve', 'cli-lost', g2, '--server', via, '--comment', 'fine'], repeat)).toBe(1);
      expect(repeat.err()).toMatch(/already approved|the run is completed/);

      // 3. a cancel whose answer is lost: the retry meets a run already cancelled, which is its own doing
      writeFileSync(join(dir, 'slow.yaml'), SLOW);
      expect(await cli(['run', 'slow.yaml', '--server', h.url, '--api-key', KEYS.operator, '--detach', '--run-id', 'cli-lost-cancel'], io(dir))).toBe(0);
      proxy.holdReplies();
      const third = io(dir);
      const cancelling = cli(['cancel', 'cli-lost-cancel', '--server', via, '--api-key', KEYS.operator], third);
      await until(async () => (await h.store.run('cli-lost-cancel'))?.status === 'cancelled', 10_000);
      proxy.releaseReplies();
      await proxy.cut(300);
      expect(await cancelling, third.err()).toBe(0);
      expect(third.out()).toMatch(/run cli-lost-cancel cancelled on/);
    } finally {
      await proxy.close();
    }
  }, 60_000);

  test('a fan-out item\u2019s gate followed from the server: the printed commands and URL reach it as printed', async () => {
    writeFileSync(join(dir, 'ask-items.yaml'), ASK.replace('    assign: asker\n', '    assign: asker\n    for_each: $trigger.xs\n').replace('info: {name: ask}', 'info: {name: ask-items}\nx-trigger: {xs: "integer[]"}'));
    const t = io(dir);
    const done = cli(['run', 'ask-items.yaml', '--server', h.url, '--api-key', KEYS.operator, '--run-id', 'cli-ask-items', '--trigger', '{"xs": [1]}'], t);
    await until(() => t.err().includes('needs a decision'));
    expect(t.err()).toContain("baton respond cli-ask-items 'input-q[0]-1' --server");
    // `[0]` in a URL is a range to curl: the printed one is percent-encoded, and the server answers it
    const url = /or POST (\S+)\/respond/.exec(t.err())?.[1];
    expect(url).toBe(`${h.url}/runs/cli-ask-items/gates/input-q%5B0%5D-1`);
    const answered = await fetch(`${url!}/respond`, { method: 'POST', headers: { authorization: `Bearer ${KEYS.operator}`, 'content-type': 'application/json' }, body: JSON.stringify({ value: 'red' }) });
    expect(answered.status).toBe(200);
    expect(await done).toBe(0);
  }, 30_000);

  test('the event stream cut mid-run (a gate open): the CLI reconnects with Last-Event-ID and sees every event once', async () => {
    const port = Number(new URL(h.url).port);
    const proxy = await startTcpProxy({ host: '127.0.0.1', port });
    try {
      const t = io(dir);
      const done = cli(['run', 'gated.yaml', '--server', `http://127.0.0.1:${proxy.port}`, '--api-key', KEYS.operator, '--run-id', 'cut-run', '--json'], t);
      // the CLI has read gate.opened from its stream (it says so): the stream's connection is live; cut it
      await until(() => t.err().includes('needs a decision'));
      await proxy.cut(300);
      const gates = (await api(h.url, 'GET', '/runs/cut-run/gates', { key: KEYS.reader })).body['gates'] as { id: string }[];
      expect((await api(h.url, 'POST', `/runs/cut-run/gates/${gates[0]!.id}/approve`, { key: KEYS.alice })).status).toBe(200);
      expect(await done).toBe(0);
      expect(proxy.stats().cuts).toBe(1);
      const result = JSON.parse(t.out()) as { status: string; events: { seq: number }[] };
      expect(result.status).toBe('completed');
      expect(result.events.map((e) => e.seq)).toEqual(result.events.map((_, i) => i + 1));
      expect(result.events).toEqual(JSON.parse(JSON.stringify(await h.store.events('cut-run'))));
      expect(eventsOf((await readStream(`${h.url}/runs/cut-run/events`, { key: KEYS.reader })).messages).length).toBe(result.events.length);
    } finally {
      await proxy.close();
    }
  });
});

describe('baton serve as a process', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-serve-'));
    writeFileSync(join(dir, 'chain.yaml'), CHAIN);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('with keys: serves runs that `baton run --server` (another process) follows to the end; SIGTERM stops it cleanly', async () => {
    const server = baton(['serve', '--port', '0', '--store', 'runs.db', '--stub-agents', '--workflows', '.'], { cwd: dir, env: { BATON_API_KEYS: KEYS_ENV } });
    try {
      let stderr = '';
      server.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      // the start-up lines may arrive in several chunks: wait for the last of them
      await until(() => /listening on (http:\/\/\S+)/.test(stderr) && /\nworker \S+: /.test(stderr), 30_000);
      const url = /listening on (http:\/\/\S+)/.exec(stderr)![1]!;
      expect(stderr).toMatch(/5 API keys: root \(admin\), bob \(operator\), carol \(reader\), alice \(operator\), fetcher \(agent:x\)/);
      expect(stderr).toMatch(/workflows: chain/);
      const r = await batonRun(['run', 'chain.yaml', '--server', url, '--api-key', KEYS.operator], { cwd: dir });
      expect([r.code, r.stderr]).toEqual([0, expect.stringMatching(/on http:\/\/127\.0\.0\.1/) as unknown]);
      expect(r.stdout).toMatch(/completed/);
      const byName = await api(url, 'POST', '/runs', { key: KEYS.operator, body: { workflow_name: 'chain' } });
      expect(byName.status).toBe(201);
      expect((await readStream(`${url}/runs/${byName.body['run_id'] as string}/events`, { key: KEYS.reader })).ended).toBe(true);
      server.kill('SIGTERM');
      const done = await server.done;
      expect(done.code).toBe(0);
    } finally {
      server.kill('SIGKILL');
    }
  }, 60_000);

  test('without keys: loopback only, and it says so; another host is refused (exit 2)', async () => {
    const server = baton(['serve', '--port', '0', '--store', 'memory'], { cwd: dir, env: { BATON_API_KEYS: '' } });
    try {
      let stderr = '';
      server.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      await until(() => /listening on/.test(stderr) && /\nworker \S+: /.test(stderr), 30_000);
      expect(stderr).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
      expect(stderr).toMatch(/no API keys: listening on loopback only/);
      server.kill('SIGTERM');
      expect((await server.done).code).toBe(0);
    } finally {
      server.kill('SIGKILL');
    }
    const refused = await batonRun(['serve', '--port', '0', '--host', '0.0.0.0', '--store', 'memory'], { cwd: dir, env: { BATON_API_KEYS: '' } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/without API keys the server listens on loopback only/);
  }, 60_000);

  test('a run survives a server restart: stopped while it waits at a gate, decided on the next server, completed', async () => {
    writeFileSync(join(dir, 'gated.yaml'), GATED);
    const serve = async (): Promise<{ url: string; proc: ReturnType<typeof baton> }> => {
      const proc = baton(['serve', '--port', '0', '--store', 'restart.db', '--stub-agents'], { cwd: dir, env: { BATON_API_KEYS: KEYS_ENV } });
      let stderr = '';
      proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      await until(() => /listening on (http:\/\/\S+)/.test(stderr), 30_000);
      return { url: /listening on (http:\/\/\S+)/.exec(stderr)![1]!, proc };
    };
    const first = await serve();
    let second: Awaited<ReturnType<typeof serve>> | undefined;
    try {
      const { readFileSync } = await import('node:fs');
      const started = await api(first.url, 'POST', '/runs', { key: KEYS.operator, body: { workflow: readFileSync(join(dir, 'gated.yaml'), 'utf8'), run_id: 'survivor' } });
      expect(started.status).toBe(201);
      const s = await readStream(`${first.url}/runs/survivor/events`, { key: KEYS.reader, until: (m) => m.event === 'gate.opened' });
      const lastSeq = eventsOf(s.messages).at(-1)!.seq;
      first.proc.kill('SIGTERM');
      expect((await first.proc.done).code).toBe(0);
      second = await serve();
      const gates = (await api(second.url, 'GET', '/runs/survivor/gates?status=open', { key: KEYS.reader })).body['gates'] as { id: string }[];
      expect(gates).toHaveLength(1);
      expect((await api(second.url, 'POST', `/runs/survivor/gates/${gates[0]!.id}/approve`, { key: KEYS.alice })).status).toBe(200);
      const rest = await readStream(`${second.url}/runs/survivor/events`, { key: KEYS.reader, lastEventId: String(lastSeq) });
      expect(rest.ended).toBe(true);
      expect(eventsOf(rest.messages)[0]!.seq).toBe(lastSeq + 1);
      expect(JSON.parse(rest.messages.at(-1)!.data)).toMatchObject({ status: 'completed' });
      // a repeat of the start on the new server is the same run
      expect((await api(second.url, 'POST', '/runs', { key: KEYS.operator, body: { workflow: readFileSync(join(dir, 'gated.yaml'), 'utf8'), run_id: 'survivor' } })).status).toBe(200);
    } finally {
      first.proc.kill('SIGKILL');
      second?.proc.kill('SIGTERM');
      if (second) await second.proc.done;
    }
  }, 90_000);

  test('bad keys and flags are usage errors, never a stack trace', async () => {
    writeFileSync(join(dir, 'keys.json'), JSON.stringify({ keys: [{ name: 'x', roles: ['root'], key: 'k'.repeat(20) }] }));
    writeFileSync(join(dir, 'dupkey.json'), JSON.stringify({ keys: [{ name: 'alice', roles: ['operator'], key: 's'.repeat(20) }, { name: 'mallory', roles: ['reader'], key: 's'.repeat(20) }] }));
    writeFileSync(join(dir, 'one.json'), JSON.stringify({ keys: [{ name: 'mallory', roles: ['reader'], key: 's'.repeat(20) }] }));
    for (const [args, env, re] of [
      [['--keys', 'keys.json'], {}, /unknown role `root`/],
      [[], { BATON_API_KEYS: 'alice:operator:short' }, /shorter than 16/],
      [[], { BATON_API_KEYS: 'nonsense' }, /expected NAME:ROLE:KEY/],
      [['--port', '70000'], {}, /--port expects a port number/],
      [['--keys', 'missing.json'], {}, /no such file/],
      [['--body-limit', '0'], {}, /--body-limit expects a number of bytes/],
      [['--file-limit', '1.5'], {}, /--file-limit expects a number of bytes/],
      [['--workflows', 'nowhere'], {}, /--workflows nowhere: no such directory/],
      // one key under two names: in one file, or across the file and BATON_API_KEYS
      [['--keys', 'dupkey.json'], {}, /`mallory` has the same key as `alice`/],
      [['--keys', 'one.json'], { BATON_API_KEYS: `alice:operator:${'s'.repeat(20)}` }, /`mallory` has the same key as `alice`/],
    ] as const) {
      const r = await batonRun(['serve', '--store', 'memory', ...args], { cwd: dir, env: { BATON_API_KEYS: '', ...env } });
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(re) as unknown]);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  }, 60_000);
});

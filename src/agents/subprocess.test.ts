import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { JsonObject } from '../core/json.js';
import { AgentError, type AgentContext, type ClosableAgent } from '../engine/agent.js';
import { fakeContext } from '../engine/testing.js';
import { subprocessAgent, type SubprocessOptions } from './subprocess.js';

const fixtures = fileURLToPath(new URL('../../test/fixtures/agents/', import.meta.url));
const node = (script: string): string[] => [process.execPath, `${fixtures}${script}`];

function ctx(input: JsonObject = {}, over: Partial<AgentContext> = {}): AgentContext {
  return fakeContext({ input, phase: 'research', taskId: 'task-1', runId: 'run-1', idempotencyKey: 'run-1:research', agent: 'researcher', initialState: { seed: 1 }, ...over });
}

const open: ClosableAgent[] = [];
function agent(opts: SubprocessOptions): ClosableAgent {
  const a = subprocessAgent(opts);
  open.push(a);
  return a;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()));
});

async function run(a: ClosableAgent, c: AgentContext): Promise<unknown> {
  return await a.handler(c);
}

async function failure(p: Promise<unknown>): Promise<AgentError> {
  const e: unknown = await p.then(
    (v) => {
      throw new Error(`expected a failure, got ${JSON.stringify(v)}`);
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(AgentError);
  return e as AgentError;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('subprocess agent, once mode', () => {
  it("a process that exits names its error from stderr, not Node's closing `Node.js v20` line", async () => {
    const missing = await failure(run(agent({ command: [process.execPath, '-e', "require('no-such-module-anywhere')"] }), ctx()));
    expect(missing.code).toBe('SubprocessExit');
    expect(missing.message).toContain("Cannot find module 'no-such-module-anywhere'");
    expect(missing.message).not.toMatch(/Node\.js v\d/);
    // for Python, the traceback's last line is the error
    const py = await failure(run(agent({ command: 'printf \'Traceback (most recent call last):\\n  File "a.py", line 1, in <module>\\nValueError: bad input\\n\' >&2; exit 1' }), ctx()));
    expect(py.message).toMatch(/: ValueError: bad input$/);
    // the same rule serves a serve-mode process that dies
    const serve = await failure(run(agent({ command: [process.execPath, '-e', "require('no-such-module-anywhere')"], mode: 'serve' }), ctx()));
    expect(serve.message).toContain("Cannot find module 'no-such-module-anywhere'");
  });

  it('writes the request as JSON on stdin and returns the JSON printed on stdout', async () => {
    const a = agent({ command: node('echo-once.mjs'), cwd: fixtures, env: { BATON_FIXTURE: 'yes' } });
    const out = await run(a, ctx({ topic: 'tides' }, { attempt: 2 }));
    expect(out).toEqual({
      echo: { topic: 'tides' },
      phase: 'research',
      attempt: 2,
      task_id: 'task-1',
      run_id: 'run-1',
      agent: 'researcher',
      initial_state: { seed: 1 },
      cwd: fixtures.replace(/\/$/, ''),
      env: 'yes',
    });
  });

  it('passes a _cost field through for the engine to take', async () => {
    const a = agent({ command: node('echo-once.mjs') });
    expect(await run(a, ctx({ cost: 0.01 }))).toMatchObject({ _cost: 0.01 });
  });

  it('fails with SubprocessExit on a non-zero exit, keeping stderr', async () => {
    const a = agent({ command: node('fail.mjs'), agentId: 'failing' });
    const e = await failure(run(a, ctx()));
    expect(e.code).toBe('SubprocessExit');
    expect(e.retryable).toBe(true);
    expect(e.details).toMatchObject({ exit_code: 3, signal: null, stderr: 'something broke\n' });
  });

  it('keeps only the tail of a large stderr', async () => {
    const a = agent({ command: node('fail.mjs'), env: { FAIL_BIG: '1' } });
    const e = await failure(run(a, ctx()));
    const stderr = e.details['stderr'] as string;
    expect(stderr.length).toBeLessThanOrEqual(64 * 1024);
    expect(stderr.endsWith('something broke\n')).toBe(true);
  });

  it('a process that prints nothing returned nothing (RFC-0024 §9): undefined, for the completion check to judge', async () => {
    const a = agent({ command: [process.execPath, '-e', ''] });
    expect(await run(a, ctx())).toBeUndefined();
    const spaces = agent({ command: [process.execPath, '-e', 'process.stdout.write(" \\n")'] });
    expect(await run(spaces, ctx())).toBeUndefined();
  });

  it('fails with SubprocessBadOutput when stdout is not JSON', async () => {
    const a = agent({ command: node('garbage.mjs') });
    const e = await failure(run(a, ctx()));
    expect(e.code).toBe('SubprocessBadOutput');
    expect(e.details['stdout']).toBe('this is not json');
  });

  it('fails with a non-retryable SubprocessSpawn when the command does not exist', async () => {
    const a = agent({ command: ['/nonexistent/baton-agent', '--flag'] });
    const e = await failure(run(a, ctx()));
    expect(e.code).toBe('SubprocessSpawn');
    expect(e.retryable).toBe(false);
    expect(e.details['errno']).toBe('ENOENT');
  });

  it('tells a missing working directory from a missing command (one message said both)', async () => {
    const gone = join(tmpdir(), 'baton-no-such-dir-' + process.pid);
    const e = await failure(run(agent({ command: [process.execPath, '-e', ''], cwd: gone }), ctx()));
    expect(e.message).toBe(`agent 'researcher': cannot start '${process.execPath} -e ': the working directory ${gone} does not exist`);
    const e2 = await failure(run(agent({ command: ['/nonexistent/baton-agent'] }), ctx()));
    expect(e2.message).toBe("agent 'researcher': cannot start '/nonexistent/baton-agent': command not found (or the interpreter its #! line names)");
  });

  it('says in words that a command is not executable (it printed Node\'s `spawn X EACCES`)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-noexec-'));
    writeFileSync(join(dir, 'agent.sh'), '#!/bin/sh\necho {}\n', { mode: 0o644 });
    const a = agent({ command: ['./agent.sh'], cwd: dir });
    const e = await failure(run(a, ctx()));
    expect(e.code).toBe('SubprocessSpawn');
    expect(e.details['errno']).toBe('EACCES');
    expect(e.message).toBe("agent 'researcher': cannot start './agent.sh': permission denied (is the file executable? chmod +x it, or run it through its interpreter)");
  });

  it('kills the process when the attempt is aborted', async () => {
    const a = agent({ command: node('sleep.mjs') });
    const ctl = new AbortController();
    const started = Date.now();
    const p = run(a, ctx({}, { signal: ctl.signal }));
    ctl.abort(new Error('timed out'));
    const e = await failure(p);
    expect(e.code).toBe('Aborted');
    expect(e.details).toMatchObject({ signal: 'SIGTERM', reason: 'timed out' });
    expect(Date.now() - started).toBeLessThan(5000); // the script sleeps 10 s
  });

  it('does not start a process for an attempt already aborted', async () => {
    const a = agent({ command: ['/nonexistent/baton-agent'] });
    const ctl = new AbortController();
    ctl.abort('cancelled');
    expect((await failure(run(a, ctx({}, { signal: ctl.signal })))).code).toBe('Aborted');
  });

  it('runs a string command through the shell', async () => {
    const a = agent({ command: 'cat | cat' });
    expect(await run(a, ctx({ n: 1 }))).toMatchObject({ input: { n: 1 }, task_id: 'task-1', run_id: 'run-1', attempt: 1 });
    const b = agent({ command: `printf '{"v": "%s"}\\n' "$BATON_FIXTURE"`, env: { BATON_FIXTURE: 'from env' } });
    expect(await run(b, ctx())).toEqual({ v: 'from env' });
  });

  it('runs an agent written in Python', async () => {
    const a = agent({ command: ['python3', `${fixtures}agent.py`] });
    expect(await run(a, ctx({ name: 'Ada' }))).toEqual({ greeting: 'hello Ada' });
  });

  it('close() ends the processes in flight and refuses new attempts', async () => {
    const a = agent({ command: node('sleep.mjs') });
    const p = run(a, ctx());
    await a.close();
    const e = await failure(p);
    expect(e.code).toBe('SubprocessClosed');
    expect(e.details['signal']).toBe('SIGTERM');
    expect((await failure(run(a, ctx()))).code).toBe('SubprocessClosed');
  });
});

describe('subprocess agent, once mode: checkpoints on fd 3', () => {
  it('saves each JSON line as a checkpoint, in order, and passes last_checkpoint to a retry', async () => {
    const saved: unknown[] = [];
    const logs: string[] = [];
    const a = agent({ command: node('checkpoint.mjs') });
    const out = await run(a, ctx({ upto: 3, junk: true }, { attempt: 2, lastCheckpoint: { step: 1 }, checkpoint: (v) => (saved.push(v), Promise.resolve()), log: (m) => void logs.push(m) }));
    expect(out).toEqual({ from: 1, attempt: 2 });
    expect(saved).toEqual([{ step: 2 }, { step: 3 }]);
    expect(logs.join('\n')).toMatch(/checkpoint line on fd 3 is not JSON; dropped/);
  });

  it('keeps what a process saved before it timed out', async () => {
    const saved: unknown[] = [];
    const ac = new AbortController();
    const a = agent({ command: node('checkpoint.mjs'), killGraceMs: 200 });
    const p = run(a, ctx({ upto: 2, hang: true }, { signal: ac.signal, checkpoint: (v) => (saved.push(v), Promise.resolve()) }));
    await vi.waitFor(() => expect(saved).toHaveLength(2));
    ac.abort(new Error('timeout'));
    await expect(p).rejects.toMatchObject({ code: 'Aborted' });
    expect(saved).toEqual([{ step: 1 }, { step: 2 }]);
  });
});

describe('subprocess agent, serve mode', () => {
  const serve = (extra: Partial<SubprocessOptions> = {}): ClosableAgent => agent({ command: node('serve.mjs'), mode: 'serve', ...extra });

  it('serves many concurrent requests from one process, matching answers by id', async () => {
    const a = serve();
    // Later requests answer first: matching must go by id, not order.
    const outs = (await Promise.all(Array.from({ length: 20 }, (_, i) => run(a, ctx({ i, delay: (20 - i) * 2 }, { attempt: i + 1 }))))) as {
      echo: { i: number };
      pid: number;
      attempt: number;
    }[];
    expect(outs.map((o) => o.echo.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(outs.map((o) => o.attempt)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const pids = new Set(outs.map((o) => o.pid));
    expect(pids.size).toBe(1);
    const again = (await run(a, ctx({ i: 99 }))) as { pid: number };
    expect(pids.has(again.pid)).toBe(true);
  });

  it('reads a long answer line arriving in many chunks in linear time (it was quadratic: seconds for 30 MB)', async () => {
    // 30 writes of 1 MiB, each flushed: the answer line reaches Baton in hundreds of pipe chunks
    const script = `require('readline').createInterface({ input: process.stdin }).on('line', async (l) => {
      const { id } = JSON.parse(l); const w = (s) => new Promise((r) => process.stdout.write(s, r));
      await w('{"id":' + JSON.stringify(id) + ',"output":{"y":"');
      for (let i = 0; i < 30; i++) await w('a'.repeat(1 << 20));
      await w('"}}\\n');
    });`;
    const a = agent({ command: [process.execPath, '-e', script], mode: 'serve' });
    const started = Date.now();
    const out = (await run(a, ctx())) as { y: string };
    expect(out.y.length).toBe(30 << 20);
    expect(Date.now() - started).toBeLessThan(2500);
  }, 20_000);

  it('saves a checkpoint line through ctx.checkpoint and passes last_checkpoint to a retry', async () => {
    const a = serve();
    const saved: unknown[] = [];
    const out = (await run(a, ctx({ checkpoint: { step: 3 }, delay: 20 }, { attempt: 2, lastCheckpoint: { step: 1 }, checkpoint: (v) => (saved.push(v), Promise.resolve()) }))) as { last_checkpoint: unknown };
    expect(saved).toEqual([{ step: 3 }]);
    expect(out.last_checkpoint).toEqual({ step: 1 });
  });

  it('maps an error answer to an AgentError', async () => {
    const a = serve();
    const e = await failure(run(a, ctx({ fail: true })));
    expect(e.code).toBe('Boom');
    expect(e.message).toBe('asked to fail');
    expect(e.retryable).toBe(true);
    expect((await failure(run(a, ctx({ fail: true, retryable: false })))).retryable).toBe(false);
  });

  it('an answer whose `error` is null carries no error: its output completes the attempt (JSON-RPC 1.0, a Python dict with error None)', async () => {
    const script = `require('readline').createInterface({ input: process.stdin }).on('line', (l) => {
      const { id, input } = JSON.parse(l);
      if (input.step) process.stdout.write(JSON.stringify({ id, checkpoint: { step: 1 }, error: null }) + '\\n');
      process.stdout.write(JSON.stringify(input.bare ? { id, error: null } : { id, output: { v: 1 }, error: null }) + '\\n');
    });`;
    const a = agent({ command: [process.execPath, '-e', script], mode: 'serve' });
    expect(await run(a, ctx())).toEqual({ v: 1 });
    const saved: unknown[] = [];
    expect(await run(a, ctx({ step: true }, { checkpoint: (v) => (saved.push(v), Promise.resolve()) }))).toEqual({ v: 1 });
    expect(saved).toEqual([{ step: 1 }]);
    expect((await failure(run(a, ctx({ bare: true })))).code).toBe('SubprocessBadOutput');
  });

  it('rejects pending requests when the process exits, and restarts it on the next request', async () => {
    const a = serve();
    const first = (await run(a, ctx({}))) as { pid: number };
    const slow = run(a, ctx({ delay: 10_000 }));
    const exiting = run(a, ctx({ exit: 7 }));
    for (const e of [await failure(slow), await failure(exiting)]) {
      expect(e.code).toBe('SubprocessExit');
      expect(e.details).toMatchObject({ exit_code: 7, stderr: 'exiting with 7\n' });
      expect(e.details['stdout_noise']).toContain('serve.mjs ready');
    }
    const next = (await run(a, ctx({}))) as { pid: number };
    expect(next.pid).not.toBe(first.pid);
  });

  it('a process that closes its stdout and keeps running fails what it held (it could never answer) and is stopped; the next request gets a new process', async () => {
    const a = serve({ killGraceMs: 50 });
    const first = (await run(a, ctx({}))) as { pid: number };
    const waiting = run(a, ctx({ delay: 10_000 }));
    const e = await failure(run(a, ctx({ closeStdout: true })));
    expect(e.code).toBe('SubprocessExit');
    expect(e.retryable).toBe(true);
    expect(e.details).toMatchObject({ stdout_closed: true, stderr: 'closing stdout\n' });
    expect((await failure(waiting)).code).toBe('SubprocessExit');
    await vi.waitFor(() => expect(isRunning(first.pid)).toBe(false), { timeout: 5_000 });
    const next = (await run(a, ctx({}))) as { pid: number };
    expect(next.pid).not.toBe(first.pid);
    await a.close();
  });

  it('an answer without its newline, the last thing the process printed before it exited, still counts', async () => {
    const a = serve();
    expect(await run(a, ctx({ lastWithoutNewline: true }))).toEqual({ last: true });
    await a.close();
  });

  it('an aborted request fails alone; the process keeps serving', async () => {
    const a = serve({ killGraceMs: 50 }); // the aborted request's timer keeps the server up after stdin closes
    const ctl = new AbortController();
    const slow = run(a, ctx({ delay: 10_000 }, { signal: ctl.signal }));
    const quick = run(a, ctx({ i: 1 }));
    ctl.abort(new Error('timed out'));
    expect((await failure(slow)).code).toBe('Aborted');
    const q = (await quick) as { pid: number };
    expect(((await run(a, ctx({}))) as { pid: number }).pid).toBe(q.pid);
  });

  it('close() lets the process exit and refuses new requests', async () => {
    const a = serve();
    const { pid } = (await run(a, ctx({}))) as { pid: number };
    const inFlight = run(a, ctx({ delay: 20 }));
    await a.close();
    expect(await inFlight).toMatchObject({ pid }); // stdin closing lets the server finish what it has
    expect(isRunning(pid)).toBe(false);
    expect((await failure(run(a, ctx({})))).code).toBe('SubprocessClosed');
    await a.close();
  });

  it('close() kills a process that does not exit when stdin closes', async () => {
    const a = serve({ killGraceMs: 50 });
    const { pid } = (await run(a, ctx({ linger: true }))) as { pid: number };
    await a.close();
    expect(isRunning(pid)).toBe(false);
  });

  it('close() on an agent that never ran resolves', async () => {
    await expect(serve().close()).resolves.toBeUndefined();
    await expect(agent({ command: ['true'] }).close()).resolves.toBeUndefined();
  });

  it('fails with SubprocessSpawn when the command does not exist', async () => {
    const a = agent({ command: ['/nonexistent/baton-agent'], mode: 'serve' });
    const e = await failure(run(a, ctx({})));
    expect(e.code).toBe('SubprocessSpawn');
    expect(e.retryable).toBe(false);
  });
});

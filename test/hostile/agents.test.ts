/**
 * Misbehaving subprocess agents: whatever they do, the attempt ends with a named code and nothing
 * they started is left running (the whole process group is ended, for `sh -c` strings and argv
 * lists, on cancel, timeout, a failed run and close()); a serve agent sees its stdin close when
 * Baton is gone.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { subprocessAgent } from '../../src/agents/subprocess.js';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';
import { MAX_JSON_DEPTH } from '../../src/core/json-depth.js';
import type { JsonObject } from '../../src/core/json.js';
import { AgentError, type AgentContext, type ClosableAgent } from '../../src/engine/agent.js';
import { fakeContext } from '../../src/engine/testing.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fixtures = join(root, 'test', 'fixtures', 'agents');

function ctx(signal = new AbortController().signal, input: JsonObject = {}): AgentContext {
  return fakeContext({ signal, input });
}

const open: ClosableAgent[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()));
});

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'baton-agents-'));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Running, not a zombie waiting for a reaper (in a container, PID 1 may reap orphans late). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** Waits (polling the OS: there is no event for another process's exit) for a pid file, then the pid. */
async function pidFrom(file: string): Promise<number> {
  for (let i = 0; i < 200 && !(existsSync(file) && readFileSync(file, 'utf8').trim()); i++) await sleep(10);
  return Number(readFileSync(file, 'utf8').trim());
}

async function gone(pid: number, ms = 4000): Promise<boolean> {
  for (let t = 0; t < ms; t += 20) {
    if (!alive(pid)) return true;
    await sleep(20);
  }
  return !alive(pid);
}

async function failure(p: Promise<unknown>): Promise<AgentError> {
  const e = await p.then(
    (v) => {
      throw new Error(`expected a failure, got ${JSON.stringify(v)}`);
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(AgentError);
  return e as AgentError;
}

/** A command that leaves a grandchild (the background sleep) in its process group, writing its pid. */
const tree = (pidFile: string, then = 'sleep 30'): string => `sleep 30 & echo $! > '${pidFile}'; ${then}`;

describe('the whole process group ends', () => {
  it.each([
    ['a string command (sh -c)', (f: string) => tree(f)],
    ['an argv list', (f: string) => ['sh', '-c', tree(f)]],
  ])('on cancel: %s', async (_, command) => {
    const f = join(tmp(), 'pid');
    const a = subprocessAgent({ command: command(f), killGraceMs: 200 });
    open.push(a);
    const ctl = new AbortController();
    const p = a.handler(ctx(ctl.signal));
    const grandchild = await pidFrom(f);
    expect(alive(grandchild)).toBe(true);
    ctl.abort(new Error('cancelled'));
    expect((await failure(Promise.resolve(p))).code).toBe('Aborted');
    expect(await gone(grandchild)).toBe(true);
  });

  it('on close()', async () => {
    const f = join(tmp(), 'pid');
    const a = subprocessAgent({ command: tree(f), killGraceMs: 200 });
    const p = Promise.resolve(a.handler(ctx()));
    const grandchild = await pidFrom(f);
    await a.close();
    expect((await failure(p)).code).toBe('SubprocessClosed');
    expect(await gone(grandchild)).toBe(true);
  });

  it('when the agent exits but left something running that holds stdout', async () => {
    const f = join(tmp(), 'pid');
    const a = subprocessAgent({ command: tree(f, `echo '{"ok": true}'`), killGraceMs: 200 });
    open.push(a);
    expect(await a.handler(ctx())).toEqual({ ok: true });
    expect(await gone(await pidFrom(f))).toBe(true);
  });

  it('in serve mode, on close()', async () => {
    const f = join(tmp(), 'pid');
    const a = subprocessAgent({ command: `sleep 30 & echo $! > '${f}'; exec node '${join(fixtures, 'serve.mjs')}'`, mode: 'serve', killGraceMs: 200 });
    expect(await a.handler(ctx(undefined, { i: 1 }))).toMatchObject({ echo: { i: 1 } });
    const grandchild = await pidFrom(f);
    await a.close();
    expect(await gone(grandchild)).toBe(true);
  });

  it('on a phase timeout and a run timeout, through `baton run`; the result is written', async () => {
    const dir = tmp();
    writeFileSync(
      join(dir, 'wf.yaml'),
      `openintent: "1.0"\ninfo: {name: "T"}\nagents:\n  slow: {x-command: "${tree('phase.pid')}"}\n  slower: {x-command: "${tree('run.pid')}"}\nworkflow:\n  a: {assign: slow, timeout_ms: 300}\n  b: {assign: slower}\n`,
    );
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--timeout', '1', '--output', 'out.json', '--quiet'], io)).toBe(1);
    const result = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as { status: string; phases: Record<string, { error?: { code: string } }> };
    expect(result.status).toBe('failed');
    expect(await gone(await pidFrom(join(dir, 'phase.pid')))).toBe(true);
    expect(await gone(await pidFrom(join(dir, 'run.pid')))).toBe(true);
    expect(io.err()).not.toMatch(/\n\s+at /); // no stack trace
  });
});

describe('a serve agent notices Baton is gone', () => {
  it('its stdin closes when the Baton process is killed', async () => {
    const dir = tmp();
    const script = join(dir, 'host.mts');
    writeFileSync(
      script,
      `import { subprocessAgent } from ${JSON.stringify(join(root, 'src', 'agents', 'subprocess.ts'))};
const a = subprocessAgent({ command: [process.execPath, ${JSON.stringify(join(fixtures, 'serve.mjs'))}], mode: 'serve' });
const out = await a.handler({ input: {}, phase: 'p', taskId: 't', runId: 'r', attempt: 1, agent: 'a', signal: new AbortController().signal, initialState: {}, reportCost() {}, getSiblingOutput() {}, log() {}, record() {}, remainingBudgetUsd() {} });
process.stdout.write(String(out.pid) + '\\n');
setInterval(() => {}, 1000);
`,
    );
    const host = spawn(process.execPath, ['--import', 'tsx', script], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    const pid = await new Promise<number>((resolve, reject) => {
      let buf = '';
      host.stdout.on('data', (c: Buffer) => {
        buf += c.toString();
        if (buf.includes('\n')) resolve(Number(buf.trim()));
      });
      host.on('exit', () => reject(new Error('host exited early')));
    });
    expect(alive(pid)).toBe(true);
    host.kill('SIGKILL');
    expect(await gone(pid)).toBe(true);
  }, 20_000);
});

describe('outputs', () => {
  it('a JSON array is "returned array, not an object", as in-process', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "A"}\nworkflow:\n  a: {assign: sub, outputs: {n: number}}\n  b: {assign: fn, outputs: {n: number}}\n`);
    writeFileSync(join(dir, 'agents.mjs'), 'export default { fn: () => [1, 2] };\n');
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--agent-command', 'sub=echo "[1, 2]"', '--json', '--quiet'], io)).toBe(1);
    const r = JSON.parse(io.out()) as { phases: Record<string, { error?: { code: string; message: string } }> };
    for (const p of ['a', 'b']) {
      expect(r.phases[p]!.error?.code).toBe('OutputTypeMismatchError');
      expect(r.phases[p]!.error?.message).toMatch(/returned array, not an object/);
    }
  });

  it('deeply nested JSON fails the attempt with SubprocessOutputTooDeep, once and serve', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const dir = tmp();
    writeFileSync(join(dir, 'deep.json'), deep);
    writeFileSync(join(dir, 'deep-serve.mjs'), `import { createInterface } from 'node:readline';\ncreateInterface({ input: process.stdin }).on('line', (l) => { const { id } = JSON.parse(l); process.stdout.write('{"id": ' + JSON.stringify(id) + ', "output": {"v": ' + '['.repeat(50000) + ']'.repeat(50000) + '}}\\n'); });\n`);
    const once = subprocessAgent({ command: ['cat', join(dir, 'deep.json')] });
    const serve = subprocessAgent({ command: [process.execPath, join(dir, 'deep-serve.mjs')], mode: 'serve' });
    open.push(once, serve);
    for (const a of [once, serve]) {
      const e = await failure(Promise.resolve(a.handler(ctx())));
      expect(e.code).toBe('SubprocessOutputTooDeep');
      expect(e.details['limit']).toBe(MAX_JSON_DEPTH);
    }
    // within the limit is fine
    writeFileSync(join(dir, 'ok.json'), `{"v": ${'['.repeat(500)}${']'.repeat(500)}}`);
    const ok = subprocessAgent({ command: ['cat', join(dir, 'ok.json')] });
    open.push(ok);
    expect(await ok.handler(ctx())).toHaveProperty('v');
  });
});

function capture(cwd: string): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: {}, out: () => out, err: () => err };
}

/**
 * Signals from outside the terminal (`kill -INT PID`, `kill -TERM PID`, as a supervisor or `timeout`
 * sends them, to the process alone) and readers that go away never change what a run is: the run is
 * left in the store as it was, finished phases keep their outputs, and `baton resume` (or an
 * approval) finishes it.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, test } from 'vitest';
import { run } from '../../src/cli/main.js';
import { baton, batonRun, until } from '../helpers/spawn.js';

const STACK = /\n\s+at .+:\d+:\d+/;

function project(workflow: string, agents: string): string {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-sig-'));
  writeFileSync(join(cwd, 'workflow.yaml'), workflow);
  writeFileSync(join(cwd, 'agents.mjs'), `import { appendFileSync, writeFileSync } from 'node:fs';\nconst mark = (s) => appendFileSync(new URL('./marks', import.meta.url), s + '\\n');\nexport default ${agents};\n`);
  return cwd;
}

const marks = (cwd: string): string[] => (existsSync(join(cwd, 'marks')) ? readFileSync(join(cwd, 'marks'), 'utf8').trim().split('\n') : []);

interface Shown {
  status: string;
  phases: Record<string, { status: string; output?: unknown; attempts: number }>;
}

async function show(cwd: string, id: string): Promise<Shown> {
  const r = await batonRun(['show', id, '--json'], { cwd });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as Shown;
}

/** a: done at once; b: the place where the signal arrives; c after b. */
const CHAIN = (b: string) => `openintent: "1.0"
info: {name: "Sig"}
workflow:
  a: {assign: quick, outputs: {n: integer}}
  b: {assign: ${b}, depends_on: [a], inputs: {n: a.n}, outputs: {n: integer}}
  c: {assign: quick, depends_on: [b], inputs: {n: b.n}, outputs: {n: integer}}
`;

const AGENTS = `{
  quick: (ctx) => { mark(ctx.phase + ' ' + ctx.attempt); return { n: (ctx.input.n ?? 0) + 1 }; },
  slow: async (ctx) => {
    mark(ctx.phase + ' ' + ctx.attempt);
    if (process.env.FAST !== '1') await new Promise((r, j) => { const t = setTimeout(r, 60_000); ctx.signal.addEventListener('abort', () => { clearTimeout(t); j(ctx.signal.reason); }); });
    return { n: ctx.input.n + 1 };
  },
  flaky: (ctx) => { mark(ctx.phase + ' ' + ctx.attempt); if (ctx.attempt === 1) throw new Error('first attempt fails'); return { n: ctx.input.n + 1 }; },
}`;

type Where = 'gate' | 'attempt' | 'retry-delay';
const WORKFLOW: Record<Where, string> = {
  gate: CHAIN('quick').replace('b: {assign: quick,', 'b: {assign: quick, x-require_approval: true,'),
  attempt: CHAIN('slow'),
  'retry-delay': CHAIN('flaky').replace('b: {assign: flaky,', 'b: {assign: flaky, retry: {max_attempts: 2, backoff: constant, initial_delay_ms: 3000},'),
};
const REACHED: Record<Where, RegExp> = {
  gate: /baton approve s\S+ approve-b/,
  attempt: /task\.claimed\s+b/,
  'retry-delay': /task\.retrying\s+b/,
};

const EXIT = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;

describe.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as const)('%s sent to the process alone', (signal) => {
  test.each(['gate', 'attempt', 'retry-delay'] as const)('at a %s: the run is left as it was, finished phases keep their outputs, and it can be finished', async (where) => {
    const cwd = project(WORKFLOW[where], AGENTS);
    const id = `s-${signal}-${where}`;
    // SIGTERM runs with --json: the run as it stands goes to stdout
    const json = signal === 'SIGTERM' ? ['--json'] : [];
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', id, ...json], { cwd });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    await until(() => REACHED[where].test(out));
    child.kill(signal);
    const done = await child.done;
    expect(done.code).toBe(EXIT[signal]);
    expect(done.stderr).toContain(`baton resume ${id}`);
    expect(done.stderr).not.toMatch(STACK);
    if (json.length > 0) expect((JSON.parse(done.stdout) as { runId: string; status: string }).status).toBe(where === 'gate' ? 'waiting' : 'running');
    const left = await show(cwd, id);
    expect(left.status).toBe(where === 'gate' ? 'waiting' : 'running');
    expect(left.phases['a']).toMatchObject({ status: 'completed', output: { n: 1 } });
    expect(left.phases['b']!.status).not.toBe('cancelled');
    // and `baton show` explains what the run waits for and what continues it
    let shown = '';
    expect(await run(['show', id], { stdout: (t) => void (shown += t), stderr: () => undefined, isTTY: false, cwd, env: {} })).toBe(0);
    expect(shown).toMatch(/\nnext\n/);
    expect(shown).toContain(`baton resume ${id}`);
    if (where === 'gate') expect(shown).toContain(`baton approve ${id} approve-b`);
    expect(shown).toMatch(/no process is working on this run/);
    // and it is finished where it was left: approved, or resumed
    if (where === 'gate') expect((await batonRun(['approve', id, 'approve-b', '--as', 'ann'], { cwd })).code).toBe(0);
    const resumed = await batonRun(['resume', id, '--agents', 'agents.mjs', '-q'], { cwd, env: { FAST: '1' } });
    expect(resumed.code, resumed.stderr).toBe(0);
    const end = await show(cwd, id);
    expect(end.status).toBe('completed');
    expect(end.phases['c']).toMatchObject({ status: 'completed', output: { n: 3 } });
    // a ran once: the work done before the signal was kept
    expect(marks(cwd).filter((m) => m.startsWith('a '))).toEqual(['a 1']);
  }, 30_000);
});

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const ENTRY = fileURLToPath(new URL('../helpers/baton-cli.ts', import.meta.url));

/** The CLI in a real process whose stdout reader goes away after the first line (`| head -n 1`). */
async function headOne(args: string[], cwd: string): Promise<{ code: number | null; first: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', TSX, ENTRY, ...args], { cwd, env: { ...process.env, NO_COLOR: '1', BATON_STORE: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let buf = '';
  let first = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.on('data', (c: Buffer) => {
    buf += c.toString();
    const nl = buf.indexOf('\n');
    if (nl >= 0 && first === '') {
      first = buf.slice(0, nl);
      child.stdout.destroy();
    }
  });
  const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
  return { code, first, stderr };
}

describe('a reader that goes away (| head -n 1)', () => {
  test('run: the run goes on to its end and its results are kept', async () => {
    const cwd = project(CHAIN('quick'), AGENTS);
    const r = await headOne(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'h1'], cwd);
    expect(r.first).toMatch(/run\.started\s+run h1/);
    expect(r.stderr).not.toMatch(/EPIPE|Error|cancel/);
    const end = await show(cwd, 'h1');
    expect(end.status).toBe('completed');
    expect(Object.values(end.phases).map((p) => p.status)).toEqual(['completed', 'completed', 'completed']);
  }, 30_000);

  test('run at a gate: the run is left waiting, and the approval finishes it', async () => {
    const cwd = project(WORKFLOW.gate, AGENTS);
    const r = await headOne(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'h2'], cwd);
    expect(r.first).toMatch(/run h2/);
    expect((await show(cwd, 'h2')).status).toBe('waiting');
    expect((await batonRun(['approve', 'h2', 'approve-b'], { cwd })).code).toBe(0);
    expect((await batonRun(['resume', 'h2', '-q'], { cwd })).code).toBe(0);
    expect((await show(cwd, 'h2')).status).toBe('completed');
  }, 30_000);

  test('show, runs and resume end quietly', async () => {
    const cwd = project(CHAIN('quick'), AGENTS);
    for (let i = 0; i < 3; i++) await batonRun(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', `q${i}`, '--detach'], { cwd });
    for (const args of [['show', 'q0', '--events'], ['show', 'q0', '--json'], ['runs'], ['runs', '--json']]) {
      const r = await headOne(args, cwd);
      expect([0, null], `${args.join(' ')}: ${r.stderr}`).toContain(r.code);
      expect(r.stderr).not.toMatch(/EPIPE|Error/);
    }
    const r = await headOne(['resume', 'q1', '--agents', 'agents.mjs'], cwd);
    expect(r.stderr).not.toMatch(/EPIPE|Error/);
    expect((await show(cwd, 'q1')).status).toBe('completed');
  }, 60_000);
});

describe('the bound on a stop', () => {
  test('an agent that ignores its abort (a timer of its own) does not hold the process: it exits when the stop is done, within 5 s of the signal', async () => {
    // the process used to end only when the 5 s timer fired (5.01-5.04 s): the agent's own timer kept it alive
    const cwd = project(CHAIN('deaf'), AGENTS.replace('flaky:', `deaf: async (ctx) => { mark(ctx.phase + ' ' + ctx.attempt); await new Promise((r) => setTimeout(r, 20_000)); return { n: ctx.input.n + 1 }; },\n  flaky:`));
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'deaf1'], { cwd });
    await until(() => marks(cwd).includes('b 1'));
    await new Promise((r) => setTimeout(r, 300));
    const t0 = performance.now();
    child.kill('SIGTERM');
    const done = await child.done;
    const ms = performance.now() - t0;
    expect(done.code).toBe(143);
    expect(ms).toBeLessThan(5_000);
    // the attempt was handed back after the grace its agent ignored (3.5 s)
    expect(ms).toBeGreaterThan(3_000);
    expect(done.stderr).toMatch(/run deaf1 left running in .*baton resume deaf1/);
    expect((await show(cwd, 'deaf1')).status).toBe('running');
  }, 30_000);
});

describe('no agent process outlives Baton', () => {
  // the agent leads its own process group, so neither a signal to Baton nor its exit reaches it by itself
  const SUB = `openintent: "1.0"
info: {name: "Orphans"}
agents:
  slow: {x-command: [node, slow.mjs]}
workflow:
  a: {assign: slow, outputs: {n: integer}}
`;
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  test.each([
    ['SIGHUP (the terminal closed)', ['SIGHUP'], 129],
    ['a second Ctrl-C (exits at once)', ['SIGINT', 'SIGINT'], 130],
  ] as const)('%s: the subprocess agent is ended with it', async (_, signals, code) => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-sig-'));
    writeFileSync(join(cwd, 'workflow.yaml'), SUB);
    // an agent that ignores SIGTERM and never answers
    writeFileSync(join(cwd, 'slow.mjs'), `import { writeFileSync } from 'node:fs';\nprocess.on('SIGTERM', () => undefined);\nwriteFileSync(new URL('./pid', import.meta.url), String(process.pid));\nsetInterval(() => undefined, 1000);\n`);
    const child = baton(['run', 'workflow.yaml', '--run-id', 'orph'], { cwd });
    await until(() => existsSync(join(cwd, 'pid')) && readFileSync(join(cwd, 'pid'), 'utf8') !== '');
    const pid = Number(readFileSync(join(cwd, 'pid'), 'utf8'));
    try {
      for (const s of signals) {
        child.kill(s);
        await new Promise((r) => setTimeout(r, 200));
      }
      const done = await child.done;
      expect(done.code).toBe(code);
      expect(done.stderr).not.toMatch(STACK);
      await until(() => !alive(pid), 3_000);
      expect((await show(cwd, 'orph')).status).toBe('running');
    } finally {
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 30_000);
});

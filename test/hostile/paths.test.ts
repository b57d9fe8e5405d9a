/**
 * Every path a user gives is checked before anything runs (exit 2, one line, no stack trace): missing,
 * under a regular file, a directory where a file is wanted, not writable. A side output that cannot be
 * written during the run is a warning line; the run finishes. A store that cannot be written can
 * still be read by `runs` and `show`.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';

const STACK = /\n\s+at .+:\d+:\d+/;

function capture(cwd: string): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: { USER: 'tester' }, out: () => out, err: () => err };
}

/** A project whose agent marks that it ran; `afile` is a regular file to put paths under. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-paths-'));
  writeFileSync(join(dir, 'wf.yaml'), 'openintent: "1.0"\ninfo: {name: "P"}\nworkflow:\n  p: {assign: a, outputs: {n: number}}\n  q: {assign: a, depends_on: [p]}\n');
  writeFileSync(join(dir, 'agents.mjs'), `import { writeFileSync } from 'node:fs';\nexport default { a: () => { writeFileSync(new URL('./ran', import.meta.url), 'yes'); return { n: 1 }; } };\n`);
  writeFileSync(join(dir, 'afile'), 'x');
  mkdirSync(join(dir, 'adir'));
  return dir;
}

const BAD_FILE_PATHS = [
  ['missing directory', 'nodir/deeper/x.json', /does not exist/],
  ['under a regular file', 'afile/x.json', /does not exist|not a directory/],
  ['a directory', 'adir', /is a directory/],
] as const;

describe.each(BAD_FILE_PATHS)('a path in a %s', (_, path, why) => {
  it.each([
    ['run --output', (p: string) => ['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--output', p]],
    ['run --state-out', (p: string) => ['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--state-out', p]],
    ['resume --output', (p: string) => ['resume', 'some-run', '--output', p]],
    ['rerun --output', (p: string) => ['rerun', 'some-run', '--from', 'q', '--output', p]],
    ['types -o', (p: string) => ['types', 'wf.yaml', '-o', p]],
  ] as const)('%s: exit 2 before anything runs', async (_flag, args) => {
    const dir = project();
    const io = capture(dir);
    expect(await run(args(path), io)).toBe(2);
    expect(io.err()).toMatch(why);
    expect(io.err()).not.toMatch(STACK);
    expect(existsSync(join(dir, 'ran'))).toBe(false);
    expect(existsSync(join(dir, '.baton'))).toBe(false); // refused before the store was opened
  });
});

describe('a directory given as the file to write', () => {
  it.each([
    ['types -o', ['types', 'wf.yaml', '-o', 'adir'], 'adir/workflow.types.ts'],
    ['run --output', ['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--output', 'adir'], 'adir/result.json'],
    ['run --state-out', ['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--state-out', 'adir'], 'adir/state.json'],
  ])('%s: the hint names a file of the kind it writes; --json gives the error object', async (_, args, example) => {
    const dir = project();
    const io = capture(dir);
    expect(await run(args, io)).toBe(2);
    expect(io.err()).toContain(`adir: is a directory; name a file, e.g. ${example}`);
    const json = capture(dir);
    expect(await run([...args, '--json'], json)).toBe(2);
    expect(JSON.parse(json.out())).toMatchObject({ error: { code: 'usage', message: expect.stringContaining(example) as unknown } });
  });
});

describe('files the run reads', () => {
  it.each([
    ['--replies', ['--replies', 'nope.yaml', '--llm', 'a']],
    ['--replies (a directory)', ['--replies', 'adir', '--llm', 'a']],
    ['--trigger @', ['--trigger', '@nope.json']],
    ['--initial-state @', ['--initial-state', '@afile/x.json']],
    ['--agents', ['--agents', 'nope.mjs']],
  ])('%s: exit 2, nothing stored', async (_, flags) => {
    const dir = project();
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', ...(flags.includes('--agents') ? [] : ['--agents', 'agents.mjs']), ...flags], io)).toBe(2);
    expect(io.err()).not.toMatch(STACK);
    expect(existsSync(join(dir, 'ran'))).toBe(false);
    expect(existsSync(join(dir, '.baton'))).toBe(false);
  });
});

describe('store paths', () => {
  it.each([
    ['a .baton that is a file', (dir: string) => writeFileSync(join(dir, '.baton'), 'x'), [] as string[], /\.baton is a file, not a directory/],
    ['--store under a regular file', () => undefined, ['--store', 'afile/s.db'], /afile is a file, not a directory/],
    ['--store naming a directory', () => undefined, ['--store', 'adir'], /is a directory/],
  ])('%s: every command exits 2 with the reason', async (_, arrange, flags, why) => {
    for (const cmd of [['run', 'wf.yaml', '--agents', 'agents.mjs'], ['runs'], ['show', 'r1'], ['resume', 'r1'], ['approve', 'r1', 'g'], ['cancel', 'r1'], ['worker']]) {
      const dir = project();
      arrange(dir);
      const io = capture(dir);
      expect(await run([...cmd, ...flags], io), `${cmd.join(' ')}: ${io.err()}`).toBe(2);
      expect(io.err()).toMatch(why);
      expect(io.err()).not.toMatch(STACK);
      expect(existsSync(join(dir, 'ran'))).toBe(false);
    }
  });

  it('runs and show of a store that does not exist create nothing', async () => {
    const dir = project();
    const io = capture(dir);
    expect(await run(['runs', '--store', 'no/such/dir/s.db'], io)).toBe(0);
    expect(io.out()).toMatch(/no runs in no\/such\/dir\/s\.db/);
    expect(await run(['show', 'r1', '--store', 'no/such/dir/s.db'], capture(dir))).toBe(2);
    expect(existsSync(join(dir, 'no'))).toBe(false);
  });
});

describe('a side output that vanishes during the run', () => {
  it('--state-out whose directory is removed mid-run: one warning line, the run completes, show explains it', async () => {
    const dir = project();
    mkdirSync(join(dir, 'out'));
    writeFileSync(join(dir, 'agents.mjs'), `import { rmSync } from 'node:fs';\nexport default { a: async (ctx) => { if (ctx.phase === 'q') rmSync(new URL('./out', import.meta.url), { recursive: true }); await new Promise((r) => setTimeout(r, 300)); return { n: 1 }; } };\n`);
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--run-id', 'v1', '--state-out', 'out/state.json', '-q'], io), io.err()).toBe(0);
    expect(io.err().match(/warning: cannot write --state-out out\/state\.json/g)).toHaveLength(1);
    expect(io.err()).not.toMatch(STACK);
    const shown = capture(dir);
    expect(await run(['show', 'v1', '--json'], shown)).toBe(0);
    expect((JSON.parse(shown.out()) as { status: string }).status).toBe('completed');
  });

  it('--state-out that is written throughout a normal run', async () => {
    const dir = project();
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--state-out', 'adir/state.json', '-q'], capture(dir))).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'adir', 'state.json'), 'utf8'))).toBeTypeOf('object');
  });
});

// ---- permissions: as root (containers, CI) a mode bit stops nobody, so the CLI runs as `nobody` there

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const ENTRY = fileURLToPath(new URL('../helpers/baton-cli.ts', import.meta.url));
const ROOT = process.getuid?.() === 0;
const canTest = process.platform !== 'win32';

/** The CLI as a user without write access to `cwd` (root: as uid 65534; otherwise: the mode bits work). */
function asUnprivileged(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', TSX, ENTRY, ...args], {
    cwd,
    env: { ...process.env, NO_COLOR: '1', BATON_STORE: '', HOME: cwd },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(ROOT ? { uid: 65534, gid: 65534 } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // a spawn that fails (the node binary out of that user's reach) ends the call with its error, never a hang
  return new Promise((r) => {
    child.on('error', (e) => r({ code: null, stdout, stderr: `${stderr}spawn failed: ${e.message}` }));
    child.on('close', (code) => r({ code, stdout, stderr }));
  });
}

function readOnly(path: string): void {
  chmodSync(path, 0o555);
}

describe.runIf(canTest)('without write access', () => {
  it('a directory the user cannot write: run, --output, --state-out and new exit 2 with a message', async () => {
    const dir = project();
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'agents.mjs'), 0o644);
    chmodSync(join(dir, 'wf.yaml'), 0o644);
    readOnly(dir);
    for (const args of [
      ['run', 'wf.yaml', '--agents', 'agents.mjs'],
      ['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--output', 'r.json'],
      ['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--state-out', 's.json'],
      ['new', 'X'],
      ['types', 'wf.yaml', '-o', 't.ts'],
    ]) {
      const r = await asUnprivileged(args, dir);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/permission|cannot write/);
      expect(r.stderr).not.toMatch(STACK);
    }
    expect(existsSync(join(dir, 'ran'))).toBe(false);
    chmodSync(dir, 0o755);
  }, 60_000);

  it('a workflow directory the user cannot read: run says what validate, check and types say (file-unreadable, permission denied, exit 2)', async () => {
    const dir = project();
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, 'locked'));
    writeFileSync(join(dir, 'locked', 'workflow.yaml'), readFileSync(join(dir, 'wf.yaml')));
    chmodSync(join(dir, 'locked'), 0o000);
    try {
      for (const args of [['validate', 'locked'], ['check', 'locked'], ['types', 'locked'], ['run', 'locked', '--store', 'memory']]) {
        const r = await asUnprivileged(args, dir);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
        expect(`${r.stdout}${r.stderr}`).toMatch(/locked: error\[file-unreadable\]: cannot read .*locked: permission denied/);
        expect(r.stderr).not.toMatch(STACK);
      }
      const json = await asUnprivileged(['run', 'locked', '--store', 'memory', '--json'], dir);
      expect(json.code).toBe(2);
      expect(JSON.parse(json.stdout)).toMatchObject({ error: { code: 'file-unreadable', diagnostics: [{ code: 'file-unreadable' }] } });
    } finally {
      chmodSync(join(dir, 'locked'), 0o755);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('a read-only store can be read by runs and show, and refused by commands that write', async () => {
    const dir = project();
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--run-id', 'ro1', '-q'], capture(dir))).toBe(0);
    chmodSync(dir, 0o755);
    for (const f of ['wf.yaml', 'agents.mjs']) chmodSync(join(dir, f), 0o644);
    chmodSync(join(dir, '.baton', 'baton.db'), 0o444);
    readOnly(join(dir, '.baton'));
    const runs = await asUnprivileged(['runs'], dir);
    expect(runs.code, runs.stderr).toBe(0);
    expect(runs.stdout).toMatch(/ro1\s+P\s+completed/);
    for (const args of [['show', 'ro1'], ['show', 'ro1', '--json'], ['show', 'ro1', '--events'], ['show', 'ro1', '--state']]) {
      const r = await asUnprivileged(args, dir);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(/ro1|"status"/);
    }
    const cancel = await asUnprivileged(['cancel', 'ro1'], dir);
    expect(cancel.code).toBe(2);
    expect(cancel.stderr).not.toMatch(STACK);
    chmodSync(join(dir, '.baton'), 0o755);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);
});

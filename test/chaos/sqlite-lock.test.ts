/**
 * Two processes on one SQLite file (issue 13): another process holds the write lock for seconds
 * (test/fixtures/chaos/sqlite-locker.mjs: BEGIN IMMEDIATE, then blocked without using the CPU). `baton
 * run` on that file must neither hang (it completes once the lock is released) nor spin: the CPU time
 * the kernel charged to the baton process while the lock was held (/proc/PID/stat, utime + stime) stays
 * a small share of that time. A busy loop costs about 100% of it; waiting costs next to nothing.
 *
 * The engine before issue 13's rewrite hung in the second test; a `baton run` started under a lock held
 * past SQLite's busy timeout now waits for it (one line) instead of exiting store-locked.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { openStore } from '../../src/api/store.js';
import { baton, until, type Done } from '../helpers/spawn.js';

const LOCKER = fileURLToPath(new URL('../fixtures/chaos/sqlite-locker.mjs', import.meta.url));
/** Clock ticks per second of /proc/PID/stat (getconf CLK_TCK: 100 on Linux). */
const TICKS = 100;
/** The share of the locked time the waiting process may spend on the CPU. */
const MAX_CPU_SHARE = 0.25;

/** CPU ms the kernel charged to a process so far (user + system); undefined once it is gone. */
function cpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // the command name (field 2) may hold spaces: count fields after its closing parenthesis
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
}

/** Another process holding the file's write lock for `ms`: `locked` and `released` settle as it goes. */
function holdLock(file: string, ms: number, release?: string): { locked: Promise<void>; released: Promise<void>; kill: () => void } {
  const locker = spawn(process.execPath, [LOCKER, file, String(ms), ...(release !== undefined ? [release] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  locker.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const seen = (word: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (out.includes(`${word}\n`)) resolve();
      };
      locker.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        check();
      });
      locker.on('close', (code) => (out.includes(`${word}\n`) ? resolve() : reject(new Error(`the locker exited ${code} before \`${word}\`: ${err}`))));
    });
  return { locked: seen('locked'), released: seen('released'), kill: () => locker.kill('SIGKILL') };
}

/** CPU ms the process spent from now until `end` settles, and the wall ms; undefined when the process ended first. */
async function cpuDuring(pid: number, end: Promise<void>): Promise<{ cpuMs: number | undefined; wallMs: number }> {
  const t0 = performance.now();
  const c0 = cpuMs(pid);
  await end;
  const c1 = cpuMs(pid);
  return { cpuMs: c0 === undefined || c1 === undefined ? undefined : c1 - c0, wallMs: performance.now() - t0 };
}

function setup(agents: string, retryMs: number): { cwd: string; db: string } {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-sqlite-lock-'));
  const retry = `retry: {max_attempts: 3, backoff: constant, initial_delay_ms: ${retryMs}}`;
  writeFileSync(
    join(cwd, 'workflow.yaml'),
    `openintent: "1.0"\ninfo: {name: "Locked"}\nworkflow:\n  a: {assign: w, outputs: {n: integer}, ${retry}}\n  b: {assign: w, depends_on: [a], inputs: {n: a.n}, outputs: {n: integer}, ${retry}}\n`,
  );
  writeFileSync(join(cwd, 'agents.mjs'), agents);
  return { cwd, db: join(cwd, 'store.db') };
}

async function finish(child: ReturnType<typeof baton>, withinMs: number): Promise<Done> {
  const timer = setTimeout(() => child.kill('SIGKILL'), withinMs);
  try {
    return await child.done;
  } finally {
    clearTimeout(timer);
  }
}

describe('SQLite: another process holds the write lock for seconds', () => {
  test('baton run started under the lock, held past the busy timeout (until it says it waits, then 2 s): completes after the release, without spinning', async () => {
    const { cwd, db } = setup(`export default { w: (ctx) => ({ n: (ctx.input.n ?? 0) + 1 }) };\n`, 0);
    await (await openStore(db, { cwd })).close(); // the schema exists before the lock is taken
    // held until the command has said it waits (past its 5 s busy timeout), then 2 s more: a lock of a fixed
    // 7 s was released before a loaded machine had started the command and waited out that timeout
    const release = join(cwd, 'release');
    const lock = holdLock(db, 60_000, release);
    await lock.locked;
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', db, '--json', '-q'], { cwd });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    try {
      await until(() => /store unavailable/.test(err), 30_000);
      // measured from there: the process has started (tsx, the workflow, the agents) and waits for the lock
      const held = await cpuDuring(
        child.pid!,
        (async () => {
          await new Promise((r) => setTimeout(r, 2_000));
          writeFileSync(release, '');
          await lock.released;
        })(),
      );
      const done = await finish(child, 15_000);
      if (process.env['CHAOS_VERBOSE']) console.log(`baton used ${held.cpuMs} ms of CPU in ${held.wallMs.toFixed(0)} ms under the lock`);
      // the wait is said in one line (the store is locked past its busy timeout), nothing else
      expect({ code: done.code, signal: done.signal }).toEqual({ code: 0, signal: null });
      expect(done.stderr.trim().split('\n').filter((l) => l !== '')).toEqual([expect.stringMatching(/^store unavailable, retrying: .*locked/)]);
      expect((JSON.parse(done.stdout) as { status: string }).status).toBe('completed');
      expect(held.cpuMs).toBeLessThan(held.wallMs * MAX_CPU_SHARE);
    } finally {
      child.kill('SIGKILL');
      lock.kill();
    }
  }, 40_000);

  test('a failure commits under the lock (3 s) and its 200 ms retry is due when the commit lands: the run completes after the release, without spinning', async () => {
    // attempt 1 of `a` says it is running, waits until another process holds the lock, and fails: its
    // commit waits for the lock, and the 200 ms retry is already due when that commit lands
    const agents = `import { existsSync, writeFileSync } from 'node:fs';
const at = (f) => new URL('./' + f, import.meta.url);
export default { w: async (ctx) => {
  if (ctx.phase === 'a' && ctx.attempt === 1) {
    writeFileSync(at('failing'), '');
    for (let i = 0; i < 1000 && !existsSync(at('locked')); i++) await new Promise((r) => setTimeout(r, 10));
    throw new Error('once');
  }
  return { n: (ctx.input.n ?? 0) + 1 };
} };
`;
    const { cwd, db } = setup(agents, 200);
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', db, '--json', '-q'], { cwd });
    const lock = { kill: () => undefined } as { kill: () => void };
    try {
      await until(() => existsSync(join(cwd, 'failing')), 15_000);
      const l = holdLock(db, 3_000);
      lock.kill = l.kill;
      await l.locked;
      writeFileSync(join(cwd, 'locked'), '');
      const held = await cpuDuring(child.pid!, l.released);
      const done = await finish(child, 15_000);
      if (process.env['CHAOS_VERBOSE']) console.log(`baton used ${held.cpuMs} ms of CPU in ${held.wallMs.toFixed(0)} ms under the lock`);
      expect({ code: done.code, signal: done.signal }).toEqual({ code: 0, signal: null });
      const r = JSON.parse(done.stdout) as { status: string; phases: Record<string, { attempts: number }> };
      expect(r.status).toBe('completed');
      expect(r.phases['a']!.attempts).toBe(2);
      expect(held.cpuMs).toBeLessThan(held.wallMs * MAX_CPU_SHARE);
    } finally {
      child.kill('SIGKILL');
      lock.kill();
    }
  }, 40_000);
});

describe('SQLite: the lock is taken in the middle of a run and held past the busy timeout', () => {
  test('the trouble is said once and its end once, when a write lands (the looks that succeed meanwhile do not end it)', async () => {
    // `a` returns once another process holds the lock (12 s): its commit waits 5 s, fails store-locked,
    // and is tried again while the run's looks at the store (reads, which WAL lets through) succeed.
    // Each of those used to say "available again" and the next refused commit "unavailable" again.
    const agents = `import { existsSync, writeFileSync } from 'node:fs';
const at = (f) => new URL('./' + f, import.meta.url);
export default { w: async (ctx) => {
  if (ctx.phase === 'a') {
    writeFileSync(at('holding'), '');
    for (let i = 0; i < 1000 && !existsSync(at('locked')); i++) await new Promise((r) => setTimeout(r, 10));
  }
  return { n: (ctx.input.n ?? 0) + 1 };
} };
`;
    const { cwd, db } = setup(agents, 0);
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', db, '--json', '-q'], { cwd });
    const lock = { kill: () => undefined } as { kill: () => void };
    try {
      await until(() => existsSync(join(cwd, 'holding')), 15_000);
      const l = holdLock(db, 12_000);
      lock.kill = l.kill;
      await l.locked;
      writeFileSync(join(cwd, 'locked'), '');
      await l.released;
      const done = await finish(child, 20_000);
      expect({ code: done.code, signal: done.signal }).toEqual({ code: 0, signal: null });
      expect((JSON.parse(done.stdout) as { status: string }).status).toBe('completed');
      const lines = done.stderr.trim().split('\n').filter((l) => l !== '');
      expect(lines).toEqual([expect.stringMatching(/^store unavailable, retrying: .*locked/), expect.stringMatching(/^store available again after \d+\.\d s$/)]);
      // the end is said when the lock is gone, not at the first look that succeeded under it
      expect(Number(/after (\d+\.\d) s/.exec(lines[1]!)![1])).toBeGreaterThan(3);
    } finally {
      child.kill('SIGKILL');
      lock.kill();
    }
  }, 60_000);
});

describe('the CPU probe', () => {
  // against what processes say of themselves (getrusage), so a loaded machine changes nothing
  test('reads the CPU time a busy process reports of itself, and almost none for a waiting one', async () => {
    const busy = spawn(process.execPath, ['-e', 'for (;;) if (process.cpuUsage().user > 300000) break; const u = process.cpuUsage(); console.log((u.user + u.system) / 1000); setTimeout(() => {}, 60000)'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const idle = spawn(process.execPath, ['-e', 'console.log(1); setTimeout(() => {}, 60000)'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const idleUp = new Promise<void>((resolve) => idle.stdout.once('data', () => resolve()));
    try {
      const self = await new Promise<number>((resolve) => busy.stdout.once('data', (d: Buffer) => resolve(Number(d.toString()))));
      const seen = cpuMs(busy.pid!)!;
      expect(self).toBeGreaterThan(300);
      expect(Math.abs(seen - self)).toBeLessThan(30 + self * 0.1);
      await idleUp; // its start-up is not counted
      const span = new Promise<void>((r) => setTimeout(r, 500));
      const i = await cpuDuring(idle.pid!, span);
      expect(i.cpuMs).toBeLessThan(i.wallMs * MAX_CPU_SHARE);
    } finally {
      busy.kill('SIGKILL');
      idle.kill('SIGKILL');
    }
  });
});

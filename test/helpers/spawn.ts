/** Runs Baton's CLI from source in a child process (no build step), as a user would in a terminal. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ENTRY = fileURLToPath(new URL('./baton-cli.ts', import.meta.url));
// vitest has no import.meta.resolve: find tsx's loader the CommonJS way
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

export interface Done {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** `detached`: its own process group, so a test can send Ctrl-C to the group as a terminal does (`process.kill(-pid, 'SIGINT')`). */
export function baton(args: string[], opts: { cwd: string; env?: Record<string, string>; detached?: boolean }): ChildProcess & { done: Promise<Done> } {
  const child = spawn(process.execPath, ['--import', TSX, ENTRY, ...args], {
    cwd: opts.cwd,
    detached: opts.detached === true,
    env: { ...process.env, NO_COLOR: '1', BATON_STORE: '', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Done>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return Object.assign(child, { done });
}

/** Runs to the end; with `timeoutMs`, a process still alive then is killed (the test sees `signal: 'SIGKILL'`, not a hang). */
export function batonRun(args: string[], opts: { cwd: string; env?: Record<string, string>; timeoutMs?: number }): Promise<Done> {
  const child = baton(args, opts);
  if (opts.timeoutMs === undefined) return child.done;
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
  return child.done.finally(() => clearTimeout(timer));
}

/** Resolves when `check` is true, polling every 25 ms (a child process's progress cannot be awaited otherwise). */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting for the condition');
    await new Promise((r) => setTimeout(r, 25));
  }
}

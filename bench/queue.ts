/**
 * What the queue benchmarks share (versus-graphile.bench.ts, lattice.bench.ts): sizes scaled by
 * BENCH_SCALE, a fresh PostgreSQL database per measurement, `baton worker` processes and graphile-worker
 * processes (graphile-proc.ts) that say when they are ready, peak RSS from /proc, and tables.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** BENCH_SCALE (default 1: the full sizes); 0.1 for a quick look. */
export const SCALE = Number(process.env['BENCH_SCALE'] ?? (process.env['BATON_BENCH_QUICK'] === '1' ? 0.1 : 1));
export const scaled = (n: number, min = 1): number => Math.max(min, Math.round(n * SCALE));
export const SERVER = process.env['BATON_BENCH_PG'] ?? 'postgres://postgres@127.0.0.1:5432';

const require_ = createRequire(import.meta.url);
/** The CLI as users run it: bin/baton.js over the build in dist/ (made by `ensureBuilt`). */
export const BIN = fileURLToPath(new URL('../bin/baton.js', import.meta.url));
export const NOOP_AGENTS = fileURLToPath(new URL('./noop-agents.mjs', import.meta.url));
const GRAPHILE_PROC = fileURLToPath(new URL('./graphile-proc.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Builds dist/ (`npm run build`) unless it is newer than every file under src/, so bin/baton.js runs today's code. */
export function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(join(ROOT, 'dist', 'cli', 'main.js')).mtimeMs;
  } catch {
    // not built yet
  }
  if (built > newest(join(ROOT, 'src'))) return;
  console.log('building dist/ for bin/baton.js ...');
  const r = spawnSync(process.execPath, [require_.resolve('typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('the build failed');
}

export async function admin(sql: string, db = 'postgres'): Promise<void> {
  const c = new pg.Client({ connectionString: `${SERVER}/${db}` });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A fresh database for `body`, dropped afterwards. */
export async function withDatabase<T>(prefix: string, body: (url: string) => Promise<T>): Promise<T> {
  const name = `${prefix}_${randomBytes(3).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  try {
    return await body(`${SERVER}/${name}`);
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
  }
}

export interface Proc {
  child: ChildProcess;
  /** Settles when the process printed its ready line (`serving` for baton, `ready` for graphile). */
  ready: Promise<number>;
  done: Promise<void>;
  stderr: () => string;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

function start(args: string[], readyWord: string, env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, [...(process.env.PROBE_NODE_ARGS ? process.env.PROBE_NODE_ARGS.split(" ") : []), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', BATON_STORE: '', ...env } });
  live.add(child);
  let out = '';
  let err = '';
  const ready = new Promise<number>((resolve, reject) => {
    const check = (): void => {
      if ((out + err).includes(readyWord)) resolve(performance.now());
    };
    child.stdout!.on('data', (d: Buffer) => ((out += d.toString()), check()));
    child.stderr!.on('data', (d: Buffer) => ((err += d.toString()), check()));
    child.on('close', (code) => reject(new Error(`${args.join(' ').slice(0, 80)} exited ${code} before it was ready: ${err.slice(-500)}`)));
  });
  ready.catch(() => undefined);
  const done = new Promise<void>((resolve) => child.on('close', () => (live.delete(child), resolve())));
  return { child, ready, done, stderr: () => err };
}

export function batonWorker(url: string, extra: string[] = []): Proc {
  return start([BIN, 'worker', '--store', url, '--agents', NOOP_AGENTS, '-q', ...extra], 'serving');
}

export interface GraphileOptions {
  concurrency: number;
  /** graphile-worker's own throughput tuning: a local queue and batched completions. */
  tuned: boolean;
}

export function graphileWorker(url: string, o: GraphileOptions): Proc {
  return start([GRAPHILE_PROC, url, String(o.concurrency), o.tuned ? 'tuned' : 'plain'], 'ready');
}

/** Peak resident set (VmHWM) of a live process, in MB. */
export function peakRssMb(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * Holds ready processes still (SIGSTOP) while work is enqueued, then lets them all go at once
 * (SIGCONT): a drain is timed from a common start, without the processes' start-up.
 */
export async function hold(procs: Proc[]): Promise<void> {
  await Promise.all(procs.map((p) => p.ready));
  for (const p of procs) p.child.kill('SIGSTOP');
}
export function release(procs: Proc[]): number {
  for (const p of procs) p.child.kill('SIGCONT');
  return performance.now();
}

export async function stopAll(procs: Proc[]): Promise<void> {
  // PROBE_NODE_ARGS (--cpu-prof): a clean stop, so that the profile is written
  for (const p of procs) p.child.kill(process.env.PROBE_NODE_ARGS ? 'SIGTERM' : 'SIGKILL');
  await Promise.all(procs.map((p) => p.done));
}

/** Resolves when `check` is true, polling every `everyMs`; rejects past `timeoutMs`. */
export async function until(check: () => Promise<boolean>, timeoutMs: number, everyMs = 50): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function printTable(rows: string[][]): void {
  const w = rows[0]!.map(() => 0);
  for (const r of rows) r.forEach((c, i) => (w[i] = Math.max(w[i]!, c.length)));
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(w[i]!)).join('  '));
  console.log();
}

export const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '-');

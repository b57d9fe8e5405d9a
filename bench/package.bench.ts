/**
 * The package as a dependent project gets it: `npm pack`, the tarball installed into a scratch project
 * without the optional peers (what a core-only user installs: size, package count, install time), the
 * import time of the core and of each subpath there (fresh processes, best of several; wall and CPU
 * time), and the SQLite store on each binding this Node can load (node:sqlite beside better-sqlite3).
 * Prints figures; never fails on a timing. Targets: core import < 100 ms, core install < 40 MB.
 * BATON_BENCH_SKIP_INSTALL=1 skips the pack-and-install part (it needs the npm cache or registry).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { RunStore } from '../src/engine/ports.js';
import { chooseBinding, nodeSqliteAvailable, open, type Binding } from '../src/store/sqlite-driver.js';
import { SqliteStore } from '../src/store/sqlite.js';
import { chain } from './store-chain.js';

const root = resolve(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'baton-package-bench-'));
const table = (rows: string[][]): void => {
  const w = rows[0]!.map(() => 0);
  for (const r of rows) r.forEach((c, i) => (w[i] = Math.max(w[i]!, c.length)));
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(w[i]!)).join('  '));
  console.log();
};
const sh = (cmd: string, args: string[], cwd: string): string => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const du = (dir: string): number => Number(sh('du', ['-sk', dir], dir).split('\t')[0]) / 1024;

/** Best wall and CPU milliseconds of `import(spec)` in a fresh process started in `cwd`. */
function importTime(spec: string, cwd: string, runs = 7): { wall: number; cpu: number } | { error: string } {
  const code = `const c0 = process.cpuUsage(); const t0 = performance.now();
try { await import(${JSON.stringify(spec)}); } catch (e) { console.log(JSON.stringify({ error: String(e.message ?? e).split('\\n')[0] })); process.exit(0); }
const c = process.cpuUsage(c0); console.log(JSON.stringify({ wall: performance.now() - t0, cpu: (c.user + c.system) / 1000 }));`;
  let best = { wall: Infinity, cpu: Infinity };
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd, encoding: 'utf8' });
    const m = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { wall?: number; cpu?: number; error?: string };
    if (m.error !== undefined) return { error: m.error };
    best = { wall: Math.min(best.wall, m.wall!), cpu: Math.min(best.cpu, m.cpu!) };
  }
  return best;
}

const SUBPATHS = ['', '/postgres', '/llm', '/mcp', '/typescript'];
const fmt = (t: ReturnType<typeof importTime>): string[] => ('error' in t ? [t.error, ''] : [`${t.wall.toFixed(0)} ms`, `${t.cpu.toFixed(0)} ms`]);

console.log(`node ${process.versions.node}`);
try {
  // ---- 1. a dependent project's core-only install ---------------------------------------------
  if (process.env['BATON_BENCH_SKIP_INSTALL'] !== '1') {
    const packed = JSON.parse(sh('npm', ['pack', '--json', '--pack-destination', work], root)) as [{ filename: string; size: number; unpackedSize: number; entryCount: number }];
    const tgz = join(work, packed[0].filename);
    const project = join(work, 'project');
    execFileSync('mkdir', ['-p', project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', private: true }));
    const t0 = performance.now();
    sh('npm', ['install', tgz, '--no-audit', '--no-fund', '--prefer-offline'], project);
    const installMs = performance.now() - t0;
    const nm = join(project, 'node_modules');
    const count = sh('npm', ['ls', '--all', '--parseable'], project).trim().split('\n').length - 1;
    const installed = readdirSync(nm).filter((d) => !d.startsWith('.'));
    table([
      ['core-only install (npm install TARBALL)', 'figure', 'target'],
      ['tarball', `${(packed[0].size / 1024).toFixed(0)} KB packed, ${(packed[0].unpackedSize / 1024 / 1024).toFixed(1)} MB unpacked, ${packed[0].entryCount} files`, ''],
      ['node_modules', `${du(nm).toFixed(1)} MB, ${count} packages`, '< 40 MB'],
      ['install time (warm npm cache)', `${(installMs / 1000).toFixed(1)} s`, ''],
      ['top-level folders', installed.join(' '), ''],
    ]);

    // ---- 2. import time in that project (no optional peer installed) ---------------------------
    const rows = [['import (core-only project)', 'wall', 'CPU', 'target']];
    for (const sub of SUBPATHS) rows.push([`@baton-run/baton${sub}`, ...fmt(importTime(`@baton-run/baton${sub}`, project)), sub === '' ? '< 100 ms' : '']);
    table(rows);

    // what Node 20 adds for the embedded store
    if (!nodeSqliteAvailable()) {
      const t1 = performance.now();
      const r = spawnSync('npm', ['install', 'better-sqlite3', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: project, encoding: 'utf8' });
      const ms = performance.now() - t1;
      // npm 11 can leave it unbuilt (install scripts need approval): the store then says what to do
      const probe = spawnSync(process.execPath, ['--input-type=module', '-e', "const { openSqliteStore } = await import('@baton-run/baton'); await openSqliteStore(':memory:').close(); console.log('loads')"], { cwd: project, encoding: 'utf8' });
      table([
        ['Node 20: + better-sqlite3', 'figure'],
        ['npm install better-sqlite3', r.status === 0 ? `${(ms / 1000).toFixed(1)} s` : `failed: ${r.stderr.trim().split('\n').pop() ?? ''}`],
        ['node_modules', `${du(nm).toFixed(1)} MB`],
        ['the store opens', probe.status === 0 ? probe.stdout.trim() : (probe.stderr.split('\n').find((l) => /better-sqlite3|Error/.test(l)) ?? probe.stderr.trim().split('\n')[0] ?? '')],
      ]);
    }
  }

  // ---- 3. import time of each subpath with its peer installed (this repository's build) ---------
  const rows = [['import (this repository, peers installed)', 'wall', 'CPU']];
  for (const sub of SUBPATHS) rows.push([`@baton-run/baton${sub}`, ...fmt(importTime(`@baton-run/baton${sub}`, root))]);
  for (const peer of ['pg', '@ai-sdk/openai', '@ai-sdk/anthropic', '@modelcontextprotocol/sdk/client/index.js', 'tsx/esm/api', 'better-sqlite3']) rows.push([`  (peer) ${peer}`, ...fmt(importTime(peer, root))]);
  table(rows);

  // ---- 4. the SQLite store on each binding ------------------------------------------------------
  const bindings: { binding: Binding; why?: string }[] = [];
  bindings.push(nodeSqliteAvailable() ? { binding: 'node' } : { binding: 'node', why: `unavailable on Node ${process.versions.node} (needs >= 22.13)` });
  try {
    open(':memory:', { binding: 'better-sqlite3' }).close();
    bindings.push({ binding: 'better-sqlite3' });
  } catch (e) {
    bindings.push({ binding: 'better-sqlite3', why: `unavailable: ${(e as Error).message}` });
  }
  const store = [['SQLite store', 'chain, FULL (transacts/s)', 'chain, NORMAL (transacts/s)', 'read events+tasks (µs)', 'open (ms)']];
  for (const b of bindings) {
    if (b.why) {
      store.push([b.binding, b.why, '', '', '']);
      continue;
    }
    process.env['BATON_SQLITE'] = b.binding;
    const t0 = performance.now();
    const full = new SqliteStore(join(work, `${b.binding}-full.db`));
    const openMs = performance.now() - t0;
    const normal = new SqliteStore(join(work, `${b.binding}-normal.db`), { sync: 'normal' });
    const f = await chainRate(full, 2_000);
    const n = await chainRate(normal, 5_000);
    const r = await readLatency(normal);
    store.push([`${b.binding}${chooseBinding({}) === b.binding ? ' (default here)' : ''}`, f.toLocaleString(), n.toLocaleString(), r.toFixed(0), openMs.toFixed(1)]);
    await full.close();
    await normal.close();
  }
  delete process.env['BATON_SQLITE'];
  table(store);
} finally {
  rmSync(work, { recursive: true, force: true });
}


/** Transacts per second, best of 3 runs of `n` phases after a warm-up. */
async function chainRate(s: RunStore, n: number): Promise<number> {
  await chain(s, `warm-${Math.random()}`, 50);
  let best = 0;
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    await chain(s, `run-${k}-${Math.random()}`, n);
    best = Math.max(best, Math.round((n / (performance.now() - t0)) * 1000));
  }
  return best;
}

/** µs to read a 200-phase run's events and tasks (what `baton show` and a resume do). */
async function readLatency(s: RunStore): Promise<number> {
  const id = `read-${Math.random()}`;
  await chain(s, id, 200);
  for (let i = 0; i < 10; i++) await Promise.all([s.events(id, 0), s.tasks(id)]);
  const t0 = performance.now();
  const k = 100;
  for (let i = 0; i < k; i++) await Promise.all([s.events(id, 0), s.tasks(id)]);
  return ((performance.now() - t0) * 1000) / k;
}

/**
 * Durability's own cost, whole process (issue 13): `baton run` (bin/baton.js over dist/) of a 10,000-phase
 * lattice with no-op agents on SQLite FULL beside the memory store: wall time of the process, µs per
 * phase, the ratio. The best of two runs each. BENCH_SCALE=0.1 for a quick run. Target: SQLite FULL
 * within 1.5x of memory. Prints figures; never fails on a timing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateWorkflow } from './gen.js';
import { BIN, ensureBuilt, fmt, NOOP_AGENTS, printTable, scaled, SCALE } from './queue.js';

ensureBuilt();
const N = scaled(10_000, 200);
const dir = mkdtempSync(join(tmpdir(), 'baton-bench-lattice-'));
try {
  writeFileSync(join(dir, 'lattice.yaml'), generateWorkflow(N, 'lattice'));
  writeFileSync(join(dir, 'trigger.json'), '{"topic": "t"}');

  /** One `baton run` process; its wall time in ms. */
  const once = (store: string): number => {
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [BIN, 'run', 'lattice.yaml', '--agents', NOOP_AGENTS, '--trigger', '{"topic": "t"}', '--store', store, '--json', '-q'], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: '1', BATON_STORE: '' },
      maxBuffer: 1 << 30,
    });
    const ms = performance.now() - t0;
    if (r.status !== 0) throw new Error(`baton run --store ${store} exited ${r.status}: ${r.stderr.toString().slice(-500)}`);
    const status = (JSON.parse(r.stdout.toString()) as { status: string }).status;
    if (status !== 'completed') throw new Error(`the run ${status}`);
    return ms;
  };
  const best = (store: (k: number) => string): number => Math.min(once(store(0)), once(store(1)));

  const empty = Math.min(...[0, 1].map(() => {
    const t0 = performance.now();
    spawnSync(process.execPath, [BIN, '--version'], { env: { ...process.env, NO_COLOR: '1' } });
    return performance.now() - t0;
  }));
  const mem = best(() => 'memory');
  const full = best((k) => `full-${k}.db`);
  const row = (name: string, ms: number): string[] => [name, `${fmt(ms)} ms`, fmt(((ms - empty) * 1000) / N, 1), fmt((N / (ms - empty)) * 1000)];
  console.log(`BENCH_SCALE=${SCALE}: baton run of a ${fmt(N)}-phase lattice (width 100), the whole process; \`baton --version\` takes ${fmt(empty)} ms and is subtracted per phase\n`);
  printTable([['store', 'process', 'µs/phase', 'phases/s'], row('memory', mem), row('SQLite FULL', full)]);
  console.log(`SQLite FULL / memory: ${fmt(full / mem, 2)}x whole process, ${fmt((full - empty) / (mem - empty), 2)}x without start-up (target within 1.5x)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

// Runs every bench/*.bench.ts in its own process (so peak-memory figures don't bleed into each other).
// Benchmarks print figures; they never fail on a timing.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
// the benches measure the built package (dist/), as users run it: build it first if src/ is newer
const build = spawnSync(process.execPath, ['--import', 'tsx', '-e', "import('./bench/queue.ts').then((q) => q.ensureBuilt())"], { stdio: 'inherit', cwd: join(dir, '..') });
if (build.status !== 0) process.exit(1);
let failed = 0;
for (const b of benches) {
  console.log(`\n=== ${b}`);
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', '--import', join(dir, 'dist-hooks.mjs'), join(dir, b)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exitCode = failed > 0 ? 1 : 0;

import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../src/store/sqlite.js';
import { chain } from './store-chain.js';
const dir = mkdtempSync(join(tmpdir(), 'sc-'));
for (let r = 0; r < 4; r++) {
  const s = openSqliteStore(join(dir, `x${r}.db`), { sync: 'full' });
  const t0 = performance.now();
  await chain(s, 'run1', 2000);
  const ms = performance.now() - t0;
  let wal = 0; try { wal = statSync(join(dir, `x${r}.db-wal`)).size; } catch {}
  console.log(`store-only chain 2000: ${ms.toFixed(0)} ms ${(ms*1000/2000).toFixed(0)} µs/commit, wal ${wal} bytes`);
  await s.close();
}

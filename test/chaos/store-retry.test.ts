/**
 * How long the CLI rides out a failing store is the user's to say (issue 13: "retried ... for a
 * configurable time"): `--store-retry SECONDS` on run, resume, rerun, worker and serve, else
 * `BATON_STORE_RETRY`. Before, only the package's `storeRetryMs` said it, and every command waited its
 * fixed 5 minutes (30 s as a run started).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { baton, batonRun, until } from '../helpers/spawn.js';

const LOCKER = fileURLToPath(new URL('../fixtures/chaos/sqlite-locker.mjs', import.meta.url));

function setup(): { cwd: string; db: string } {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-store-retry-'));
  writeFileSync(join(cwd, 'workflow.yaml'), `openintent: "1.0"\ninfo: {name: "Retry"}\nworkflow:\n  a: {assign: w, outputs: {n: integer}}\n  b: {assign: w, depends_on: [a], inputs: {n: a.n}, outputs: {n: integer}}\n`);
  // `a` returns once another process holds the write lock: its commit meets the lock
  writeFileSync(
    join(cwd, 'agents.mjs'),
    `import { existsSync, writeFileSync } from 'node:fs';
const at = (f) => new URL('./' + f, import.meta.url);
export default { w: async (ctx) => {
  if (ctx.phase === 'a') {
    writeFileSync(at('holding'), '');
    for (let i = 0; i < 2000 && !existsSync(at('locked')); i++) await new Promise((r) => setTimeout(r, 10));
  }
  return { n: (ctx.input.n ?? 0) + 1 };
} };
`,
  );
  return { cwd, db: join(cwd, 'store.db') };
}

describe('--store-retry SECONDS', () => {
  test('baton run gives up on a store locked past it (not after 5 minutes), and the run resumes once the lock is gone', async () => {
    const { cwd, db } = setup();
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', db, '--json', '-q', '--store-retry', '1'], { cwd });
    const release = join(cwd, 'release');
    let locker: ReturnType<typeof spawn> | undefined;
    try {
      await until(() => existsSync(join(cwd, 'holding')), 20_000);
      // the locker starts only now (the run's store exists); it holds the lock until told
      locker = spawn(process.execPath, [LOCKER, db, '120000', release], { stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      locker.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      await until(() => out.includes('locked\n'), 20_000);
      writeFileSync(join(cwd, 'locked'), '');
      const t0 = performance.now();
      const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
      const done = await child.done.finally(() => clearTimeout(timer));
      // one busy timeout (5 s) per try: given up within a few of them, not after 5 minutes
      expect(performance.now() - t0).toBeLessThan(30_000);
      expect(done.signal).toBeNull();
      expect(done.code).not.toBe(0);
      const error = (JSON.parse(done.stdout) as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('store-locked');
      const runId = /baton resume (\S+)/.exec(error.message)?.[1];
      expect(runId).toBeDefined();
      writeFileSync(release, '');
      await until(() => out.includes('released\n'), 20_000);
      const resumed = await batonRun(['resume', runId!, '--agents', 'agents.mjs', '--store', db, '--json', '-q'], { cwd, timeoutMs: 30_000 });
      expect(resumed.code).toBe(0);
      expect((JSON.parse(resumed.stdout) as { status: string; phases: Record<string, { attempts: number }> }).status).toBe('completed');
    } finally {
      child.kill('SIGKILL');
      locker?.kill('SIGKILL');
    }
  }, 90_000);

  test('baton worker gives up on a store it cannot reach after it, saying so', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-store-retry-'));
    const done = await batonRun(['worker', '--store', 'postgres://postgres@127.0.0.1:1/nothing', '--store-retry', '1'], { cwd, timeoutMs: 30_000 });
    expect(done.signal).toBeNull();
    expect(done.code).toBe(2);
    expect(done.stderr).toMatch(/^store unavailable, retrying: /m);
    expect(done.stderr).toMatch(/gave up after [12] s of retrying/);
  }, 40_000);

  test('BATON_STORE_RETRY says it when the flag does not; the flag wins; a bad value is a usage error', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-store-retry-'));
    const store = 'postgres://postgres@127.0.0.1:1/nothing';
    const byEnv = await batonRun(['worker', '--store', store], { cwd, env: { BATON_STORE_RETRY: '0.5' }, timeoutMs: 30_000 });
    expect(byEnv.code).toBe(2);
    expect(byEnv.stderr).toMatch(/gave up after [01] s of retrying/);
    const bad = await batonRun(['worker', '--store', store, '--store-retry', 'soon'], { cwd, env: { BATON_STORE_RETRY: '1' }, timeoutMs: 30_000 });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--store-retry expects a number of seconds \(0 to 604800\), got `soon`/);
    writeFileSync(join(cwd, 'workflow.yaml'), `openintent: "1.0"\ninfo: {name: "Retry"}\nworkflow:\n  a: {assign: w, outputs: {n: integer}}\n`);
    const badEnv = await batonRun(['run', 'workflow.yaml', '--stub-agents', '--store', store], { cwd, env: { BATON_STORE_RETRY: '-1' }, timeoutMs: 30_000 });
    expect(badEnv.code).toBe(2);
    expect(badEnv.stderr).toMatch(/BATON_STORE_RETRY expects a number of seconds/);
  }, 60_000);
});

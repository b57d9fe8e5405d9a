/**
 * Short retry delays through the real CLI and real clocks, on every store: the runs that used to
 * hang (a due time passing during the commit that scheduled it) end, and fast. Also a second
 * process holding SQLite's write lock for a while: the run waits it out (no hang), without spinning.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { batonRun } from '../helpers/spawn.js';
import { testDatabase } from '../helpers/pg.js';

const db = testDatabase('baton_test_retries');
beforeAll(db.create);
afterAll(db.drop);

function project(delay: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-retries-'));
  const retry = `retry: {max_attempts: 3, backoff: constant, initial_delay_ms: ${delay}}`;
  writeFileSync(
    join(dir, 'workflow.yaml'),
    `openintent: "1.0"\ninfo: {name: retries}\nworkflow:\n  a: {assign: flaky, outputs: {n: number}, ${retry}}\n  b: {assign: flaky, depends_on: [a], outputs: {n: number}, ${retry}}\n  c: {assign: flaky, depends_on: [a], outputs: {n: number}, ${retry}}\n  d: {assign: flaky, depends_on: [b, c], outputs: {n: number}, ${retry}}\n`,
  );
  writeFileSync(join(dir, 'agents.mjs'), `export default { flaky: async (ctx) => { if (ctx.attempt === 1) throw new Error('once'); return { n: ctx.attempt }; } };\n`);
  return dir;
}

const STORES: [string, (dir: string) => string][] = [
  ['memory', () => 'memory'],
  ['sqlite', (dir) => join(dir, '.baton', 'b.db')],
  ['postgres', () => db.url],
];

describe('retries after 0, 1, 2, 10 and 200 ms end on every store', () => {
  for (const [kind, store] of STORES) {
    test(kind, async () => {
      for (const delay of [0, 1, 2, 10, 200]) {
        const dir = project(delay);
        const r = await batonRun(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', store(dir), '--json', '--run-id', `r-${kind}-${delay}-${Date.now().toString(36)}`], { cwd: dir });
        expect(r.code, `${kind} ${delay} ms: ${r.stderr}`).toBe(0);
        const result = JSON.parse(r.stdout) as { status: string; phases: Record<string, { attempts: number }> };
        expect(result.status).toBe('completed');
        for (const p of ['a', 'b', 'c', 'd']) expect(result.phases[p]!.attempts).toBe(2);
      }
    }, 120_000);
  }
});

describe('SQLite: another process holds the write lock for 2 s', () => {
  test('the run waits it out (SQLite sleeps in its busy handler) and completes', async () => {
    const dir = project(1);
    const file = join(dir, '.baton', 'b.db');
    // create the store first, then hold its write lock from a plain better-sqlite3 process
    expect((await batonRun(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', file, '--json', '--run-id', 'first'], { cwd: dir })).code).toBe(0);
    const holder = spawn(process.execPath, ['-e', `const D = require('better-sqlite3'); const db = new D(${JSON.stringify(file)}); db.exec('BEGIN IMMEDIATE'); console.log('locked'); setTimeout(() => { db.exec('COMMIT'); db.close(); }, 2000);`], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
    const closed = new Promise((res) => holder.on('close', res));
    await new Promise<void>((r) => holder.stdout.once('data', () => r()));
    const t0 = Date.now();
    const r = await batonRun(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', file, '--json', '--run-id', 'second'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { status: string }).status).toBe('completed');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    await closed;
  }, 60_000);
});

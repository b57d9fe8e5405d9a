import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as Database from './sqlite-driver.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunStore } from '../engine/ports.js';
import { newRun, storeConformance, task } from './conformance.js';
import { latestVersion, MIGRATIONS, type Migration } from './migrations.js';

const NOW_V = latestVersion(MIGRATIONS);
import { concurrentWriters, consistency, killedWriter } from './processes.js';
import { SqliteStore, makeDirs, pinned } from './sqlite.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const files = new WeakMap<RunStore, string>();

storeConformance('sqlite', {
  create: () => {
    const file = join(dir, `c${n++}.db`);
    const s = new SqliteStore(file, { pollMs: 20 });
    files.set(s, file);
    return Promise.resolve(s);
  },
  // a second connection to the same file: what another process sees
  peer: (store) => Promise.resolve(new SqliteStore(files.get(store)!, { pollMs: 20 })),
});

describe('sqlite store', () => {
  const file = (name: string): string => join(dir, name);
  const codeOf = (f: () => unknown): string => {
    try {
      f();
    } catch (err) {
      return (err as { code?: string }).code ?? 'no code';
    }
    return 'returned';
  };

  it('opens in WAL mode with synchronous FULL by default and NORMAL on request, with a busy timeout', async () => {
    const full = new SqliteStore(file('full.db'));
    const normal = new SqliteStore(file('normal.db'), { sync: 'normal' });
    expect(pragma(full, 'journal_mode')).toBe('wal');
    expect(pragma(full, 'synchronous')).toBe(2);
    expect(pragma(normal, 'synchronous')).toBe(1);
    expect(pragma(full, 'busy_timeout')).toBe(5000);
    await full.close();
    await normal.close();
  });

  it('makes the folders a store file needs, and fails at once where one cannot be made (under /proc)', async () => {
    const s = new SqliteStore(file('deep/er/store.db'));
    await s.close();
    // Node's own recursive mkdirSync retries a path under /proc forever
    if (process.platform === 'linux') expect(codeOf(() => makeDirs('/proc/baton-nope/x'))).toBe('ENOENT');
    expect(codeOf(() => makeDirs(file('deep/er')))).toBe('returned');
  });

  it('refuses a file that is not a SQLite database, naming it (store-corrupt)', () => {
    const f = file('garbage.db');
    writeFileSync(f, 'this is not a database, just some text that is long enough to look like a header '.repeat(20));
    let err: unknown;
    try {
      new SqliteStore(f);
    } catch (e) {
      err = e;
    }
    expect((err as { code: string }).code).toBe('store-corrupt');
    expect((err as Error).message).toContain(f);
  });

  it('reports damaged pages of a store file as store-corrupt, naming the file', async () => {
    const f = file('damaged.db');
    const s = new SqliteStore(f);
    for (let i = 0; i < 30; i++) await s.createRun(newRun(`d${i}`, { events: 20, tasks: [task('a', { output: { text: 'x'.repeat(500) } })] }));
    await s.close();
    const bytes = readFileSync(f);
    // keep page 1 (the header and the schema), scramble the rest
    for (let i = 4096; i < bytes.length; i++) bytes[i] = (i * 7919) & 0xff;
    writeFileSync(f, bytes);
    let err: unknown;
    try {
      const d = new SqliteStore(f);
      for (let i = 0; i < 30; i++) await d.events(`d${i}`);
      await d.close();
    } catch (e) {
      err = e;
    }
    expect((err as { code: string }).code).toBe('store-corrupt');
    expect((err as Error).message).toContain(f);
  });

  it('refuses a SQLite database that is not a Baton store (store-corrupt)', () => {
    const f = file('other.db');
    const db = pinned(Database.open(f));
    db.exec('CREATE TABLE customers (id INTEGER PRIMARY KEY)');
    db.close();
    expect(codeOf(() => new SqliteStore(f))).toBe('store-corrupt');
  });

  it('migrates a store to the next version keeping its data, and refuses a store newer than the code (store-version)', async () => {
    const f = file('migrate.db');
    const s = new SqliteStore(f);
    await s.createRun(newRun('kept', { tasks: [task('a')] }));
    await s.close();
    const next: Migration = {
      version: NOW_V + 1,
      description: 'a fake next version',
      sqlite: ['ALTER TABLE runs ADD COLUMN labels TEXT', 'CREATE INDEX runs_labels ON runs (labels)'],
      postgres: [],
    };
    const v2 = new SqliteStore(f, { migrations: [...MIGRATIONS, next] });
    expect((await v2.run('kept'))!.runId).toBe('kept');
    expect(await v2.tasks('kept')).toEqual([task('a')]);
    expect(pragma(v2, 'SELECT group_concat(version) FROM baton_schema', true)).toBe(Array.from({ length: NOW_V + 1 }, (_, i) => i + 1).join(','));
    await v2.close();
    // reopening with the same code is a no-op
    await new SqliteStore(f, { migrations: [...MIGRATIONS, next] }).close();
    let err: unknown;
    try {
      new SqliteStore(f);
    } catch (e) {
      err = e;
    }
    expect((err as { code: string }).code).toBe('store-version');
    expect((err as Error).message).toMatch(new RegExp(`version ${NOW_V + 1}.*up to ${NOW_V}`));
  });

  it('opens a version 3 store (before runs.changed_at) and migrates it: its runs are kept, and named by takeChanged once they change', async () => {
    const f = file('v3.db');
    const s = new SqliteStore(f);
    await s.createRun(newRun('old', { events: 2, tasks: [task('a')] }));
    await s.createRun(newRun('older', { createdAt: 1 }));
    await s.close();
    // the file as version 3 left it: no changed_at, no runs_changed, no version 4
    const raw = pinned(Database.open(f));
    raw.exec('DROP INDEX runs_active; DROP INDEX runs_workflow_recent; DROP INDEX runs_changed; ALTER TABLE runs DROP COLUMN changed_at; DELETE FROM baton_schema WHERE version >= 4');
    expect(raw.prepare("SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'changed_at'").pluck().get()).toBe(0);
    raw.close();
    expect(MIGRATIONS.find((m) => m.version === 4)).toBeDefined();

    const m = new SqliteStore(f);
    expect(pragma(m, 'SELECT max(version) FROM baton_schema', true)).toBe(NOW_V);
    expect(pragma(m, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'runs_changed'", true)).toBe(1);
    expect((await m.run('old'))!.seq).toBe(2);
    expect(await m.tasks('old')).toEqual([task('a')]);
    const other = new SqliteStore(f);
    const c = {};
    expect(m.takeChanged(c)).toBe('unknown');
    expect(m.takeChanged(c)).toEqual(new Map());
    await other.transact('old', 2, () => ({ commit: { events: [{ seq: 3, at: 1, type: 'task.log', phase: 'a', task_id: 't-a', attempt: 1, message: 'x' }], tasks: [], run: { status: 'running', updatedAt: 1, endedAt: null, costUsd: 0, wakeAt: null } }, value: null }));
    await other.createRun(newRun('new'));
    expect(m.takeChanged(c)).toEqual(new Map([['old', 3], ['new', 1]]));
    expect(m.takeChanged(c)).toEqual(new Map());
    await other.close();
    await m.close();
  });

  it('gives up with store-locked when another connection holds the write lock past the busy timeout', async () => {
    const f = file('locked.db');
    const s = new SqliteStore(f, { busyTimeoutMs: 50 });
    await s.createRun(newRun('l'));
    const other = pinned(Database.open(f));
    other.exec('BEGIN IMMEDIATE');
    try {
      const err = await s.transact('l', 1, () => ({ commit: null, value: null })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as { code: string }).code).toBe('store-locked');
      expect((err as Error).message).toContain(f);
      // readers are not blocked (WAL)
      expect((await s.run('l'))!.seq).toBe(1);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    await s.close();
  });

  it('waits for a lock held by another process instead of failing', async () => {
    const f = file('wait.db');
    const s = new SqliteStore(f);
    await s.createRun(newRun('w'));
    const holder = spawn(process.execPath, ['-e', `const D=require('better-sqlite3');const d=new D(${JSON.stringify(f)});d.exec('BEGIN IMMEDIATE');console.log('locked');setTimeout(()=>{d.exec('COMMIT');d.close()},300)`], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    const t = performance.now();
    const r = await s.transact('w', 1, () => ({ commit: null, value: 'after the other process' }));
    expect(r).toEqual({ ok: true, value: 'after the other process' });
    expect(performance.now() - t).toBeGreaterThan(100);
    await new Promise((resolve) => holder.once('exit', resolve));
    await s.close();
  });

  it('serialises transactions of several processes on one file: gap-free, every commit seen', async () => {
    const f = file('procs.db');
    const s = new SqliteStore(f);
    await s.createRun(newRun('p'));
    expect(await concurrentWriters(f, 'p', 3, 40)).toEqual([0, 0, 0]);
    expect(await consistency(s, 'p')).toEqual({ seqs: true, n: 121, run: [121, 121], attempt: 121 });
    await s.close();
  }, 30_000);

  it('loses no commit and keeps log, run and tasks in step when a writer is killed (SIGKILL) mid-run', async () => {
    const f = file('killed.db');
    const s = new SqliteStore(f);
    await s.createRun(newRun('k'));
    await killedWriter(f, 'k', 150);
    const after = await consistency(s, 'k');
    expect(after.n).toBeGreaterThan(1);
    expect(after).toEqual({ seqs: true, n: after.n, run: [after.n, after.n], attempt: after.n });
    // and the file takes new commits
    expect(await concurrentWriters(f, 'k', 1, 5)).toEqual([0]);
    expect((await s.run('k'))!.seq).toBe(after.n + 5);
    await s.close();
  }, 30_000);

  it('finds work through the partial indexes, and no statement scans a table', async () => {
    const f = file('plan.db');
    const s = new SqliteStore(f);
    const statements = (s as unknown as { s: Record<string, { source: string }> }).s;
    const db = pinned(Database.open(f));
    const plans: Record<string, string> = {};
    for (const [name, st] of Object.entries(statements)) {
      const named = [...new Set([...st.source.matchAll(/:(\w+)/g)].map((m) => m[1]!))];
      const explain = db.prepare(`EXPLAIN QUERY PLAN ${st.source}`);
      const rows = (named.length > 0 ? explain.all(Object.fromEntries(named.map((n) => [n, null]))) : explain.all(...Array<null>((st.source.match(/\?/g) ?? []).length).fill(null))) as { detail: string }[];
      plans[name] = rows.map((r) => r.detail).join('\n');
    }
    db.close();
    await s.close();
    expect(plans.findWork).toContain('tasks_due');
    expect(plans.findWork).toContain('tasks_lease');
    expect(plans.findWork).toContain('runs_live_wake');
    // a page of runs seeks to its cursor in runs_recent
    expect(plans.runs).toMatch(/SEARCH runs USING INDEX runs_recent \(\(created_at,run_id\)<\(\?,\?\)\)/);
    expect(plans.runsOfWorkflow).toMatch(/SEARCH runs USING INDEX runs_workflow_recent \(workflow_name=\? AND \(created_at,run_id\)<\(\?,\?\)\)/);
    for (const [name, plan] of Object.entries(plans)) expect(plan, `${name}:\n${plan}`).not.toMatch(/SCAN (t|r|tasks|runs|events)\b(?! USING)/);
  });
});

function pragma(s: SqliteStore, what: string, sql = false): unknown {
  const db = (s as unknown as { db: Database.Database }).db;
  return db.prepare(sql ? what : `PRAGMA ${what}`).pluck().get();
}

/**
 * Golden store files: a store written by each released schema version opens with the current code
 * and reads exactly what was written (test/fixtures/stores/make-vN.ts says how each was made).
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { latestVersion, MIGRATIONS } from '../src/store/migrations.js';
import { SqliteStore, pinned } from '../src/store/sqlite.js';
import { openStore } from '../src/api/store.js';

const fixtures = join(import.meta.dirname, 'fixtures', 'stores');
const dir = mkdtempSync(join(tmpdir(), 'baton-golden-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Expected {
  runs: { runId: string; workflowHash: string }[];
  workflows: unknown[];
  tasks: Record<string, unknown>;
  events: Record<string, unknown>;
}

describe('golden store files', () => {
  it('v1.db is a version 1 store', () => {
    const db = pinned(new Database(join(fixtures, 'v1.db'), { readonly: true }));
    expect(db.prepare('SELECT group_concat(version) FROM baton_schema').pluck().get()).toBe('1');
    db.close();
  });

  it('opens v1.db with this code and reads its runs, workflow, tasks and events exactly', async () => {
    const file = join(dir, 'v1.db');
    copyFileSync(join(fixtures, 'v1.db'), file);
    const expected = JSON.parse(readFileSync(join(fixtures, 'v1.expected.json'), 'utf8')) as Expected;
    const s = new SqliteStore(file);
    const runs = await s.runs();
    expect(JSON.stringify(runs)).toBe(JSON.stringify(expected.runs));
    expect(JSON.stringify([await s.workflow(runs[0]!.workflowHash)])).toBe(JSON.stringify(expected.workflows));
    for (const r of runs) {
      expect(JSON.stringify(await s.tasks(r.runId)), `tasks of ${r.runId}`).toBe(JSON.stringify(expected.tasks[r.runId]));
      expect(JSON.stringify(await s.events(r.runId)), `events of ${r.runId}`).toBe(JSON.stringify(expected.events[r.runId]));
    }
    // and it is a live store: work is found and a run continues
    expect(await s.findWork({ agents: null, now: 1_763_800_000_000 + 3_600_000, limit: 10 })).toEqual([
      { runId: 'run-waiting', reason: 'timer', seq: 2 },
      { runId: 'run-running', reason: 'ready', seq: 1 },
      { runId: 'run-running', reason: 'lease', phase: 'a', attempt: 1, owner: 'host-1/42', seq: 1 },
    ]);
    const r = await s.transact('run-waiting', 2, (delta) => ({
      commit: { events: [{ seq: 3, at: 1, type: 'gate.decided', gate_id: 'g-run', decision: 'approved', by: 'ana', auto: false }], tasks: [], run: { status: 'running', updatedAt: 1, endedAt: null, costUsd: 0, wakeAt: null } },
      value: delta.length,
    }));
    expect(r).toEqual({ ok: true, value: 0 });
    await s.close();
    const db = pinned(new Database(file, { readonly: true }));
    expect(db.prepare('SELECT max(version) FROM baton_schema').pluck().get()).toBe(latestVersion(MIGRATIONS));
    db.close();
  });

  it('a reading command (baton runs, show) on an older store it may write migrates it, as a writing one does', async () => {
    const file = join(dir, 'v1-read.db');
    copyFileSync(join(fixtures, 'v1.db'), file);
    const expected = JSON.parse(readFileSync(join(fixtures, 'v1.expected.json'), 'utf8')) as Expected;
    // it was refused (store-version: "open it once with write access") after every schema change
    const s = await openStore(file, { access: 'read' });
    expect(JSON.stringify(await s.runs())).toBe(JSON.stringify(expected.runs));
    await s.close();
    const db = pinned(new Database(file, { readonly: true }));
    expect(db.prepare('SELECT max(version) FROM baton_schema').pluck().get()).toBe(latestVersion(MIGRATIONS));
    db.close();
  });
});

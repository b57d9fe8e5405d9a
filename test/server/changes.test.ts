/**
 * The server's ChangeHub over real stores: with a PostgreSQL store object of its own (whose
 * notifications say which runs changed), or the worker's own store object on memory and SQLite (whose
 * takeChanged has a consumer per hub), a commit raises only its run's version and the all-runs one; over
 * PostgreSQL's worker store object (which hears only commits that leave work) every version moves.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine, openStore, WorkflowSpec, type Engine, type RunStore } from '@baton-run/baton';
import { ChangeHub } from '../../src/api/changes.js';
import { testDatabase } from '../helpers/pg.js';
import { GATED } from './harness.js';

async function twoRuns(store: RunStore): Promise<{ a: string; b: string; engine: ReturnType<typeof createEngine> }> {
  const engine = createEngine({ store, stubAgents: true });
  const spec = WorkflowSpec.fromString(GATED);
  return { a: await engine.create(spec), b: await engine.create(spec), engine };
}

describe('ChangeHub', () => {
  const db = testDatabase('baton_hub');
  let store: RunStore;
  let own: RunStore;
  beforeAll(async () => {
    await db.create();
    store = await openStore(db.url, { cwd: process.cwd() });
    own = await openStore(db.url, { cwd: process.cwd() });
  });
  afterAll(async () => {
    await own?.close();
    await store?.close();
    await db.drop();
  });

  test('targeted (PostgreSQL, its own store object): a commit wakes its run and the all-runs streams, not the others', async () => {
    const { a, b, engine } = await twoRuns(store);
    const hub = new ChangeHub(own, true);
    const unsubscribe = hub.subscribe();
    try {
      // until the LISTEN connection is up the store cannot say which runs changed (every version moves)
      await untilTargeted(hub, engine, a, 20);
      await cancelMovesOnly(hub, engine, a, b);
      const vb2 = hub.version(b);
      const wokenB = hub.next(b, vb2, 10_000);
      await engine.cancel(b, 'test');
      await wokenB;
      expect(hub.version(b)).toBeGreaterThan(vb2);
    } finally {
      unsubscribe();
      hub.close();
    }
  });

  test.each(['memory', 'sqlite'])('targeted on %s with the worker’s own store object: a commit moves its run’s version, not the others', async (kind) => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-hub-'));
    const s = await openStore(kind === 'memory' ? 'memory' : join(dir, 'h.db'), { cwd: dir });
    const { a, b, engine } = await twoRuns(s);
    const hub = new ChangeHub(s);
    const unsubscribe = hub.subscribe();
    try {
      // a look that says 'unknown' moves every version once
      await untilTargeted(hub, engine, a, 5);
      await cancelMovesOnly(hub, engine, a, b);
    } finally {
      unsubscribe();
      hub.close();
      await engine.close();
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('untargeted (PostgreSQL’s worker store object, which hears only commits that leave work): every version moves at each change', async () => {
    const { a, b, engine } = await twoRuns(store);
    const hub = new ChangeHub(store);
    const unsubscribe = hub.subscribe();
    try {
      const vb = hub.version(b);
      const woken = hub.next(b, vb, 10_000);
      await engine.cancel(a, 'test');
      await woken;
      expect(hub.version(b)).toBeGreaterThan(vb);
    } finally {
      unsubscribe();
      hub.close();
    }
  });

  test('a wait ends when its signal aborts or the hub closes, never rejects', async () => {
    const memory = await openStore('memory', { cwd: process.cwd() });
    const hub = new ChangeHub(memory);
    const ctl = new AbortController();
    const waiting = hub.next(undefined, hub.version(), 60_000, ctl.signal);
    ctl.abort();
    await expect(waiting).resolves.toBeUndefined();
    const other = hub.next(undefined, hub.version(), 60_000);
    hub.close();
    await expect(other).resolves.toBeUndefined();
    await memory.close();
  });
});

/** Commits to a third run until only its version moves (the store names the runs that changed). */
async function untilTargeted(hub: ChangeHub, engine: Engine, watched: string, tries: number): Promise<void> {
  const spec = WorkflowSpec.fromString(GATED);
  for (let i = 0; i < tries; i++) {
    const c = await engine.create(spec);
    const before = hub.version(watched);
    const seen = hub.next(c, hub.version(c), 10_000);
    await engine.cancel(c, 'warm-up');
    await seen;
    if (hub.version(watched) === before) return;
  }
}

/** Cancelling `a` moves its version and the all-runs one, not `b`'s. */
async function cancelMovesOnly(hub: ChangeHub, engine: Engine, a: string, b: string): Promise<void> {
  const [va, vb, vall] = [hub.version(a), hub.version(b), hub.version()];
  const woken = hub.next(a, va, 10_000);
  await engine.cancel(a, 'test');
  await woken;
  expect(hub.version(a)).toBeGreaterThan(va);
  expect(hub.version()).toBeGreaterThan(vall);
  expect(hub.version(b)).toBe(vb);
}

/**
 * A serving worker that binds some agents only (as `baton worker --agents` beside workers that bind
 * the others): more than a look's worth (100) of older runs whose ready tasks need an agent it does not
 * bind must not hide a newer run it can serve. Before, every look returned the same 100 oldest runs,
 * the worker loaded each, found nothing it could claim, and a plain run started after them never
 * started (60 s and counting on PostgreSQL and SQLite). On every store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { openStore } from '../../src/api/store.js';
import type { RunStore } from '../../src/engine/ports.js';
import { testDatabase } from '../helpers/pg.js';
import { header, until, wf } from './helpers.js';

const db = testDatabase('baton_test_foreign');
const dir = mkdtempSync(join(tmpdir(), 'baton-foreign-'));
beforeAll(db.create);
afterAll(async () => {
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

const FOREIGN = 130;
const other = wf(`${header()}workflow:
  a: {assign: other, outputs: {n: number}}
`);
const mixed = wf(`${header()}workflow:
  a: {assign: other, outputs: {n: number}}
  b: {assign: quick, depends_on: [a], outputs: {n: number}}
`);
const plain = wf(`${header()}workflow:
  one: {assign: quick, outputs: {n: number}}
  two: {assign: quick, depends_on: [one], outputs: {n: number}}
`);

describe.each([
  ['memory', () => 'memory'],
  ['sqlite', () => join(dir, `foreign-${Date.now()}.db`)],
  ['postgres', () => db.url],
])('a worker that binds some agents only (%s)', (_kind, spec) => {
  test(`serves a new run behind ${FOREIGN} older runs waiting for an agent it does not bind, and takes up a run whose own task becomes ready later`, async () => {
    await using store: RunStore = await openStore(spec(), { cwd: dir });
    // the runs are started by an engine that binds every agent (a start refuses unbound agents)
    await using starter = createEngine({ store, agents: { other: () => ({ n: 1 }), quick: () => ({ n: 1 }) } });
    for (let i = 0; i < FOREIGN; i++) await starter.start(other, { detach: true });
    const { id: later } = await starter.start(mixed, { detach: true });
    await using worker = createEngine({ store, agents: { quick: () => ({ n: 2 }) } });
    const stop = new AbortController();
    const serving = worker.serve(stop.signal);
    try {
      const { id } = await starter.start(plain, { detach: true });
      await until(async () => (await store.run(id))?.status === 'completed', 'the plain run completed', 20_000);
      // the mixed run's own task (b, agent quick) becomes ready once another worker ran a (agent other)
      expect((await store.tasks(later)).find((t) => t.phase === 'a')?.status).toBe('ready');
      await using peer = createEngine({ store, agents: { other: () => ({ n: 1 }) } });
      const peerStop = new AbortController();
      const peerServing = peer.serve(peerStop.signal);
      await until(async () => (await store.tasks(later)).find((t) => t.phase === 'a')?.status === 'completed', 'a of the mixed run completed by the peer', 20_000);
      peerStop.abort();
      await peerServing;
      await until(async () => (await store.run(later))?.status === 'completed', 'the mixed run completed by the worker', 20_000);
    } finally {
      stop.abort();
      await serving;
    }
  }, 120_000);
});

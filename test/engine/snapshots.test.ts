/** Snapshots of the run state: a cache of replay(), exact at every seq, never read when it cannot be trusted. */
import { describe, expect, test } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../../src/api/engine.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { parseWorkflow } from '../../src/workflow/compile.js';
import { MemoryStore } from '../../src/store/memory.js';
import type { RunEvent } from '../../src/engine/events.js';
import type { RunStore } from '../../src/engine/ports.js';
import { SNAPSHOT_FORMAT, snapshotDue, snapshotOf, stateOfSnapshot } from '../../src/engine/snapshot.js';
import { applyEvent, initialState, newPhaseState, replay, startCompacting } from '../../src/engine/state.js';

const WORKFLOW = `openintent: "1.0"
info: {name: "Snapshots"}
types:
  Section: {name: string, words: integer}
workflow:
  outline:
    assign: o
    inputs: {n: $trigger.n}
    outputs: {sections: "Section[]"}
  draft:
    assign: d
    depends_on: [outline]
    for_each: outline.sections
    max_parallel: 2
    tolerated_failures: 1
    inputs: {name: $item.name}
    outputs: {text: string}
    retry: {max_attempts: 2, backoff: constant, initial_delay_ms: 0}
  review:
    assign: r
    depends_on: [outline]
    outputs: {ok: boolean}
  assemble:
    assign: o
    depends_on: [draft, review]
    inputs: {texts: draft.text}
    outputs: {sections: "Section[]"}
`;

function model() {
  const r = parseWorkflow(WORKFLOW);
  if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join('\n'));
  return r.model;
}

/** A run with fan-out items, a retried item, a failed (tolerated) item, costs and logs; its whole log. */
async function aLog(store: RunStore = new MemoryStore(), snapshotEvery?: number): Promise<{ runId: string; events: RunEvent[]; store: RunStore }> {
  const tries = new Map<string, number>();
  const agents = {
    o: (ctx: { input: Record<string, unknown> }) => ({ sections: Array.from({ length: (ctx.input['n'] as number | undefined) ?? 1 }, (_, i) => ({ name: `s${i}`, words: i })) }),
    d: (ctx: { input: Record<string, unknown>; log: (m: string) => void; reportCost: (usd: number) => void }) => {
      const name = ctx.input['name'] as string;
      const n = (tries.get(name) ?? 0) + 1;
      tries.set(name, n);
      ctx.log(`draft ${name} try ${n}`);
      ctx.reportCost(0.01);
      if (name === 's1' && n === 1) throw new Error('flaky');
      if (name === 's3') throw new Error('always');
      return { text: `text of ${name}` };
    },
    r: () => ({ ok: true }),
  };
  const engine = createEngine({ store, agents, concurrency: 3, ...(snapshotEvery !== undefined ? { snapshotEvery } : {}) });
  // served (as `baton worker` does), not driven: a driven run keeps its whole log and writes no snapshots
  const runId = await engine.create(model(), { trigger: { n: 6 } });
  await serveUntilEnded(engine, store, runId);
  await engine.close();
  expect((await store.run(runId))?.status).toBe('completed');
  return { runId, events: await store.events(runId), store };
}

/** Serves the store (as `baton worker` does) until the run has ended; rejects with the worker's fault. */
async function serveUntilEnded(engine: ReturnType<typeof createEngine>, store: RunStore, runId: string): Promise<void> {
  const stop = new AbortController();
  const serving = engine.serve(stop.signal);
  let failed: unknown;
  serving.catch((e: unknown) => (failed = e));
  for (let i = 0; i < 1000 && failed === undefined; i++) {
    const s = (await store.run(runId))?.status;
    if (s !== 'running' && s !== 'waiting') break;
    await new Promise((r) => setTimeout(r, 5));
  }
  stop.abort();
  await serving;
}

describe('snapshots', () => {
  test('a snapshot at any seq holds exactly the state replay gives at that seq', async () => {
    const { runId, events } = await aLog();
    expect(events.length).toBeGreaterThan(40);
    for (let k = 0; k <= events.length; k++) {
      const state = replay(runId, events.slice(0, k));
      const snap = snapshotOf(state);
      expect(snap).toMatchObject({ seq: state.seq, format: SNAPSHOT_FORMAT });
      const back = stateOfSnapshot(runId, snap)!;
      expect(back).toEqual(state);
      // and it goes on from there as the log does
      for (const e of events.slice(k, k + 3)) applyEvent(back, e);
      expect(back).toEqual(replay(runId, events.slice(0, Math.min(events.length, k + 3))));
    }
  });

  test('a snapshot of another format, another run, another seq or damaged bytes is never read', async () => {
    const { runId, events } = await aLog();
    const snap = snapshotOf(replay(runId, events.slice(0, 10)));
    expect(stateOfSnapshot(runId, snap)).toBeDefined();
    expect(stateOfSnapshot(runId, { ...snap, format: SNAPSHOT_FORMAT + 1 })).toBeUndefined();
    expect(stateOfSnapshot('another-run', snap)).toBeUndefined();
    expect(stateOfSnapshot(runId, { ...snap, seq: snap.seq + 1 })).toBeUndefined();
    expect(stateOfSnapshot(runId, { ...snap, body: snap.body.slice(0, 7) })).toBeUndefined();
    expect(stateOfSnapshot(runId, { ...snap, body: Uint8Array.from([1, 2, 3]) })).toBeUndefined();
    expect(stateOfSnapshot(runId, undefined)).toBeUndefined();
  });

  test('snapshots are due once the events since the last outnumber both the setting and three per task', () => {
    const s = initialState('r');
    for (let i = 0; i < 50; i++) s.phases.set(`p${i}`, newPhaseState(`r:p${i}`));
    s.seq = 140;
    expect(snapshotDue(s, 0, 30)).toBe(false); // fewer than three events per task
    s.seq = 150;
    expect(snapshotDue(s, 0, 30)).toBe(true);
    expect(snapshotDue(s, 20, 30)).toBe(false);
    expect(snapshotDue(s, 0, 200)).toBe(false); // fewer than the setting
  });

  test('the state has the fields the snapshot format was made for (a change of shape must change SNAPSHOT_FORMAT)', () => {
    // If this fails, RunState or PhaseState changed: bump SNAPSHOT_FORMAT in snapshot.ts (old snapshots are
    // then ignored and runs replay their logs), and update the lists here.
    expect(SNAPSHOT_FORMAT).toBe(3);
    expect(Object.keys(initialState('r')).sort()).toEqual(
      ['alerted', 'autoApprove', 'cancelReason', 'compactItems', 'compacted', 'costUsd', 'deadlineAt', 'endedAt', 'failure', 'firstFailure', 'gates', 'graph', 'open', 'phases', 'ready', 'readyWaits', 'rerunOf', 'runId', 'running', 'seq', 'settledItems', 'startedAt', 'status', 'trigger', 'workflow', 'workflowHash'].sort(),
    );
    expect(Object.keys(newPhaseState('t')).sort()).toEqual(
      ['agent', 'attempts', 'checkpoint', 'costUsd', 'endedAt', 'error', 'escalations', 'failures', 'fan', 'gate', 'input', 'inputGates', 'item', 'lastFailure', 'leaseExpiresAt', 'leaseOwner', 'nextAgent', 'notBefore', 'output', 'partial', 'process', 'resumable', 'reusedFrom', 'settling', 'skippedDetail', 'skippedReason', 'startedAt', 'status', 'taskId', 'timeouts'].sort(),
    );
  });

  test('a serving worker stores snapshots as the run goes; a driven run (its whole log in memory) stores none', async () => {
    const driven = new MemoryStore();
    const engine = createEngine({ store: driven, agents: { o: () => ({ sections: [] }), d: () => ({ text: '' }), r: () => ({ ok: true }) }, snapshotEvery: 1 });
    const r = await engine.run(model(), { trigger: { n: 3 } });
    await engine.close();
    expect(r.status).toBe('completed');
    expect((await driven.readState(r.runId, SNAPSHOT_FORMAT)).snapshot).toBeUndefined();
    const store = new MemoryStore();
    const { runId, events } = await aLog(store, 5);
    const { snapshot, events: after } = await store.readState(runId, SNAPSHOT_FORMAT);
    // the run ended: its last snapshot is from while it ran, and the rest of the log follows it
    expect(snapshot).toBeDefined();
    expect(snapshot!.seq).toBeGreaterThan(5);
    expect(after.length).toBe(events.length - snapshot!.seq);
    // the serving worker keeps no log, so it folds settled items out of its state (and its snapshots)
    const folded = replay(runId, events.slice(0, snapshot!.seq));
    startCompacting(folded);
    expect(folded.compacted).toBeGreaterThan(0);
    expect(stateOfSnapshot(runId, snapshot)).toEqual(folded);
  });

  test('a worker that crashed mid-run is followed by one that loads the run from its snapshot, not its whole log (SQLite)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-snap-'));
    try {
      const file = join(dir, 'runs.db');
      const calls: string[] = [];
      const agents = {
        o: (ctx: { input: Record<string, unknown> }) => ({ sections: Array.from({ length: ctx.input['n'] as number }, (_, i) => ({ name: `s${i}`, words: i })) }),
        d: (ctx: { input: Record<string, unknown>; attempt: number; log: (m: string) => void }) => {
          calls.push(`${ctx.input['name'] as string}#${ctx.attempt}`);
          // a few log lines per item: the log outgrows three events per task mid-run, so a snapshot is due before the crash
          for (let i = 0; i < 4; i++) ctx.log(`drafting ${ctx.input['name'] as string}: step ${i}`);
          return { text: `text of ${ctx.input['name'] as string}` };
        },
        r: () => ({ ok: true }),
      };
      const a = openSqliteStore(file);
      const first = createEngine({ store: a, agents, concurrency: 2, snapshotEvery: 5, faults: { at: 'flush.after-commit', hit: 10 }, isOwnerDead: () => true });
      await first.create(model(), { runId: 'snap-crash', trigger: { n: 30 } });
      const crashed = await serveUntilEnded(first, a, 'snap-crash').then(
        () => 'no crash',
        (e: { code?: string }) => e.code,
      );
      expect(crashed).toBe('fault-injected');
      await first.close().catch(() => undefined);
      await a.close();

      const b = openSqliteStore(file);
      const reads: { snapshot: number | undefined; events: number }[] = [];
      const readState = b.readState.bind(b);
      b.readState = async (runId, format) => {
        const r = await readState(runId, format);
        reads.push({ snapshot: r.snapshot?.seq, events: r.events.length });
        return r;
      };
      const logBefore = (await b.events('snap-crash')).length;
      const second = createEngine({ store: b, agents, concurrency: 2, snapshotEvery: 5, isOwnerDead: () => true });
      await serveUntilEnded(second, b, 'snap-crash');
      await second.close();
      const run = await b.run('snap-crash');
      expect(run?.status).toBe('completed');
      // it was taken up from a snapshot and the few events after it
      expect(reads.length).toBeGreaterThan(0);
      expect(reads[0]!.snapshot).toBeGreaterThan(0);
      expect(reads[0]!.snapshot! + reads[0]!.events).toBe(logBefore);
      expect(reads[0]!.events).toBeLessThan(logBefore / 2);
      // every item drafted; what the log says replays to what the rows say
      const events = await b.events('snap-crash');
      const completed = events.filter((e) => e.type === 'task.completed').map((e) => (e as { phase: string }).phase);
      expect(new Set(completed).size).toBe(completed.length);
      for (let i = 0; i < 30; i++) expect(completed).toContain(`draft[${i}]`);
      const state = replay('snap-crash', events);
      expect(state.status).toBe('completed');
      await b.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

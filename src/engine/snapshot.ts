/**
 * Snapshots of a run's state: a run loads from its latest snapshot plus the events after it, not by
 * replaying its whole log each time a process takes it up. A snapshot is a cache of `replay(events up
 * to seq)`: the log stays the truth, and a snapshot that cannot be read (another format, a newer
 * Baton, a damaged blob) is ignored and the log replayed.
 *
 * The body is the state in V8's structured serialisation (node:v8), which keeps Maps, Sets and
 * `undefined` as they are, so no field list can go stale here. The state's shape is this file's
 * concern all the same: SNAPSHOT_FORMAT changes whenever RunState or PhaseState gains, loses or
 * changes a field (snapshot.test.ts fails until it does), and a stored snapshot of another format
 * is never read.
 */
import { deserialize, serialize } from 'node:v8';
import type { RunEvent } from './events.js';
import type { RunStore } from './ports.js';
import { applyEvent, replay, type RunState } from './state.js';

/** The shape of the state a snapshot holds; a snapshot of another format is ignored. */
export const SNAPSHOT_FORMAT = 3;

/** A run's state as stored: `replay(events with seq <= seq)`, encoded. */
export interface StoredSnapshot {
  seq: number;
  format: number;
  body: Uint8Array;
}

/** The snapshot of a state (without its dependency graph, which the plan gives back: attachGraph). */
export function snapshotOf(state: RunState): StoredSnapshot {
  return { seq: state.seq, format: SNAPSHOT_FORMAT, body: serialize({ ...state, graph: undefined }) };
}

/** The state a snapshot holds, or undefined when it is of another format, another run, or unreadable. */
export function stateOfSnapshot(runId: string, snap: StoredSnapshot | undefined): RunState | undefined {
  if (snap === undefined || snap.format !== SNAPSHOT_FORMAT) return undefined;
  try {
    const state = deserialize(snap.body) as RunState;
    if (state === null || typeof state !== 'object' || state.runId !== runId || state.seq !== snap.seq || !(state.phases instanceof Map)) return undefined;
    return state;
  } catch {
    return undefined;
  }
}

/** Events per task between snapshots: a task's plain life is three events (ready, claimed, completed). */
export const SNAPSHOT_EVENTS_PER_TASK = 3;

/**
 * Whether a worker holding the state should store a new snapshot: once the events since the last one
 * outnumber both `every` and three per task, so that writing snapshots (each the size of the run's
 * state) costs O(1) per event however large the run, a load never replays more than about that many
 * events, and a run whose tasks each run once is snapshotted about once in its life, not once per
 * worker that shares it at every third of the way.
 */
export function snapshotDue(state: RunState, lastSeq: number, every: number): boolean {
  const since = state.seq - lastSeq;
  return since >= every && since >= SNAPSHOT_EVENTS_PER_TASK * (state.phases.size + state.compacted);
}

/**
 * A stored run's state: its latest snapshot plus the events after it (`events` then holds only those,
 * `snapshotSeq` says from where), or its whole log replayed (a store without snapshots, or a snapshot
 * that cannot be read). Not attached to a plan (attachGraph).
 */
export async function loadState(store: RunStore, runId: string): Promise<{ state: RunState; events: RunEvent[]; snapshotSeq: number }> {
  if (store.readState) {
    const { snapshot, events } = await store.readState(runId, SNAPSHOT_FORMAT);
    const base = stateOfSnapshot(runId, snapshot);
    if (base) {
      for (const e of events) applyEvent(base, e);
      return { state: base, events, snapshotSeq: snapshot!.seq };
    }
    if (snapshot === undefined) return { state: replay(runId, events), events, snapshotSeq: 0 };
  }
  const events = await store.events(runId);
  return { state: replay(runId, events), events, snapshotSeq: 0 };
}

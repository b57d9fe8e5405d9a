/**
 * The in-memory store: a real store with the same contract as the durable ones (appends checked and
 * ordered, commits all-or-nothing, expectations enforced), kept for the process's life. For unit
 * tests and `--store memory`.
 */
import { asyncDispose } from '../core/dispose.js';
import { BatonError } from '../core/errors.js';
import type { RunEvent } from '../engine/events.js';
import type { StoredSnapshot } from '../engine/snapshot.js';
import { HELD, type ActivityCounts, type BatchCommit, type BatchResult, type Commit, type FindWorkQuery, type NewRun, type RunFilter, type RunRecord, type RunStore, type TaskRow, type TxDecision, type TxResult, type WorkHint, type WorkflowRecord } from '../engine/ports.js';
import { ChangedRuns } from './changed.js';
import { skipKeys, Waiters } from './rows.js';

interface Entry {
  run: RunRecord;
  events: RunEvent[];
  tasks: Map<string, TaskRow>;
  /** The latest snapshot of the run's state (a cache of replay, engine/snapshot.ts). */
  snapshot?: StoredSnapshot;
}

export class MemoryStore implements RunStore {
  readonly kind = 'memory';
  readonly location = 'memory';
  private readonly entries = new Map<string, Entry>();
  private readonly workflows = new Map<string, WorkflowRecord>();
  private readonly waiters = new Waiters();
  /** Which runs changed, per consumer of takeChanged: every commit goes through this object. */
  private readonly changed = new ChangedRuns();
  readonly changesComplete = true;

  createRun(init: NewRun): Promise<void> {
    const err = this.createIn(init);
    if (err) return Promise.reject(err);
    this.notify();
    return Promise.resolve();
  }

  createRuns(inits: readonly NewRun[]): Promise<(Error | undefined)[]> {
    const out = inits.map((init) => this.createIn(init));
    if (out.some((e) => e === undefined)) this.notify();
    return Promise.resolve(out);
  }

  private createIn(init: NewRun): Error | undefined {
    const id = init.run.runId;
    if (this.entries.has(id)) return new BatonError('run-exists', `a run with id ${id} already exists`);
    const entry: Entry = { run: { ...init.run, seq: 0 }, events: [], tasks: new Map() };
    try {
      checkSeq(entry, init.commit);
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err));
    }
    if (!this.workflows.has(init.workflow.hash)) this.workflows.set(init.workflow.hash, { ...init.workflow });
    apply(entry, init.commit);
    this.entries.set(id, entry);
    this.changed.note(id, entry.run.seq);
    return undefined;
  }

  run(runId: string): Promise<RunRecord | undefined> {
    const e = this.entries.get(runId);
    return Promise.resolve(e ? { ...e.run } : undefined);
  }

  runs(filter: RunFilter = {}): Promise<RunRecord[]> {
    const { status, workflow, before } = filter;
    let all = [...this.entries.values()].map((e) => ({ ...e.run }));
    if (status) all = all.filter((r) => status.includes(r.status));
    if (workflow !== undefined) all = all.filter((r) => r.workflowName === workflow);
    if (before) all = all.filter((r) => r.createdAt < before.createdAt || (r.createdAt === before.createdAt && r.runId < before.runId));
    all.sort((a, b) => b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : -1));
    return Promise.resolve(all.slice(0, filter.limit ?? 100));
  }

  activity(): Promise<ActivityCounts> {
    const out: ActivityCounts = { runs: { running: 0, waiting: 0 }, ready: {}, running: {}, gated: [] };
    for (const e of this.entries.values()) {
      const status = e.run.status;
      if (status !== 'running' && status !== 'waiting') continue;
      out.runs[status]++;
      for (const t of e.tasks.values()) {
        if (t.status === 'ready' && t.notBefore !== HELD) out.ready[t.agent] = (out.ready[t.agent] ?? 0) + 1;
        else if (t.status === 'running') out.running[t.agent] = (out.running[t.agent] ?? 0) + 1;
      }
      if (e.events.some((ev) => ev.type === 'gate.opened')) out.gated.push(e.run.runId);
    }
    return Promise.resolve(out);
  }

  workflow(hash: string): Promise<WorkflowRecord | undefined> {
    const w = this.workflows.get(hash);
    return Promise.resolve(w ? { ...w } : undefined);
  }

  events(runId: string, afterSeq = 0, limit?: number): Promise<RunEvent[]> {
    const e = this.entries.get(runId);
    if (!e) return Promise.resolve([]);
    // seq n is at index n - 1 (gap-free); a seq before the first is every event (slice(-n) would be the last n)
    const from = afterSeq > 0 ? afterSeq : 0;
    return Promise.resolve(e.events.slice(from, limit !== undefined ? from + limit : undefined));
  }

  tasks(runId: string): Promise<TaskRow[]> {
    const e = this.entries.get(runId);
    return Promise.resolve(e ? [...e.tasks.values()].map((t) => ({ ...t })) : []);
  }

  readState(runId: string, format: number): Promise<{ snapshot: StoredSnapshot | undefined; events: RunEvent[] }> {
    const e = this.entries.get(runId);
    if (!e) return Promise.resolve({ snapshot: undefined, events: [] });
    const snap = e.snapshot?.format === format ? e.snapshot : undefined;
    return Promise.resolve({ snapshot: snap && { ...snap, body: snap.body.slice() }, events: e.events.slice(snap?.seq ?? 0) });
  }

  saveSnapshot(runId: string, snapshot: StoredSnapshot): Promise<void> {
    const e = this.entries.get(runId);
    if (e && (e.snapshot === undefined || e.snapshot.seq < snapshot.seq)) e.snapshot = { ...snapshot, body: snapshot.body.slice() };
    return Promise.resolve();
  }

  transact<T>(runId: string, knownSeq: number, decide: (delta: RunEvent[]) => TxDecision<T>): Promise<TxResult<T>> {
    const e = this.entries.get(runId);
    if (!e) return Promise.reject(new BatonError('unknown-run', `no run ${runId}`));
    let result: TxResult<T>;
    try {
      const d = decide(knownSeq < e.run.seq ? e.events.slice(knownSeq) : []);
      if (d.commit) {
        for (const x of d.commit.expect ?? []) {
          const t = e.tasks.get(x.phase);
          const held = t !== undefined && t.status === 'running' && t.attempt === x.attempt && t.leaseOwner === x.owner;
          const ok = held && (x.expiredBefore === undefined ? true : (t.leaseExpiresAt ?? 0) < x.expiredBefore);
          if (!ok) return Promise.resolve({ ok: false, reason: 'expectation', failed: x });
        }
        checkSeq(e, d.commit);
        apply(e, d.commit);
        if (d.commit.events.length > 0) {
          this.changed.note(runId, e.run.seq);
          this.notify();
        }
      }
      result = { ok: true, value: d.value };
    } catch (err) {
      return Promise.reject(err);
    }
    return Promise.resolve(result);
  }

  commitMany(items: readonly BatchCommit[]): Promise<{ results: BatchResult[] }> {
    // made at its size (a chain commits one run at a time)
    const results = new Array<BatchResult>(items.length);
    let wrote = false;
    try {
      for (let i = 0; i < items.length; i++) {
        const it = items[i]!;
        const e = this.entries.get(it.runId);
        if (!e) throw new BatonError('unknown-run', `no run ${it.runId}`);
        if (it.commit.expect?.length) throw new BatonError('internal', 'commitMany takes no lease expectations');
        if (e.run.seq !== it.knownSeq) {
          results[i] = 'conflict';
          continue;
        }
        checkSeq(e, it.commit);
        apply(e, it.commit);
        results[i] = 'ok';
        if (it.commit.events.length > 0) {
          this.changed.note(it.runId, e.run.seq);
          wrote = true;
        }
      }
    } catch (err) {
      return Promise.reject(err);
    }
    if (wrote) this.notify();
    return Promise.resolve({ results });
  }

  findWork(q: FindWorkQuery): Promise<WorkHint[]> {
    const out: WorkHint[] = [];
    const agents = q.agents ? new Set(q.agents) : null;
    const keys = skipKeys(q);
    const skip = keys ? new Set(keys) : null;
    const live = [...this.entries.values()].filter((e) => e.run.status === 'running' || e.run.status === 'waiting').sort((a, b) => a.run.createdAt - b.run.createdAt);
    for (const e of live) {
      const seq = e.run.seq;
      if (e.run.wakeAt !== null && e.run.wakeAt <= q.now) out.push({ runId: e.run.runId, reason: 'timer', seq });
      let ready = false;
      for (const t of e.tasks.values()) {
        if (t.status === 'ready' && !ready && (t.notBefore === null || t.notBefore <= q.now) && (!agents || agents.has(t.agent)) && !skipped(skip, e.run.runId, t.agent)) {
          ready = true;
          out.push({ runId: e.run.runId, reason: 'ready', seq });
        }
        if (t.status === 'running' && t.leaseOwner !== null) {
          const expired = t.leaseExpiresAt !== null && t.leaseExpiresAt < q.now;
          if (expired || (q.ownersLike !== undefined && t.leaseOwner.startsWith(q.ownersLike)))
            out.push({ runId: e.run.runId, reason: 'lease', phase: t.phase, attempt: t.attempt, owner: t.leaseOwner, ...(expired ? {} : { live: true }), seq });
        }
      }
    }
    return Promise.resolve(fairLimit(out, q.limit));
  }

  renewLeases(owner: string, until: number, held: readonly { runId: string; phase: string; attempt: number }[]): Promise<{ runId: string; phase: string; attempt: number }[]> {
    const lost: { runId: string; phase: string; attempt: number }[] = [];
    for (const h of held) {
      const t = this.entries.get(h.runId)?.tasks.get(h.phase);
      if (t && t.status === 'running' && t.attempt === h.attempt && t.leaseOwner === owner) t.leaseExpiresAt = until;
      else lost.push(h);
    }
    return Promise.resolve(lost);
  }

  waitForChange(maxMs: number, signal?: AbortSignal): Promise<void> {
    // one process: nothing changes behind our back, but transactions of other engines in this process wake waiters
    return this.waiters.wait(maxMs, signal);
  }

  /** The runs committed since `consumer`'s last take (each consumer its own). */
  takeChanged(consumer: object = this.changed): ReadonlyMap<string, number> | 'unknown' {
    return this.changed.take(consumer);
  }

  forgetChanged(consumer: object): void {
    this.changed.forget(consumer);
  }

  close(): Promise<void> {
    this.waiters.wakeAll();
    return Promise.resolve();
  }

  [asyncDispose](): Promise<void> {
    return this.close();
  }

  private notify(): void {
    if (this.waiters.size > 0) this.waiters.wakeAll();
  }
}

function skipped(skip: Set<string> | null, runId: string, agent: string): boolean {
  return skip !== null && (skip.has(`${runId}\u001f${agent}`) || skip.has(`${runId}\u001f`));
}

function checkSeq(e: Entry, c: Commit): void {
  let last = e.run.seq;
  for (const ev of c.events) {
    if (ev.seq !== last + 1) throw new BatonError('store', `run ${e.run.runId}: event seq ${ev.seq} does not follow ${last}`);
    last = ev.seq;
  }
}

function apply(e: Entry, c: Commit): void {
  for (const ev of c.events) e.events.push(ev);
  if (c.events.length > 0) e.run.seq = c.events[c.events.length - 1]!.seq;
  // the update's fields (RunUpdate) one by one: Object.assign's generic copy cost more than the rows below
  const r = e.run;
  const u = c.run;
  r.status = u.status;
  r.updatedAt = u.updatedAt;
  r.endedAt = u.endedAt;
  r.costUsd = u.costUsd;
  r.wakeAt = u.wakeAt;
  // the rows as given: a commit's rows are made for it (projection.ts) and never touched again by the engine
  for (const t of c.tasks) e.tasks.set(t.phase, t);
}

/**
 * findWork's limit, as the SQL stores apply it: the oldest hints first (they come in run order), but each
 * kind (timers, ready runs, leases) is sure of a quarter of the limit, so that many older runs' timers
 * coming due at once do not hide a newer run's ready work (nor the other way round).
 */
function fairLimit(hints: WorkHint[], limit: number): WorkHint[] {
  if (hints.length <= limit) return hints;
  const share = Math.floor(limit / 4);
  const seen = new Map<string, number>();
  const first: WorkHint[] = [];
  const rest: WorkHint[] = [];
  for (const h of hints) {
    const rank = (seen.get(h.reason) ?? 0) + 1;
    seen.set(h.reason, rank);
    (rank <= share ? first : rest).push(h);
  }
  return first.concat(rest).slice(0, limit);
}

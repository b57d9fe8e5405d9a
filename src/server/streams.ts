/**
 * Live streams as server-sent events. `GET /runs/{id}/events`: `id` is the event's seq, so a client
 * that reconnects with `Last-Event-ID` gets exactly the events after the last it saw (the log is
 * gap-free and append-only). `GET /events`: the run row of every run at each change, for dashboards.
 * Both wait on the server's one ChangeHub; a stream reads the store only after a change that may
 * concern it (or once a second, the hub's safety net, when the store cannot say which runs changed),
 * never in a loop of its own.
 */
import { setMaxListeners } from 'node:events';
import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { systemClock } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import type { RunEvent, RunStatus } from '../engine/events.js';
import type { RunRecord, RunStore } from '../engine/ports.js';
import type { ChangeHub } from '../api/changes.js';
import { HttpError } from './http.js';
import { runSummary } from './runs.js';

/** A comment line this often keeps proxies from closing an idle stream. */
const KEEPALIVE_MS = 15_000;
const TERMINAL = new Set<RunEvent['type']>(['run.completed', 'run.failed', 'run.cancelled']);
const ENDED = new Set<RunStatus>(['completed', 'failed', 'cancelled']);
/** Runs the all-runs stream compares at each change (newest first). */
const DASHBOARD_RUNS = 500;
/** Runs under way (running, waiting) an all-runs stream reads besides the newest when the store cannot say which changed. */
const ACTIVE_RUNS = 1000;
/** Changed runs an all-runs stream reads one by one (more: the newest DASHBOARD_RUNS in one read, the rest by id). */
const BY_ID = 64;
/**
 * The all-runs stream reads the run rows at most this often (ms): each read compares the newest 500, and
 * on a busy server a read per commit made one dashboard halve the server's throughput (3,000 runs through
 * `POST /runs` took 10.5 s with one `GET /events` open, 4.5 s without). A row that moved several times
 * between reads is sent once, as it is then.
 */
const DASHBOARD_GAP_MS = 200;
/** Events a run stream reads from the store at once. */
const STREAM_CHUNK = 1000;

export interface StreamHost {
  store: RunStore;
  hub: ChangeHub;
  /** Aborts every open stream (server shutdown). */
  closing: AbortSignal;
}

/** Where a run stream starts: `Last-Event-ID` (a reconnect) wins over `?after=`. */
export function resumeSeq(c: Context, after: number | undefined): number {
  const last = c.req.header('last-event-id');
  if (last !== undefined && last.trim() !== '') {
    if (!/^\d{1,15}$/.test(last.trim())) throw new HttpError(400, 'invalid-request', `Last-Event-ID must be an event seq (an integer), got \`${last.slice(0, 40)}\``);
    return Number(last.trim());
  }
  return after ?? 0;
}

export async function runEventStream(c: Context, host: StreamHost, runId: string, after: number, types: ReadonlySet<string> | undefined): Promise<Response> {
  const first = await host.store.run(runId);
  if (!first) throw new BatonError('unknown-run', `no run ${runId} in ${host.store.location}`);
  return streamSSE(c, guarded(async (stream) => {
    const stop = linked(stream, host.closing);
    const unsubscribe = host.hub.subscribe();
    try {
      await followRun(stream, host, runId, after, types, stop.signal);
    } finally {
      unsubscribe();
      stop.abort();
    }
  }));
}

async function followRun(stream: SSEStreamingApi, host: StreamHost, runId: string, after: number, types: ReadonlySet<string> | undefined, signal: AbortSignal): Promise<void> {
  let seq = after;
  let wrote = performance.now();
  while (!signal.aborted) {
    const seen = host.hub.version(runId);
    // a chunk at a time: a stream that starts at the beginning of a long log (a dashboard opening a
    // 20,000-item fan-out) holds a chunk in memory, not the whole log, and writes it as the client reads
    const batch = await host.store.events(runId, seq, STREAM_CHUNK);
    for (const e of batch) {
      seq = e.seq;
      if (!types || types.has(e.type)) {
        await stream.writeSSE({ id: String(e.seq), event: e.type, data: JSON.stringify(e) });
        wrote = performance.now();
      }
      if (TERMINAL.has(e.type)) return end(stream, runId, await host.store.run(runId));
    }
    // The read began after `seen` was noted, so it holds every event committed before then; a commit
    // since has raised the version past `seen`, and the wait below returns at once for it. So a
    // stream that got events waits for the next change instead of reading again to find none (on a
    // busy run that second read, and the run read after it, were two of every three queries).
    // a full chunk: more may be there already, read on at once
    if (batch.length >= STREAM_CHUNK) continue;
    if (batch.length > 0 && host.hub.version(runId) === seen) {
      await host.hub.next(runId, seen, KEEPALIVE_MS, signal);
      continue;
    }
    if (batch.length === 0) {
      const record = await host.store.run(runId);
      // the terminal event lies at or before the resume point: nothing more will come
      if (!record || (ENDED.has(record.status) && record.seq <= seq)) return end(stream, runId, record);
      if (performance.now() - wrote >= KEEPALIVE_MS) {
        await stream.write(': keep-alive\n\n');
        wrote = performance.now();
      }
      await host.hub.next(runId, seen, KEEPALIVE_MS, signal);
    }
  }
}

/** The all-runs stream: every run row (newest DASHBOARD_RUNS) on connect, then each run whose seq moved. */
export function allRunsStream(c: Context, host: StreamHost, status: ReadonlySet<RunStatus> | undefined): Response {
  return streamSSE(c, guarded(async (stream) => {
    const stop = linked(stream, host.closing);
    const unsubscribe = host.hub.subscribe();
    try {
      await followAll(stream, host, status, stop.signal);
    } finally {
      unsubscribe();
      stop.abort();
    }
  }));
}

async function followAll(stream: SSEStreamingApi, host: StreamHost, status: ReadonlySet<RunStatus> | undefined, signal: AbortSignal): Promise<void> {
  const known = new Map<string, number>();
  /** Runs sent while they matched the filter. */
  const sent = new Set<string>();
  /** Runs last read under way (running, waiting): a read that cannot name the changed runs reads these again by id. */
  const underWay = new Set<string>();
  let wrote = performance.now();
  let read = -Infinity;
  /** The hub's version noted before the last read (undefined: nothing read yet). */
  let noted: number | undefined;
  while (!signal.aborted) {
    // changes that come during the gap are read together after it (the version noted after the gap covers them)
    const gap = read + DASHBOARD_GAP_MS - performance.now();
    if (gap > 0) await systemClock.sleep(gap, signal).catch(() => undefined);
    if (signal.aborted) return;
    const changed = noted === undefined ? 'all' : host.hub.changedSince(noted);
    const seen = host.hub.version();
    read = performance.now();
    const rows = await changedRuns(host.store, changed, underWay);
    noted = seen;
    for (const r of rows) {
      if (ENDED.has(r.status)) underWay.delete(r.runId);
      else underWay.add(r.runId);
      if (known.get(r.runId) === r.seq) continue;
      known.set(r.runId, r.seq);
      const matches = !status || status.has(r.status);
      // a run that leaves the filter is sent once more, so a dashboard sees it go
      if (!matches && !sent.has(r.runId)) continue;
      if (matches) sent.add(r.runId);
      else sent.delete(r.runId);
      await stream.writeSSE({ event: 'run', data: JSON.stringify(runSummary(r)) });
      wrote = performance.now();
    }
    if (performance.now() - wrote >= KEEPALIVE_MS) {
      await stream.write(': keep-alive\n\n');
      wrote = performance.now();
    }
    await host.hub.next(undefined, seen, KEEPALIVE_MS, signal);
  }
}

/**
 * The rows an all-runs stream reads after a wake, oldest first. With the runs that changed named (the
 * hub's targeted store), those runs, however old: it read the newest 500 only, so a run older than them
 * that moved (a gate approved days later, with newer runs started since) was never sent. When the store
 * could not say which ('all': a stream's first read, an untargeted store, an overflow), the newest 500
 * and every run still under way (up to 1,000), and by id the runs the stream last read under way that
 * are neither (`underWay`): an old run that ended since is no longer under way, and without this its
 * last move (cancelled, failed, completed) was never sent.
 * Many named runs at once (a burst of new ones) are read as the newest 500, plus by id those not among them.
 */
async function changedRuns(store: RunStore, changed: ReadonlySet<string> | 'all', underWay: Set<string>): Promise<RunRecord[]> {
  if (changed !== 'all' && changed.size <= BY_ID) return sortedOldestFirst(await runsById(store, [...changed]));
  const newest = await store.runs({ limit: DASHBOARD_RUNS });
  const got = new Set(newest.map((r) => r.runId));
  if (changed === 'all') {
    // and every run still under way, however old: only those can move, so a move the store could not
    // name (before PostgreSQL's LISTEN was up, across a reconnect) is read all the same
    const active = (await store.runs({ status: ['running', 'waiting'], limit: ACTIVE_RUNS })).filter((r) => !got.has(r.runId));
    for (const r of active) got.add(r.runId);
    // and the runs this stream last read under way that are neither: an old run that ended since (a
    // cancel, a gate denied) is no longer under way, and its last move would never be sent
    const left = [...underWay].filter((id) => !got.has(id));
    const ended = await runsById(store, left);
    const found = new Set(ended.map((r) => r.runId));
    for (const id of left) if (!found.has(id)) underWay.delete(id);
    return sortedOldestFirst([...newest, ...active, ...ended]);
  }
  const older = await runsById(store, [...changed].filter((id) => !got.has(id)));
  return sortedOldestFirst([...newest, ...older]);
}

async function runsById(store: RunStore, ids: readonly string[]): Promise<RunRecord[]> {
  const out: RunRecord[] = [];
  for (let i = 0; i < ids.length; i += BY_ID) {
    for (const r of await Promise.all(ids.slice(i, i + BY_ID).map((id) => store.run(id)))) if (r) out.push(r);
  }
  return out;
}

function sortedOldestFirst(rows: RunRecord[]): RunRecord[] {
  return rows.sort((a, b) => a.createdAt - b.createdAt || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
}

async function end(stream: SSEStreamingApi, runId: string, record: RunRecord | undefined): Promise<void> {
  await stream.writeSSE({ event: 'end', data: JSON.stringify({ run_id: runId, status: record?.status ?? null, seq: record?.seq ?? null }) });
}

/** Aborts when the client goes away or the server closes; the caller aborts it when the stream ends (its listener on `closing` goes with it). */
function linked(stream: SSEStreamingApi, closing: AbortSignal): AbortController {
  const ctl = new AbortController();
  // one listener per open stream on the server's closing signal: as many as there are clients
  setMaxListeners(0, closing);
  stream.onAbort(() => ctl.abort());
  if (closing.aborted) ctl.abort();
  else closing.addEventListener('abort', () => ctl.abort(), { once: true, signal: ctl.signal });
  return ctl;
}

/**
 * A store error in the middle of a stream: one `error` event with a JSON error, then the stream ends
 * (the client resumes with Last-Event-ID). Caught here rather than by Hono's `streamSSE` onError, after
 * which Hono writes a second `error` event of its own whose data is the bare message, not JSON.
 */
function guarded(follow: (stream: SSEStreamingApi) => Promise<void>): (stream: SSEStreamingApi) => Promise<void> {
  return async (stream) => {
    try {
      await follow(stream);
    } catch (e) {
      const code = e instanceof BatonError ? e.code : 'internal';
      await stream.writeSSE({ event: 'error', data: JSON.stringify({ error: { code, message: e instanceof BatonError ? e.message : 'the stream failed; reconnect with Last-Event-ID' } }) }).catch(() => undefined);
    }
  };
}

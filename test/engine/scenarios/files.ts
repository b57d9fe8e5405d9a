/**
 * AIP-16 output files and the engine's commits: a file lands in the workspace only after the
 * completion that records it (`task.file`, synced) is committed, and never for an outcome that was
 * not accepted (a cancelled fan-out item); a crash at any point leaves no file unrecorded, the next
 * worker syncs what a dead one recorded and did not sync; scratch roots of attempts a dead process
 * left are removed by the takeover or when the run ends.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ManualClock } from '../../../src/core/clock.js';
import type { AgentContext, AgentHandler } from '../../../src/engine/agent.js';
import { AgentError } from '../../../src/engine/agent.js';
import type { RunEvent } from '../../../src/engine/events.js';
import type { FileStager, ScratchRoot } from '../../../src/engine/files.js';
import { localFileStager } from '../../../src/engine/files-local.js';
import type { RunStore } from '../../../src/engine/ports.js';
import { FAULT_POINTS, type FaultPoint } from '../../../src/engine/worker.js';
import { expectReplays, header, settle, until, wf, withClock } from '../helpers.js';
import { type StoreFactory, deferredOf, engineOn, overriding } from './common.js';

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/** A workspace and a folder of scratch roots of the test's own, removed when `f` is done. */
async function inDirs<T>(f: (dirs: { ws: string; roots: string }) => Promise<T>): Promise<T> {
  const base = mkdtempSync(join(tmpdir(), 'baton-files-scn-'));
  const ws = join(base, 'ws');
  const roots = join(base, 'roots');
  mkdirSync(ws);
  mkdirSync(roots);
  try {
    return await f({ ws, roots });
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/** The scratch roots still in `roots`. */
export const rootsLeft = (roots: string): string[] => readdirSync(roots).filter((n) => n.startsWith('baton-files-'));

/** Every file under `dir`, relative to `ws`. */
function filesUnder(ws: string, dir: string): string[] {
  const abs = join(ws, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(ws.length + 1));
}

/**
 * What the workspace holds agrees with the log: every file there has a synced `task.file` event,
 * holding the bytes of the last one for its path; every synced event belongs to a completed attempt,
 * and its file is there (unless a later one wrote the path); no `.baton-` temporary is left.
 */
export function expectFilesMatchLog(ws: string, dir: string, events: readonly RunEvent[]): void {
  const synced = events.filter((e): e is Extract<RunEvent, { type: 'task.file' }> => e.type === 'task.file' && e.direction === 'synced');
  const completed = new Set(events.flatMap((e) => (e.type === 'task.completed' ? [`${e.phase}#${e.attempt}`] : [])));
  for (const e of synced) expect(completed.has(`${e.phase}#${e.attempt}`), `${e.path} synced by ${e.phase}#${e.attempt}, which did not complete`).toBe(true);
  const last = new Map<string, string>();
  for (const e of synced) last.set(e.path, e.sha256);
  const there = filesUnder(ws, dir);
  expect(there.filter((p) => p.includes('.baton-')), 'temporary files left').toEqual([]);
  for (const p of there) {
    expect(last.has(p), `${p} is in the workspace without a task.file event`).toBe(true);
    expect(sha(readFileSync(join(ws, p))), p).toBe(last.get(p));
  }
  for (const p of last.keys()) expect(there, `${p} was recorded as synced and is not there`).toContain(p);
}

/** A stager whose roots count the checks and syncs they finished. */
function counting(st: FileStager, count: () => void): FileStager {
  const wrap = (r: ScratchRoot): ScratchRoot => ({
    path: r.path,
    stage: (k, p) => r.stage(k, p),
    check: (k, p) => r.check(k, p).finally(count),
    sync: (k, p, x) => r.sync(k, p, x).finally(count),
    remove: () => r.remove(),
  });
  return { ...st, open: async (scope) => wrap(await st.open(scope)) };
}

// ---- outcomes that are not accepted ---------------------------------------------------------------

const FAN = wf(`${header()}workflow:
  f:
    assign: w
    for_each: $trigger.items
    inputs: {v: $item}
    outputsFiles: {o: {path: "out/<runId>/<index>.txt"}}
    outputs: {v: integer}`);

/**
 * A fan-out whose item 0 fails (no tolerated failures) while the others have written their output
 * and returned: the commit that fails the phase is held until they have, so their outcomes come after
 * it, stale, their items cancelled. None of their files reaches the workspace, none is recorded, and
 * no root is left.
 */
export async function filesOfCancelledItemsStayOut(makeStore: StoreFactory): Promise<void> {
  return inDirs(async ({ ws, roots }) => {
    const inner = await makeStore();
    // armed by item 0 as it fails: the next commit (the one that carries its failure) waits for `release`
    let hold: Promise<void> | undefined;
    const holding = deferredOf<void>();
    const gate = <A extends unknown[], R>(f: (...a: A) => Promise<R>) => async (...a: A): Promise<R> => {
      if (hold) {
        holding.resolve();
        await hold;
      }
      return f(...a);
    };
    const store: RunStore = overriding(inner, { transact: gate(inner.transact.bind(inner)), ...(inner.commitMany ? { commitMany: gate(inner.commitMany.bind(inner)) } : {}) });
    const others = 5;
    let done = 0;
    let started = 1;
    const release = deferredOf<void>();
    const agents: Record<string, AgentHandler> = {
      w: async (ctx: AgentContext) => {
        const v = ctx.input['v'] as number;
        if (v === 0) {
          await until(() => started === others + 1, 'every item started');
          hold = release.promise;
          throw new AgentError('Broken', 'item 0 fails', {}, false);
        }
        started++;
        // the others return once the commit of item 0's failure is on its way (held until their files were looked at)
        await holding.promise;
        writeFileSync(join(ctx.input['_workflowFsRoot'] as string, 'o'), `late ${v}`);
        return { v };
      },
    };
    const clock = new ManualClock(0);
    const e = engineOn(store, clock, agents, { concurrency: 8, workspace: ws, fileStager: (w) => counting(localFileStager({ workspace: w, tmpDir: roots }), () => void done++) });
    const run = e.run(FAN, { runId: 'cancelled-items', trigger: { items: [0, 1, 2, 3, 4, 5] } });
    void (async () => {
      await until(() => done >= others, 'the other items returned and their files were looked at');
      await settle(5);
      release.resolve();
    })();
    const r = await withClock(clock, run);
    await e.close();
    expect(r.status).toBe('failed');
    expect(r.phases['f[0]']).toMatchObject({ status: 'failed' });
    for (let i = 1; i <= others; i++) expect(r.phases[`f[${i}]`]?.status, `f[${i}]`).toBe('cancelled');
    // the workspace is as the log says: untouched
    expect(filesUnder(ws, 'out')).toEqual([]);
    expect(r.events.filter((x) => x.type === 'task.file')).toEqual([]);
    expectFilesMatchLog(ws, 'out', await inner.events(r.runId));
    expect(rootsLeft(roots)).toEqual([]);
    await expectReplays(inner, r);
  });
}

// ---- crashes ----------------------------------------------------------------------------------------

/** outline writes a table of contents; each item reads it and writes its own file; join reads item 0's and writes one. */
const PAPER = wf(`${header()}workflow:
  outline:
    assign: o
    inputs: {n: $trigger.n}
    outputs: {items: "integer[]"}
    outputsFiles: {toc: {path: "out/<runId>/toc.txt"}}
  draft:
    assign: d
    depends_on: [outline]
    for_each: outline.items
    inputs: {v: $item}
    inputsFiles: {toc: {path: "out/<runId>/toc.txt"}}
    outputsFiles: {o: {path: "out/<runId>/<index>.txt"}}
    outputs: {v: integer}
  join:
    assign: j
    depends_on: [draft]
    inputs: {vs: draft.v}
    inputsFiles: {first: {path: "out/<runId>/0.txt"}}
    outputsFiles: {all: {path: "out/<runId>/all.txt"}}
    outputs: {n: integer}`);

/** Agents whose files depend on their inputs only (an attempt run again writes the same bytes). */
function paperAgents(): Record<string, AgentHandler> {
  const root = (ctx: AgentContext): string => ctx.input['_workflowFsRoot'] as string;
  return {
    o: (ctx) => {
      const n = ctx.input['n'] as number;
      writeFileSync(join(root(ctx), 'toc'), `toc of ${n}`);
      return { items: Array.from({ length: n }, (_, i) => i) };
    },
    d: (ctx) => {
      const toc = readFileSync(join(root(ctx), 'toc'), 'utf8');
      writeFileSync(join(root(ctx), 'o'), `${toc} / item ${ctx.input['v'] as number}`);
      return { v: ctx.input['v'] as number };
    },
    j: (ctx) => {
      const first = readFileSync(join(root(ctx), 'first'), 'utf8');
      writeFileSync(join(root(ctx), 'all'), `${first} + ${(ctx.input['vs'] as number[]).length}`);
      return { n: (ctx.input['vs'] as number[]).length };
    },
  };
}

/**
 * Engine A crashes at `at` (its `hit`-th time); engine B takes the run over on the same store and
 * workspace. Whatever A had done, the end agrees with the log (expectFilesMatchLog), every phase
 * read the bytes its upstream recorded, and no root is left. Resolves to whether the fault fired.
 */
export async function filesCrashAndResume(makeStore: StoreFactory, at: FaultPoint, hit: number, afterCrash?: (ws: string, events: readonly RunEvent[]) => void): Promise<boolean> {
  return inDirs(async ({ ws, roots }) => {
    const store = await makeStore();
    const clock = new ManualClock(1_000_000);
    const stager = (w: string): FileStager => localFileStager({ workspace: w, tmpDir: roots });
    const runId = `files-${at}-${hit}`;
    const a = engineOn(store, clock, paperAgents(), { workerId: 'A', faults: { at, hit }, isOwnerDead: () => false, workspace: ws, fileStager: stager, concurrency: 2 });
    let fault: unknown;
    try {
      await withClock(clock, a.run(PAPER, { runId, trigger: { n: 3 } }));
    } catch (e) {
      fault = e;
    }
    await a.close();
    if (fault === undefined) {
      expect(rootsLeft(roots)).toEqual([]);
      return false;
    }
    expect(fault).toMatchObject({ code: 'fault-injected' });
    await settle();
    // what A left is consistent already: a file in the workspace is one the log records (a copy begun
    // beside its target, `.baton-` and the root's tag, is not the file: the next sync of that root replaces it)
    const mid = await store.events(runId);
    for (const p of filesUnder(ws, 'out').filter((x) => !x.includes('.baton-'))) expect(mid.some((e) => e.type === 'task.file' && e.direction === 'synced' && e.path === p), `${at} #${hit}: ${p} unrecorded after the crash`).toBe(true);
    afterCrash?.(ws, mid);

    await clock.advance(1000);
    const b = engineOn(store, clock, paperAgents(), { workerId: 'B', isOwnerDead: (o) => o === 'A', workspace: ws, fileStager: stager, concurrency: 2 });
    const r = await withClock(clock, b.resume(runId));
    await b.close();
    expect(r.status, `${at} #${hit}`).toBe('completed');
    const events = await store.events(runId);
    expectFilesMatchLog(ws, 'out', events);
    expect(readFileSync(join(ws, 'out', runId, 'all.txt'), 'utf8')).toBe('toc of 3 / item 0 + 3');
    // each staged read found the bytes its upstream's completion recorded
    const last = new Map<string, string>();
    for (const e of events) {
      if (e.type !== 'task.file') continue;
      if (e.direction === 'synced') last.set(e.path, e.sha256);
      else expect(e.sha256, `${e.phase} read ${e.path}`).toBe(last.get(e.path));
    }
    expect(rootsLeft(roots), `${at} #${hit}`).toEqual([]);
    return true;
  });
}

/** The crash at every fault point and every hit until one does not fire, the files' own point included. */
export async function filesCrashEverywhere(makeStore: StoreFactory): Promise<void> {
  let fired = 0;
  for (const at of [...FAULT_POINTS.filter((p) => p !== 'run.created'), 'files.before-sync'] as FaultPoint[]) {
    for (let hit = 1; hit < 40; hit++) {
      if (!(await filesCrashAndResume(makeStore, at, hit))) break;
      fired++;
    }
  }
  expect(fired).toBeGreaterThanOrEqual(20);
}

/**
 * A crash after the completion of the last item was committed and before its file was synced: the
 * log records a file the workspace does not hold; the worker that takes the run over syncs it from
 * the root the dead one left, before any phase reads it.
 */
export async function filesSyncedByTheNextWorker(makeStore: StoreFactory): Promise<void> {
  // the 4th sync: outline's, then three items' (the last item's completion readies join)
  let missing: string[] = [];
  const fired = await filesCrashAndResume(makeStore, 'files.before-sync', 4, (ws, events) => {
    missing = events.flatMap((e) => (e.type === 'task.file' && e.direction === 'synced' && !existsSync(join(ws, e.path)) ? [e.path] : []));
  });
  expect(fired).toBe(true);
  // after the crash the log recorded one file the workspace did not hold; the next worker synced it (above)
  expect(missing).toHaveLength(1);
}

// ---- roots a dead process left ---------------------------------------------------------------------

/**
 * Engine A runs PAPER's outline and items 0-2 (three slots) and dies, as after `kill -9`: items 0 and 1
 * hang in their agents, item 2 returns and A crashes before its outcome is noted. Their roots stay
 * (item 2's too: its files wait for an outcome that never comes), nothing of A left to remove them.
 * Item 3 and later, if any, are left ready.
 */
async function deadWorker(store: RunStore, clock: ManualClock, ws: string, stager: (w: string) => FileStager, runId: string, n: number): Promise<void> {
  let hung = 0;
  const agents: Record<string, AgentHandler> = {
    ...paperAgents(),
    d: async (ctx) => {
      if ((ctx.input['v'] as number) === 2) {
        await until(() => hung === 2, 'items 0 and 1 running');
        return paperAgents()['d']!(ctx);
      }
      hung++;
      return new Promise<never>(() => undefined);
    },
  };
  // the outline's outcome, then item 2's: A dies there
  const a = engineOn(store, clock, agents, { workerId: 'A', isOwnerDead: () => false, workspace: ws, fileStager: stager, concurrency: 3, faults: { at: 'attempt.after-return', hit: 2 } });
  await expect(withClock(clock, a.run(PAPER, { runId, trigger: { n } }))).rejects.toMatchObject({ code: 'fault-injected' });
  await a.close();
}

/**
 * Engine A dies (its agents never return, as after `kill -9`) with attempts of a fan-out running:
 * their roots stay. Engine B takes the items over (their owner is dead) and removes the roots of
 * those earlier attempts before it makes its own; the run completes with no root left.
 */
export async function scratchRootsOfDeadAttemptsGo(makeStore: StoreFactory): Promise<void> {
  return inDirs(async ({ ws, roots }) => {
    const store = await makeStore();
    const clock = new ManualClock(1_000_000);
    const stager = (w: string): FileStager => localFileStager({ workspace: w, tmpDir: roots });
    await deadWorker(store, clock, ws, stager, 'dead-roots', 3);
    expect(rootsLeft(roots).length).toBeGreaterThanOrEqual(2);

    const b = engineOn(store, clock, paperAgents(), { workerId: 'B', isOwnerDead: (o) => o === 'A', workspace: ws, fileStager: stager, concurrency: 2 });
    const r = await withClock(clock, b.resume('dead-roots'));
    await b.close();
    expect(r.status).toBe('completed');
    expect(r.phases['draft[0]']!.attempts).toBe(2);
    expect(rootsLeft(roots)).toEqual([]);
    expectFilesMatchLog(ws, 'out', r.events);
  });
}

/**
 * Nobody takes A's items over (their lease is a day long and their owner is not known dead), and the
 * run ends on B: the item B runs fails and the phase with it. Its end removes the roots A left.
 */
export async function scratchRootsGoWhenTheRunEnds(makeStore: StoreFactory): Promise<void> {
  return inDirs(async ({ ws, roots }) => {
    const store = await makeStore();
    const clock = new ManualClock(1_000_000);
    const stager = (w: string): FileStager => localFileStager({ workspace: w, tmpDir: roots });
    await deadWorker(store, clock, ws, stager, 'end-roots', 4);
    expect(rootsLeft(roots).length).toBeGreaterThanOrEqual(2);
    const failing: AgentHandler = (ctx) => {
      throw new AgentError('Broken', `item ${ctx.item?.index ?? -1} fails`, {}, false);
    };
    const b = engineOn(store, clock, { ...paperAgents(), d: failing }, { workerId: 'B', isOwnerDead: () => false, workspace: ws, fileStager: stager, concurrency: 2 });
    const r = await withClock(clock, b.resume('end-roots'));
    await b.close();
    expect(r.status).toBe('failed');
    expect(r.phases['draft[3]']).toMatchObject({ status: 'failed', attempts: 1 });
    expect(r.phases['draft[0]']!.status).toBe('cancelled');
    expect(rootsLeft(roots)).toEqual([]);
  });
}

/**
 * The same, the run cancelled from elsewhere while nobody holds it: the worker that takes the ended
 * run up removes every root of it this host still has, and no other run's.
 */
export async function scratchRootsGoWhenAnEndedRunIsTakenUp(makeStore: StoreFactory): Promise<void> {
  return inDirs(async ({ ws, roots }) => {
    const store = await makeStore();
    const clock = new ManualClock(1_000_000);
    const stager = (w: string): FileStager => localFileStager({ workspace: w, tmpDir: roots });
    await deadWorker(store, clock, ws, stager, 'ended-roots', 3);
    const left = rootsLeft(roots).length;
    expect(left).toBeGreaterThanOrEqual(2);
    // another run's root in the same folder is not this run's to remove
    const other = await localFileStager({ workspace: ws, tmpDir: roots }).open({ runId: 'ended-roots-2', workflowId: 'T', phase: 'draft', attempt: 1, item: { index: 0, value: 0 } });

    // the run is cancelled (from another terminal, say); B, taking it up, finds it ended
    const cancel = engineOn(store, clock, paperAgents(), { workerId: 'C', isOwnerDead: () => false, workspace: ws, fileStager: stager });
    await cancel.cancel('ended-roots', 'enough');
    await cancel.close();
    expect(rootsLeft(roots)).toHaveLength(left + 1);
    const b = engineOn(store, clock, paperAgents(), { workerId: 'B', isOwnerDead: () => false, workspace: ws, fileStager: stager, concurrency: 2 });
    const r = await withClock(clock, b.resume('ended-roots'));
    await b.close();
    expect(r.status).toBe('cancelled');
    expect(rootsLeft(roots)).toEqual([other.path.slice(roots.length + 1)]);
    await other.remove();
  });
}

/**
 * Worker B takes a fan-out run up with a state read just before worker A's claim of an item was
 * committed (three `baton worker`s on one fan: one that lost a claim puts the run down and reads it
 * again while the others claim). By the time B lists the run's scratch roots, A's attempt has made
 * its root and runs in it: an attempt B's state has not seen yet may run somewhere, and its root
 * stays. (It was removed under the running agent, whose write then failed with ENOENT: seen with
 * three `baton worker`s on PostgreSQL.) B binds no agent of its own here, so that no claim of its own
 * of the same item hides the stale state.
 */
export async function scratchRootOfAnUnseenClaimStays(makeStore: StoreFactory): Promise<void> {
  return inDirs(async ({ ws, roots }) => {
    const store = await makeStore();
    const clock = new ManualClock(1_000_000);
    const stager = (w: string): FileStager => localFileStager({ workspace: w, tmpDir: roots });
    const started = deferredOf<void>();
    const go = deferredOf<void>();
    const agents: Record<string, AgentHandler> = {
      w: async (ctx) => {
        started.resolve();
        await go.promise;
        writeFileSync(join(ctx.input['_workflowFsRoot'] as string, 'o'), `item ${ctx.input['v'] as number}`);
        return { v: ctx.input['v'] as number };
      },
    };
    const a = engineOn(store, clock, agents, { workerId: 'A', isOwnerDead: () => false, workspace: ws, fileStager: stager, concurrency: 1 });
    const runId = await a.create(FAN, { runId: 'unseen-claim', trigger: { items: [0] } });
    // B's first read of the run is made now (before A's claim) and answered once A's agent runs in its
    // root; B's later reads and its commits wait until it has tidied the run's roots (on a real store
    // they take round trips, the listing of a folder does not)
    const stale = deferredOf<void>();
    const tidied = deferredOf<void>();
    let reads = 0;
    let read = false;
    const late = <A extends unknown[], R>(f: (...x: A) => Promise<R>) => async (...x: A): Promise<R> => {
      if (reads++ > 0) await tidied.promise;
      // as read now (the memory store answers with its own arrays, which grow)
      const r = structuredClone(await f(...x));
      read = true;
      await stale.promise;
      return r;
    };
    const held = <A extends unknown[], R>(f: (...x: A) => Promise<R>) => async (...x: A): Promise<R> => {
      await tidied.promise;
      return f(...x);
    };
    const bStore = overriding(store, {
      events: late(store.events.bind(store)),
      ...(store.readState ? { readState: late(store.readState.bind(store)) } : {}),
      transact: held(store.transact.bind(store)),
      ...(store.commitMany ? { commitMany: held(store.commitMany.bind(store)) } : {}),
    });
    const b = engineOn(bStore, clock, {}, { workerId: 'B', isOwnerDead: () => false, workspace: ws, fileStager: stager, concurrency: 1 });
    const onB = b.resume(runId);
    await until(() => read, "B's read of the run");
    const onA = a.resume(runId);
    await started.promise;
    expect(rootsLeft(roots)).toHaveLength(1);
    stale.resolve();
    await settle(50);
    // B has taken the run up and tidied its roots: A's is still there, for its agent to write in
    expect(rootsLeft(roots)).toHaveLength(1);
    tidied.resolve();
    go.resolve();
    const [ra, rb] = await withClock(clock, Promise.all([onA, onB]));
    await a.close();
    await b.close();
    expect(ra.status).toBe('completed');
    expect(rb.status).toBe('completed');
    expect(ra.phases['f[0]']).toMatchObject({ status: 'completed', attempts: 1 });
    expect(readFileSync(join(ws, 'out', runId, '0.txt'), 'utf8')).toBe('item 0');
    expectFilesMatchLog(ws, 'out', await store.events(runId));
    expect(rootsLeft(roots)).toEqual([]);
  });
}

// ---- reruns ---------------------------------------------------------------------------------------

const PAPER_RERUN = wf(`${header()}workflow:
  draft:
    assign: w
    outputsFiles: {draft.md: {path: "out/<runId>/draft.md"}, notes.md: {path: "notes/<phase>.md"}}
    outputs: {n: integer}
  sections:
    assign: w
    depends_on: [draft]
    for_each: $trigger.titles
    inputs: {t: $item}
    outputsFiles: {s.md: {path: "out/<runId>/<item>-<attempt>.md"}}
    outputs: {n: integer}
  assemble:
    assign: a
    depends_on: [draft, sections]
    inputsFiles: {draft.md: {path: "out/<runId>/draft.md"}, intro.md: {path: "out/<runId>/intro-1.md"}, notes.md: {path: "notes/draft.md"}}
    outputs: {text: string}`);

/**
 * `rerun --from assemble`: the files the reused phases (and items) synced come with their outputs, at the
 * paths the new run's tokens name (`<runId>` is the new run's), recorded as synced by the phase they
 * came from; a path that names no run is already there (recorded, not copied). The rerun's `assemble`
 * reads them; the first run's files are left as they were.
 */
export async function rerunCarriesTheFilesOfReusedPhases(makeStore: StoreFactory): Promise<void> {
  return inDirs(async ({ ws, roots }) => {
    const store = await makeStore();
    const clock = new ManualClock(0);
    let fixed = false;
    const agents: Record<string, AgentHandler> = {
      w: (ctx) => {
        const root = ctx.input['_workflowFsRoot'] as string;
        if (ctx.phase === 'draft') {
          writeFileSync(join(root, 'draft.md'), 'the draft');
          writeFileSync(join(root, 'notes.md'), 'the notes');
        } else writeFileSync(join(root, 's.md'), `section ${ctx.input['t'] as string}`);
        return { n: 1 };
      },
      a: (ctx) => {
        const root = ctx.input['_workflowFsRoot'] as string;
        if (!fixed) throw new AgentError('Broken', 'not yet', {}, false);
        return { text: ['draft.md', 'intro.md', 'notes.md'].map((k) => readFileSync(join(root, k), 'utf8')).join('|') };
      },
    };
    const e = engineOn(store, clock, agents, { workspace: ws, fileStager: (w) => localFileStager({ workspace: w, tmpDir: roots }) });
    const first = await e.run(PAPER_RERUN, { trigger: { titles: ['intro', 'body'] } });
    expect(first.status).toBe('failed');
    fixed = true;
    const id = await e.rerun(first.runId, 'assemble');
    const r = await e.drive(id, undefined);
    expect(r.status, JSON.stringify(r.phases['assemble']?.error)).toBe('completed');
    expect(r.phases['assemble']!.output).toEqual({ text: 'the draft|section intro|the notes' });
    const synced = r.events.filter((x): x is Extract<RunEvent, { type: 'task.file' }> => x.type === 'task.file' && x.direction === 'synced');
    expect(synced.map((x) => [x.phase, x.key, x.path, x.sha256]).sort()).toEqual(
      [
        ['draft', 'draft.md', `out/${id}/draft.md`, sha('the draft')],
        ['draft', 'notes.md', 'notes/draft.md', sha('the notes')],
        ['sections', 's.md', `out/${id}/body-1.md`, sha('section body')],
        ['sections', 's.md', `out/${id}/intro-1.md`, sha('section intro')],
      ].sort(),
    );
    // an item of the fan-out reused whole: with its phase's reused completion (the rerun has no item tasks)
    expect(synced.find((x) => x.path.endsWith('body-1.md'))).toMatchObject({ item: 1, attempt: r.phases['sections']!.attempts });
    // each is recorded just before its reused completion, as an attempt's are, and the workspace agrees with the log
    for (const x of synced) expect(r.events.findIndex((y) => y.type === 'task.completed' && y.phase === x.phase)).toBeGreaterThan(r.events.indexOf(x));
    expect(r.events.filter((x) => x.type === 'task.warning')).toEqual([]);
    expectFilesMatchLog(ws, `out/${id}`, r.events.filter((x) => x.type !== 'task.file' || x.path.startsWith(`out/${id}/`)));
    expect(readFileSync(join(ws, 'notes/draft.md'), 'utf8')).toBe('the notes');
    expect(readFileSync(join(ws, `out/${first.runId}/draft.md`), 'utf8')).toBe('the draft');
    expect(rootsLeft(roots)).toEqual([]);
    await e.close();
  });
}

/** A reused phase's file whose bytes changed since its run recorded them is not brought over: a warning says so, and the phase that reads it fails as it would. */
export async function rerunLeavesAChangedFile(makeStore: StoreFactory): Promise<void> {
  return inDirs(async ({ ws, roots }) => {
    const store = await makeStore();
    const clock = new ManualClock(0);
    const agents: Record<string, AgentHandler> = {
      w: (ctx) => {
        const root = ctx.input['_workflowFsRoot'] as string;
        for (const k of ctx.phase === 'draft' ? ['draft.md', 'notes.md'] : ['s.md']) writeFileSync(join(root, k), `${k} of ${ctx.phase}`);
        return { n: 1 };
      },
      a: () => {
        throw new AgentError('Broken', 'not yet', {}, false);
      },
    };
    const e = engineOn(store, clock, agents, { workspace: ws, fileStager: (w) => localFileStager({ workspace: w, tmpDir: roots }) });
    const first = await e.run(PAPER_RERUN, { trigger: { titles: ['intro'] } });
    expect(first.status).toBe('failed');
    writeFileSync(join(ws, `out/${first.runId}/draft.md`), 'edited by hand');
    const r = await e.drive(await e.rerun(first.runId, 'assemble'), undefined);
    const warnings = r.events.filter((x): x is Extract<RunEvent, { type: 'task.warning' }> => x.type === 'task.warning');
    expect(warnings).toEqual([expect.objectContaining({ phase: 'draft', code: 'FileNotCarried', details: { key: 'draft.md', path: `out/${r.runId}/draft.md` } })]);
    expect(warnings[0]!.message).toContain('no longer holds the bytes');
    expect(r.phases['assemble']!.error).toMatchObject({ code: 'MissingInputFile', details: { key: 'draft.md' } });
    expect(existsSync(join(ws, `out/${r.runId}/intro-1.md`))).toBe(true);
    expect(rootsLeft(roots)).toEqual([]);
    await e.close();
  });
}

/**
 * A reused file at a path that names no run (`notes/<phase>.md`) is not copied, but it is recorded as the
 * reused phase's: edited or removed since, it is not recorded with bytes it no longer holds (a warning
 * says why), and a phase that reads it reads what is there, as in any run.
 */
export async function rerunRecordsNoChangedFileInPlace(makeStore: StoreFactory): Promise<void> {
  return inDirs(async ({ ws, roots }) => {
    const store = await makeStore();
    const clock = new ManualClock(0);
    let fixed = false;
    const agents: Record<string, AgentHandler> = {
      w: (ctx) => {
        const root = ctx.input['_workflowFsRoot'] as string;
        for (const k of ctx.phase === 'draft' ? ['draft.md', 'notes.md'] : ['s.md']) writeFileSync(join(root, k), `${k} of ${ctx.phase}`);
        return { n: 1 };
      },
      a: (ctx) => {
        if (!fixed) throw new AgentError('Broken', 'not yet', {}, false);
        return { text: readFileSync(join(ctx.input['_workflowFsRoot'] as string, 'notes.md'), 'utf8') };
      },
    };
    const e = engineOn(store, clock, agents, { workspace: ws, fileStager: (w) => localFileStager({ workspace: w, tmpDir: roots }) });
    const first = await e.run(PAPER_RERUN, { trigger: { titles: ['intro'] } });
    expect(first.status).toBe('failed');
    fixed = true;
    writeFileSync(join(ws, 'notes/draft.md'), 'edited by hand');
    const r = await e.drive(await e.rerun(first.runId, 'assemble'), undefined);
    expect(r.status).toBe('completed');
    expect(r.phases['assemble']!.output).toEqual({ text: 'edited by hand' });
    const files = r.events.filter((x): x is Extract<RunEvent, { type: 'task.file' }> => x.type === 'task.file' && x.path === 'notes/draft.md');
    // only assemble's staging of the edited bytes: no `synced` record of bytes the file no longer holds
    expect(files.map((x) => [x.phase, x.direction, x.sha256])).toEqual([['assemble', 'staged', sha('edited by hand')]]);
    const warnings = r.events.filter((x): x is Extract<RunEvent, { type: 'task.warning' }> => x.type === 'task.warning');
    expect(warnings).toEqual([expect.objectContaining({ phase: 'draft', code: 'FileNotCarried', details: { key: 'notes.md', path: 'notes/draft.md' } })]);

    // removed: not recorded either, and the phase that reads it fails as it would
    fixed = false;
    const second = await e.run(PAPER_RERUN, { trigger: { titles: ['intro'] } });
    fixed = true;
    rmSync(join(ws, 'notes/draft.md'));
    const r2 = await e.drive(await e.rerun(second.runId, 'assemble'), undefined);
    expect(r2.events.filter((x) => x.type === 'task.file' && x.path === 'notes/draft.md')).toEqual([]);
    expect(r2.events.filter((x) => x.type === 'task.warning')).toEqual([expect.objectContaining({ code: 'FileNotCarried', details: { key: 'notes.md', path: 'notes/draft.md' } })]);
    expect(r2.phases['assemble']!.error).toMatchObject({ code: 'MissingInputFile', details: { key: 'notes.md' } });
    expect(rootsLeft(roots)).toEqual([]);
    await e.close();
  });
}

export const FILE_SCENARIOS: Record<string, (makeStore: StoreFactory) => Promise<unknown>> = {
  rerunCarriesTheFilesOfReusedPhases,
  rerunLeavesAChangedFile,
  rerunRecordsNoChangedFileInPlace,
  filesOfCancelledItemsStayOut,
  filesSyncedByTheNextWorker,
  filesCrashEverywhere,
  scratchRootsOfDeadAttemptsGo,
  scratchRootsGoWhenTheRunEnds,
  scratchRootsGoWhenAnEndedRunIsTakenUp,
  scratchRootOfAnUnseenClaimStays,
};

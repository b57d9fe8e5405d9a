/**
 * The chaos test on real processes (issue 13), shared by test/chaos/chaos.pg.test.ts (small) and
 * bench/chaos.bench.ts (large). A fresh PostgreSQL database; several `baton worker` processes reach it
 * through a loopback TCP proxy, one with a clock skewed by BATON_CLOCK_OFFSET_MS; runs are enqueued with
 * `baton run --detach` while the workers go, and runs with an approval gate are answered by `baton
 * approve` processes while workers commit. For a while the harness SIGKILLs workers (and restarts them)
 * and cuts every connection at the proxy. Then it lets the workers drain, bounded in time, stops every
 * process it started (also when it fails), and checks the invariants (invariants.ts) from the stored
 * events and the agents' execution logs.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '../../src/api/store.js';
import type { CliIo } from '../../src/cli/io.js';
import { run as cli } from '../../src/cli/main.js';
import type { RunStore } from '../../src/engine/ports.js';
import { PG_SERVER, testDatabase } from '../helpers/pg.js';
import { baton, type Done } from '../helpers/spawn.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { checkInvariants, why, type ExecLine, type StoredEvent, type Violation, type WorkerExit } from './invariants.js';

export interface ChaosConfig {
  /** Runs without a gate, and runs whose last phase waits for `baton approve`. */
  runs: number;
  gatedRuns: number;
  /** Worker processes; the last one's clock is `skewMs` ahead (0: none skewed). */
  workers: number;
  concurrency: number;
  leaseSeconds: number;
  skewMs: number;
  /** How long the harness kills and cuts; runs are enqueued over its first half. */
  chaosMs: number;
  /** Mean time between SIGKILLs of a random worker (0: none); a killed worker restarts after `restartMs`. */
  killEveryMs: number;
  restartMs: number;
  /** Mean time between connection cuts at the proxy (0: none), each lasting `cutMs`. */
  cutEveryMs: number;
  cutMs: number;
  /** Executions that sleep `slowMs` instead of a few ms (percent): they hold leases long enough to be taken over. */
  slowPercent: number;
  slowMs: number;
  /** After the chaos: how long the runs may take to finish before the test gives up. */
  settleMs: number;
  seed: number;
  /** Progress lines (the bench prints them; the test keeps quiet). */
  log?: (line: string) => void;
}

export interface ChaosReport {
  config: ChaosConfig;
  violations: Violation[];
  runs: number;
  phases: number;
  executions: number;
  kills: number;
  cuts: number;
  approvals: number;
  approvalRetries: number;
  workerExits: number;
  /** From the first enqueue to the last run's end (or the give-up), ms. */
  elapsedMs: number;
  allCompletedAfterMs: number | undefined;
}

/** Every task of a run: the diamond's phases and the three items of its fan-out `f` (the fan-out phase itself runs no agent). */
export const PHASES = ['a', 'b', 'c', 'f[0]', 'f[1]', 'f[2]', 'd'] as const;
const AGENTS = fileURLToPath(new URL('../fixtures/chaos/agents.mjs', import.meta.url));

/**
 * A diamond a -> (b, c, f) -> d, where `f` fans out over three items of `a`'s list; every phase (each
 * item too) retries with `delayMs`; `gated`: d waits for an approval.
 */
export function chaosWorkflow(delayMs: number, gated: boolean): string {
  const retry = `retry: {max_attempts: 3, backoff: constant, initial_delay_ms: ${delayMs}}`;
  const out = 'outputs: {v: string, n: integer}';
  return `openintent: "1.0"
info: {name: "Chaos ${delayMs}${gated ? ' gated' : ''}"}
workflow:
  a: {assign: w, outputs: {v: string, n: integer, list: "integer[]"}, ${retry}}
  b: {assign: w, depends_on: [a], inputs: {n: a.n}, ${out}, ${retry}}
  c: {assign: w, depends_on: [a], inputs: {n: a.n}, ${out}, ${retry}}
  f: {assign: w, depends_on: [a], for_each: a.list, inputs: {x: $item}, ${out}, ${retry}}
  d:
    assign: w
    depends_on: [b, c, f]
    inputs: {b: b.n, c: c.n, f: f.n}
    ${out}
    ${retry}${gated ? '\n    x-require_approval: true' : ''}
`;
}

/** mulberry32: a seeded generator, so a failing configuration can be replayed (CHAOS_SEED). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const wall = (): number => performance.timeOrigin + performance.now();

function quietIo(cwd: string): CliIo & { err: () => string } {
  let err = '';
  return { stdout: () => undefined, stderr: (s) => void (err += s), isTTY: false, cwd, env: {}, err: () => err };
}

type Child = ReturnType<typeof baton>;

interface Slot {
  index: number;
  env: Record<string, string>;
  child: Child | undefined;
  /** The harness killed or stopped it: its exit is expected. */
  expected: boolean;
}

export async function runChaos(config: ChaosConfig): Promise<ChaosReport> {
  const say = config.log ?? (() => undefined);
  const random = rng(config.seed);
  const db = testDatabase('baton_chaos');
  const dir = mkdtempSync(join(tmpdir(), 'baton-chaos-'));
  const logDir = join(dir, 'log');
  mkdirSync(logDir);
  const delays = [0, 1, 2];
  for (const d of delays) {
    writeFileSync(join(dir, `plain-${d}.yaml`), chaosWorkflow(d, false));
    writeFileSync(join(dir, `gated-${d}.yaml`), chaosWorkflow(d, true));
  }

  const children = new Set<Child>();
  const deaths = new Map<number, number>();
  const exits: WorkerExit[] = [];
  const slots: Slot[] = [];
  const labels = new Map<number, string>();
  let proxy: TcpProxy | undefined;
  let store: RunStore | undefined;
  let stopping = false;
  let kills = 0;
  let cuts = 0;
  let approvals = 0;
  let approvalRetries = 0;
  // every child dies with the harness, whatever happens to it (a failing test, an exception)
  const killAll = (): void => {
    for (const c of children) {
      try {
        if (c.pid !== undefined) process.kill(-c.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  process.once('exit', killAll);

  const spawnChild = (args: string[], env: Record<string, string>): Child => {
    const c = baton(args, { cwd: dir, env: { CHAOS_LOG_DIR: logDir, CHAOS_SLOW_PERCENT: String(config.slowPercent), CHAOS_SLOW_MS: String(config.slowMs), ...env }, detached: true });
    children.add(c);
    void c.done.then(() => children.delete(c));
    return c;
  };

  /** Settles when a worker printed that it serves (or ended). */
  const serving = (c: Child): Promise<void> =>
    new Promise((resolve) => {
      let err = '';
      c.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
        if (err.includes('serving')) resolve();
      });
      void c.done.then(() => resolve());
    });

  const startWorker = (slot: Slot, url: string): void => {
    slot.expected = false;
    const c = spawnChild(['worker', '--store', url, '--agents', AGENTS, '--concurrency', String(config.concurrency), '--lease', String(config.leaseSeconds), '-q'], slot.env);
    slot.child = c;
    if (slot.env['BATON_CLOCK_OFFSET_MS'] !== undefined && c.pid !== undefined) labels.set(c.pid, `clock ${slot.env['BATON_CLOCK_OFFSET_MS']} ms ahead`);
    void c.done.then((d: Done) => {
      if (c.pid !== undefined && !deaths.has(c.pid)) deaths.set(c.pid, wall());
      if (slot.child !== c) return;
      slot.child = undefined;
      if (slot.expected) return;
      exits.push({ pid: c.pid ?? -1, code: d.code, signal: d.signal, stderr: d.stderr });
      say(`worker ${slot.index} (pid ${c.pid}) exited by itself: code ${d.code} ${why(d.stderr)}`);
      // it is replaced, so the test goes on and reports everything it finds
      if (!stopping) setTimeout(() => !stopping && !slot.child && startWorker(slot, url), config.restartMs);
    });
  };

  const stopWorker = async (slot: Slot, signal: NodeJS.Signals): Promise<void> => {
    const c = slot.child;
    if (!c?.pid) return;
    slot.expected = true;
    try {
      process.kill(-c.pid, signal);
    } catch {
      // already gone
    }
    if (signal === 'SIGKILL') deaths.set(c.pid, wall());
    await c.done;
  };

  let t0 = wall();
  let allCompletedAfterMs: number | undefined;
  const runIds: string[] = [];
  try {
    await db.create();
    proxy = await startTcpProxy({ host: new URL(PG_SERVER).hostname, port: Number(new URL(PG_SERVER).port || 5432) });
    const viaProxy = proxy.rewrite(db.url);
    // the harness's own connection goes straight to the server: it observes, it is not under test
    store = await openStore(db.url, { cwd: dir });

    for (let i = 0; i < config.workers; i++) {
      const skewed = config.skewMs !== 0 && i === config.workers - 1;
      slots.push({ index: i, env: skewed ? { BATON_CLOCK_OFFSET_MS: String(config.skewMs) } : {}, child: undefined, expected: false });
    }
    for (const s of slots) startWorker(s, viaProxy);
    // the chaos starts once every worker serves (a loaded machine takes seconds to start six)
    await Promise.all(slots.map((s) => serving(s.child!)));
    t0 = wall();
    say(`${config.workers} workers on ${viaProxy}${config.skewMs ? `, worker ${config.workers - 1} ${config.skewMs} ms ahead` : ''}; seed ${config.seed}`);

    // what the harness will enqueue, in a shuffled order
    const plan: { id: string; file: string; gated: boolean }[] = [];
    for (let i = 0; i < config.runs + config.gatedRuns; i++) {
      const gated = i >= config.runs;
      const d = delays[i % delays.length]!;
      plan.push({ id: `chaos-${gated ? 'g' : 'p'}${i}`, file: `${gated ? 'gated' : 'plain'}-${d}.yaml`, gated });
    }
    plan.sort(() => random() - 0.5);
    const gated = new Set(plan.filter((p) => p.gated).map((p) => p.id));
    const approved = new Set<string>();
    let approving = 0;

    const chaosEnd = t0 + config.chaosMs;
    const deadline = chaosEnd + config.settleMs;
    // the first of each within the first half of the chaos, so that every configuration has some
    const first = (every: number): number => (every > 0 ? t0 + Math.min(every, config.chaosMs / 3) * (0.5 + random()) : Infinity);
    let nextKill = first(config.killEveryMs);
    let nextCut = first(config.cutEveryMs);
    let enqueued = 0;
    let lastPoll = 0;

    for (;;) {
      const now = wall();
      // enqueue over the first half of the chaos, a few at a time (in this process: the CLI's `run`)
      const due = Math.min(plan.length, Math.ceil((plan.length * (now - t0)) / Math.max(1, config.chaosMs / 2)));
      // a few per turn, so kills and cuts keep their pace while enqueueing lags
      for (let k = 0; k < 3 && enqueued < due; k++) {
        const p = plan[enqueued++]!;
        const io = quietIo(dir);
        const rc = await cli(['run', p.file, '--agents', AGENTS, '--store', db.url, '--run-id', p.id, '--detach'], io);
        if (rc !== 0) throw new Error(`baton run --detach ${p.id} exited ${rc}: ${io.err()}`);
        runIds.push(p.id);
      }
      if (now < chaosEnd && now >= nextKill) {
        nextKill = now + config.killEveryMs * (0.5 + random());
        const live = slots.filter((s) => s.child);
        const victim = live[Math.floor(random() * live.length)];
        if (victim) {
          kills++;
          say(`SIGKILL worker ${victim.index} (pid ${victim.child?.pid})`);
          await stopWorker(victim, 'SIGKILL');
          setTimeout(() => !stopping && !victim.child && startWorker(victim, viaProxy), config.restartMs);
        }
      }
      if (now < chaosEnd && now >= nextCut) {
        cuts++;
        nextCut = now + config.cutMs + config.cutEveryMs * (0.5 + random());
        // every other cut (the first too) holds the bytes for 50 ms first: a commit that reached the database meanwhile
        // lands there and its answer is lost with the cut (the worker must find out whether it landed)
        if (cuts % 2 === 1) {
          say(`hold every byte for 50 ms, then cut every connection for ${config.cutMs} ms`);
          const held = proxy;
          held.pause();
          setTimeout(() => {
            void held.cut(config.cutMs);
            held.resume();
          }, 50);
        } else {
          say(`cut every connection for ${config.cutMs} ms`);
          void proxy.cut(config.cutMs);
        }
      }
      if (now - lastPoll >= 250) {
        lastPoll = now;
        const records = await store.runs({ limit: 100_000 });
        const open = records.filter((r) => runIds.includes(r.runId) && r.status !== 'completed' && r.status !== 'failed' && r.status !== 'cancelled');
        // answer the gates that opened, from another process, while the workers commit
        for (const r of open) {
          if (!gated.has(r.runId) || approved.has(r.runId) || approving >= 2 || r.status !== 'waiting') continue;
          approving++;
          approved.add(r.runId);
          const c = spawnChild(['approve', r.runId, 'approve-d', '--store', viaProxy, '--as', 'chaos'], {});
          void c.done.then((d) => {
            approving--;
            if (d.code === 0) approvals++;
            else {
              approvalRetries++;
              approved.delete(r.runId); // a cut, or not open yet: asked again at the next look
            }
          });
        }
        if (enqueued === plan.length && open.length === 0) {
          allCompletedAfterMs = wall() - t0;
          say(`every run ended after ${(allCompletedAfterMs / 1000).toFixed(1)} s`);
          break;
        }
        if (now > deadline) {
          say(`gave up after ${((now - t0) / 1000).toFixed(1)} s: ${open.length} runs still open (${[...new Set(open.map((r) => r.status))].join(', ')})`);
          break;
        }
      }
      await sleep(20);
    }

    // stop the workers (what they were running is over: an execution without an end ends here)
    stopping = true;
    await Promise.all(slots.map((s) => stopWorker(s, 'SIGKILL')));
    const elapsedMs = wall() - t0;

    const storedRuns = await Promise.all(
      runIds.map(async (id) => ({ runId: id, status: (await store!.run(id))?.status ?? 'missing', events: (await store!.events(id)) as unknown as StoredEvent[] })),
    );
    const log = readLog(logDir);
    const violations = checkInvariants({ runs: storedRuns, phases: PHASES, log, deaths, exits, labels });
    return {
      config,
      violations,
      runs: runIds.length,
      phases: storedRuns.reduce((n, r) => n + r.events.filter((e) => e.type === 'task.completed').length, 0),
      executions: log.filter((l) => l.k === 'start').length,
      kills,
      cuts,
      approvals,
      approvalRetries,
      workerExits: exits.length,
      elapsedMs,
      allCompletedAfterMs,
    };
  } finally {
    stopping = true;
    for (const s of slots) s.expected = true;
    killAll();
    await Promise.all([...children].map((c) => c.done));
    process.removeListener('exit', killAll);
    await store?.close().catch(() => undefined);
    await proxy?.close();
    await db.drop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every line the agents logged; a line cut short by a SIGKILL is skipped. */
function readLog(logDir: string): ExecLine[] {
  const out: ExecLine[] = [];
  for (const f of readdirSync(logDir)) {
    for (const line of readFileSync(join(logDir, f), 'utf8').split('\n')) {
      if (line === '') continue;
      try {
        out.push(JSON.parse(line) as ExecLine);
      } catch {
        // torn by a kill
      }
    }
  }
  return out;
}

/** One line per violation code with the first few examples. */
export function formatReport(r: ChaosReport): string {
  const lines = [
    `${r.runs} runs, ${r.phases} phase completions, ${r.executions} executions; ${r.kills} SIGKILLs, ${r.cuts} cuts, ${r.approvals} approvals (${r.approvalRetries} retried), ${r.workerExits} workers exited by themselves; ${(r.elapsedMs / 1000).toFixed(1)} s${r.allCompletedAfterMs !== undefined ? `, all ended after ${(r.allCompletedAfterMs / 1000).toFixed(1)} s` : ', NOT all ended'}`,
  ];
  const byCode = new Map<string, Violation[]>();
  for (const v of r.violations) byCode.set(v.code, [...(byCode.get(v.code) ?? []), v]);
  for (const [code, vs] of byCode) {
    lines.push(`  ${code}: ${vs.length}`);
    for (const v of vs.slice(0, 3)) lines.push(`    ${v.run ?? ''} ${v.phase ?? ''} ${v.detail}`);
  }
  return lines.join('\n');
}

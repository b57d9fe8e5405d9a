/**
 * Several `baton worker` processes on one real PostgreSQL database (127.0.0.1:5432; `.ci/run` starts
 * it; these tests fail, never skip, when it cannot be reached). Checks: every recorded attempt ran
 * exactly once, no two attempts of one task overlapped, the outputs equal a single-process run's,
 * and killing one worker mid-run still completes the run (its lease expires, another retries).
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';
import { testDatabase } from '../helpers/pg.js';
import { baton, until } from '../helpers/spawn.js';

const db = testDatabase('baton_test_workers');
const URL_ = db.url;

beforeAll(db.create);
afterAll(db.drop);

function capture(cwd: string): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: {}, out: () => out, err: () => err };
}

/** A fan-out / fan-in of `width` phases with deterministic outputs. */
function workflow(width: number): string {
  let s = `openintent: "1.0"\ninfo: {name: "Fan"}\nworkflow:\n  root: {assign: w, outputs: {seed: integer}}\n`;
  for (let i = 0; i < width; i++) s += `  p${i}: {assign: w, depends_on: [root], inputs: {seed: root.seed}, outputs: {v: integer}}\n`;
  s += `  join:\n    assign: w\n    depends_on: [${Array.from({ length: width }, (_, i) => `p${i}`).join(', ')}]\n    inputs: {${Array.from({ length: width }, (_, i) => `v${i}: p${i}.v`).join(', ')}}\n    outputs: {sum: integer}\n`;
  return s;
}

const AGENTS = `import { appendFileSync } from 'node:fs';
const LOG = new URL('./attempts.log', import.meta.url);
export default {
  w: async (ctx) => {
    const start = performance.timeOrigin + performance.now();
    appendFileSync(LOG, JSON.stringify({ kind: 'start', phase: ctx.phase, attempt: ctx.attempt, pid: process.pid, t: start }) + '\\n');
    await new Promise((r) => setTimeout(r, Number(process.env.AGENT_MS ?? 30)));
    const out = ctx.phase === 'root' ? { seed: 7 } : ctx.phase === 'join' ? { sum: Object.values(ctx.input).reduce((a, b) => a + b, 0) } : { v: ctx.input.seed * Number(ctx.phase.slice(1)) };
    appendFileSync(LOG, JSON.stringify({ kind: 'end', phase: ctx.phase, attempt: ctx.attempt, pid: process.pid, t: performance.timeOrigin + performance.now() }) + '\\n');
    return out;
  },
};
`;

interface Line {
  kind: 'start' | 'end';
  phase: string;
  attempt: number;
  pid: number;
  t: number;
}

function lines(cwd: string): Line[] {
  const f = join(cwd, 'attempts.log');
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line) : [];
}

async function show(cwd: string, runId: string, store: string): Promise<{ status: string; phases: Record<string, { status: string; attempts: number; output: unknown }>; events: { type: string; phase?: string; attempt?: number }[] }> {
  const io = capture(cwd);
  expect(await run(['show', runId, '--json', '--events', '--store', store], io)).toBe(0);
  return JSON.parse(io.out()) as never;
}

function checkAttempts(log: Line[], events: { type: string; phase?: string; attempt?: number }[], killedPid?: number, killedAt?: number): void {
  // every attempt the store recorded as claimed ran exactly once (an attempt of the killed worker may not have started)
  const starts = new Map<string, Line[]>();
  for (const l of log.filter((x) => x.kind === 'start')) starts.set(`${l.phase}#${l.attempt}`, [...(starts.get(`${l.phase}#${l.attempt}`) ?? []), l]);
  for (const [, ls] of starts) expect(ls).toHaveLength(1);
  for (const e of events.filter((x) => x.type === 'task.claimed')) {
    const ls = starts.get(`${e.phase}#${e.attempt}`) ?? [];
    if (ls.length === 0) continue; // claimed by the worker that was killed before it started
    expect(ls).toHaveLength(1);
  }
  for (const key of starts.keys()) expect(events.some((e) => e.type === 'task.claimed' && `${e.phase}#${e.attempt}` === key)).toBe(true);
  // no two attempts of one task overlapped
  const byPhase = new Map<string, { from: number; to: number }[]>();
  for (const s of log.filter((x) => x.kind === 'start')) {
    const end = log.find((x) => x.kind === 'end' && x.phase === s.phase && x.attempt === s.attempt);
    const to = end ? end.t : s.pid === killedPid && killedAt !== undefined ? killedAt : Infinity;
    byPhase.set(s.phase, [...(byPhase.get(s.phase) ?? []), { from: s.t, to }]);
  }
  for (const [, spans] of byPhase) {
    spans.sort((a, b) => a.from - b.from);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.from).toBeGreaterThanOrEqual(spans[i - 1]!.to);
  }
}

/**
 * SIGKILLs the first worker once `ready` holds (after `start`, if given), waits for the run to complete, and stops the others
 * (always, also when the wait fails). When it was killed (wall ms).
 */
async function killOneThenFinish(workers: ReturnType<typeof baton>[], ready: () => boolean, cwd: string, runId: string, ms: number, start?: () => Promise<void>): Promise<number> {
  const victim = workers[0]!;
  try {
    await start?.();
    await until(ready, 30_000);
    victim.kill('SIGKILL');
    const killedAt = performance.timeOrigin + performance.now();
    await victim.done;
    await until(async () => (await show(cwd, runId, URL_)).status === 'completed', ms);
    return killedAt;
  } finally {
    for (const w of workers) w.kill('SIGINT');
    await Promise.all(workers.map((w) => w.done));
  }
}

/** A run id fresh for each attempt of a test, so that a retry (CI runs a failed test again) does not meet its own earlier run. */
function freshId(name: string): string {
  return `${name}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

/** Resolves when every worker has said it is serving (its store open, its loop about to look for work). */
function serving(workers: ReturnType<typeof baton>[]): Promise<void> {
  const up = workers.map(() => false);
  workers.forEach((w, i) => w.stderr!.on('data', (d: Buffer) => void (d.toString().includes(' serving ') && (up[i] = true))));
  return until(() => up.every(Boolean), 30_000);
}

describe('many workers on one PostgreSQL database', () => {
  test('three worker processes share a run: each attempt once, no overlap, the outputs of a single-process run', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-workers-'));
    writeFileSync(join(cwd, 'workflow.yaml'), workflow(24));
    writeFileSync(join(cwd, 'agents.mjs'), AGENTS);
    // the reference: one process, in memory
    const single = capture(cwd);
    expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--json', '-q'], single)).toBe(0);
    const reference = JSON.parse(single.out()) as { phases: Record<string, { output: unknown }> };
    writeFileSync(join(cwd, 'attempts.log'), '');

    // start order does not matter: the run first, then the workers (each up before the first task ends, so the work is shared)
    const many1 = freshId('many1');
    expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', URL_, '--run-id', many1, '--detach'], capture(cwd))).toBe(0);
    const workers = [0, 1, 2].map(() => baton(['worker', '--store', URL_, '--agents', 'agents.mjs', '--concurrency', '4', '-q'], { cwd, env: { AGENT_MS: '150' } }));
    try {
      await until(async () => (await show(cwd, many1, URL_)).status === 'completed', 40_000);
    } finally {
      for (const w of workers) w.kill('SIGINT');
      await Promise.all(workers.map((w) => w.done));
    }
    const shown = await show(cwd, many1, URL_);
    for (const [name, p] of Object.entries(reference.phases)) expect(shown.phases[name]!.output).toEqual(p.output);
    const log = lines(cwd);
    expect(new Set(log.map((l) => l.pid)).size).toBeGreaterThan(1); // the work was shared
    checkAttempts(log, shown.events);
  }, 60_000);

  test('killing one worker mid-run still completes the run: its lease expires and another worker retries', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-workers-'));
    writeFileSync(join(cwd, 'workflow.yaml'), workflow(16));
    writeFileSync(join(cwd, 'agents.mjs'), AGENTS);
    const env = { AGENT_MS: '300' };
    const workers = [0, 1].map(() => baton(['worker', '--store', URL_, '--agents', 'agents.mjs', '--concurrency', '4', '--lease', '1', '-q'], { cwd, env }));
    const many2 = freshId('many2');
    const victim = workers[0]!;
    // both workers serving before the run is stored (a late victim could find the work taken), then kill the first while it holds attempts
    const start = async (): Promise<void> => {
      await serving(workers);
      expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', URL_, '--run-id', many2, '--detach'], capture(cwd))).toBe(0);
    };
    const killedAt = await killOneThenFinish(workers, () => lines(cwd).some((l) => l.kind === 'start' && l.pid === victim.pid && l.phase !== 'root'), cwd, many2, 40_000, start);
    const shown = await show(cwd, many2, URL_);
    expect(shown.events.some((e) => e.type === 'task.lease_expired')).toBe(true);
    expect(Object.values(shown.phases).every((p) => p.status === 'completed')).toBe(true);
    expect((shown.phases['join']!.output as { sum: number }).sum).toBe(7 * ((15 * 16) / 2));
    checkAttempts(lines(cwd), shown.events, victim.pid, killedAt);
  }, 60_000);

  test('three worker processes share a fan-out of 200 items, one killed mid-fan: each item once, the outputs of a single-process run', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-workers-'));
    // serving workers keep no event log, so they fold settled items out of their run state (and their snapshots):
    // another worker's events about an item, a takeover and a load from a folded snapshot must all still add up
    writeFileSync(
      join(cwd, 'workflow.yaml'),
      `openintent: "1.0"
info: {name: "Items"}
workflow:
  root: {assign: w, outputs: {xs: "integer[]"}}
  each: {assign: w, depends_on: [root], for_each: root.xs, skip_when: "$item % 10 == 3", tolerated_failures: 5, inputs: {x: $item}, outputs: {v: integer}}
  join: {assign: w, depends_on: [each], inputs: {vs: each.v}, outputs: {sum: integer, nulls: integer}}
`,
    );
    writeFileSync(
      join(cwd, 'agents.mjs'),
      `import { appendFileSync } from 'node:fs';
const LOG = new URL('./attempts.log', import.meta.url);
export default {
  w: async (ctx) => {
    const key = ctx.item ? ctx.phase + '[' + ctx.item.index + ']' : ctx.phase;
    appendFileSync(LOG, JSON.stringify({ kind: 'start', phase: key, attempt: ctx.attempt, pid: process.pid, t: performance.timeOrigin + performance.now() }) + '\\n');
    await new Promise((r) => setTimeout(r, Number(process.env.AGENT_MS ?? 5)));
    const done = () => appendFileSync(LOG, JSON.stringify({ kind: 'end', phase: key, attempt: ctx.attempt, pid: process.pid, t: performance.timeOrigin + performance.now() }) + '\\n');
    if (ctx.phase === 'root') return done(), { xs: Array.from({ length: 200 }, (_, i) => i) };
    if (ctx.phase === 'join') return done(), { sum: ctx.input.vs.reduce((a, b) => a + (b ?? 0), 0), nulls: ctx.input.vs.filter((v) => v === null).length };
    done();
    if (ctx.input.x % 50 === 7) throw new Error('item ' + ctx.input.x + ' fails');
    return { v: ctx.input.x * 2 };
  },
};
`,
    );
    const single = capture(cwd);
    expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--json', '-q'], single)).toBe(0);
    const reference = JSON.parse(single.out()) as { phases: Record<string, { output: unknown }> };
    // 20 skipped (x % 10 == 3) and 4 failed (x % 50 == 7) items leave null slots
    expect(reference.phases['join']!.output).toEqual({ sum: 2 * (19_900 - (3 + 193) * 10 - (7 + 57 + 107 + 157)), nulls: 24 });
    writeFileSync(join(cwd, 'attempts.log'), '');

    // the three workers are serving before the run is stored: at 20 ms an item, a worker that came up late
    // could find the fan drained by the other two, and never reach the 10 items it is killed after
    const env = { AGENT_MS: '20' };
    const items1 = freshId('items1');
    const workers = [0, 1, 2].map(() => baton(['worker', '--store', URL_, '--agents', 'agents.mjs', '--concurrency', '6', '--lease', '1', '-q'], { cwd, env }));
    const victim = workers[0]!;
    const start = async (): Promise<void> => {
      await serving(workers);
      expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', URL_, '--run-id', items1, '--detach'], capture(cwd))).toBe(0);
    };
    const killedAt = await killOneThenFinish(workers, () => lines(cwd).filter((l) => l.kind === 'start' && l.pid === victim.pid && l.phase.startsWith('each[')).length >= 10, cwd, items1, 60_000, start);
    const shown = await show(cwd, items1, URL_);
    expect(shown.phases['each']!.output).toEqual(reference.phases['each']!.output);
    expect(shown.phases['join']!.output).toEqual(reference.phases['join']!.output);
    for (let i = 0; i < 200; i++) {
      const settled = shown.events.filter((e) => (e.type === 'task.completed' || e.type === 'task.failed' || e.type === 'task.skipped') && e.phase === `each[${i}]`);
      expect(settled, `item ${i}`).toHaveLength(1);
    }
    expect(new Set(lines(cwd).map((l) => l.pid)).size).toBeGreaterThan(1);
    checkAttempts(lines(cwd), shown.events, victim.pid, killedAt);
  }, 90_000);
});

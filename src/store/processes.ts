/**
 * Helpers for store tests that need other processes: writers appending to one run at once, and a
 * writer killed with SIGKILL in the middle of its commits. The writer is
 * test/fixtures/stores/store-writer.ts, run through tsx.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { RunStore } from '../engine/ports.js';

const WRITER = fileURLToPath(new URL('../../test/fixtures/stores/store-writer.ts', import.meta.url));

function writer(spec: string, runId: string, count: number, name: string): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', WRITER, spec, runId, String(count), name], { stdio: ['ignore', 'pipe', 'inherit'] });
}

const exited = (p: ChildProcess): Promise<number | null> => new Promise((resolve) => p.once('exit', (code) => resolve(code)));

/** Runs `n` writer processes of `count` commits each on one run; resolves with their exit codes. */
export async function concurrentWriters(spec: string, runId: string, n: number, count: number): Promise<(number | null)[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => exited(writer(spec, runId, count, `w${i}`))));
}

/** Starts a writer, lets it commit for `ms` after its first commit, then kills it with SIGKILL. */
export async function killedWriter(spec: string, runId: string, ms: number): Promise<void> {
  const p = writer(spec, runId, 1_000_000, 'doomed');
  await new Promise<void>((resolve) => p.stdout!.once('data', () => resolve()));
  await new Promise((r) => setTimeout(r, ms));
  const done = exited(p);
  p.kill('SIGKILL');
  await done;
}

/** What one transaction per commit guarantees after any crash: log, run row and task row agree. */
export async function consistency(store: RunStore, runId: string): Promise<{ seqs: boolean; n: number; run: [number, number]; attempt: number }> {
  const events = await store.events(runId);
  const run = (await store.run(runId))!;
  const task = (await store.tasks(runId)).find((t) => t.phase === 'a');
  return { seqs: events.every((e, i) => e.seq === i + 1), n: events.length, run: [run.seq, run.costUsd], attempt: task?.attempt ?? 1 };
}

/** A chain of phases written straight to a store (no engine): the store benches share it. */
import type { RunEvent } from '../src/engine/events.js';
import type { Commit, RunStore, TaskRow } from '../src/engine/ports.js';
import { newRun, task } from '../src/store/testing.js';

export const OUTPUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };

export function phaseCommit(runId: string, i: number, seq: number): Commit {
  const prev = `p${i}`;
  const next = `p${i + 1}`;
  const at = 1_763_000_000_000 + i;
  const events: RunEvent[] = [
    { seq: seq + 1, at, type: 'task.completed', phase: prev, task_id: `${runId}/${prev}`, attempt: 1, output: OUTPUT, extra_keys: [], cost_usd: 0 },
    { seq: seq + 2, at, type: 'task.ready', phase: next, task_id: `${runId}/${next}` },
    { seq: seq + 3, at, type: 'task.claimed', phase: next, task_id: `${runId}/${next}`, attempt: 1, agent: 'x', input: { topic: 't' }, worker: 'w1', lease_expires_at: at + 30_000 },
  ];
  const tasks: TaskRow[] = [
    task(prev, { taskId: `${runId}/${prev}`, status: 'completed', attempt: 1, output: OUTPUT, updatedAt: at }),
    task(next, { taskId: `${runId}/${next}`, status: 'running', attempt: 1, leaseOwner: 'w1', leaseExpiresAt: at + 30_000, input: { topic: 't' }, updatedAt: at }),
  ];
  return { events, tasks, run: { status: 'running', updatedAt: at, endedAt: null, costUsd: 0, wakeAt: null }, expect: [{ phase: prev, attempt: 1, owner: 'w1' }] };
}

/** One writer running a chain of `n` phases on its own run. */
export async function chain(s: RunStore, runId: string, n: number): Promise<void> {
  await s.createRun(newRun(runId, { tasks: [task('p0', { status: 'running', attempt: 1, leaseOwner: 'w1', leaseExpiresAt: 1e15 })] }));
  let seq = 1;
  for (let i = 0; i < n; i++) {
    const r = await s.transact(runId, seq, (delta) => {
      const from = delta.length > 0 ? delta[delta.length - 1]!.seq : seq;
      return { commit: phaseCommit(runId, i, from), value: from + 3 };
    });
    if (!r.ok) throw new Error(`expectation failed at phase ${i}`);
    seq = r.value;
  }
}

/**
 * The rules a commit goes by beside its decisions (worker-commits.ts): the lease conditions it carries,
 * which facts go again after a failure, how a doubtful commit is known to have landed, and whether a
 * fast commit wakes other processes.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Fact, FactResult } from './decide.js';
import type { RunEvent } from './events.js';
import type { LeaseExpectation } from './ports.js';
import type { RunCtx } from './worker-base.js';

/**
 * The lease conditions a commit carries (fencing): a takeover of another worker's attempt holds only
 * if the stored lease is still that attempt's and has expired by the store's clock (or its owner is
 * known dead); a hand-back only if this worker still holds the lease.
 */
export function fences(facts: readonly Fact[], made: readonly RunEvent[], now: number): LeaseExpectation[] | undefined {
  let out: LeaseExpectation[] | undefined;
  for (const e of made) {
    if (e.type !== 'task.lease_expired') continue;
    const f = facts.find((x): x is Extract<Fact, { kind: 'lease_expired' }> => x.kind === 'lease_expired' && x.phase === e.phase && x.attempt === e.attempt);
    // an attempt that waits for an answer holds no lease in the store (its decision checked the owner)
    if (!f || f.waiting) continue;
    (out ??= []).push({ phase: e.phase, attempt: e.attempt, owner: f.owner, ...(f.dead || f.handBack ? {} : { expiredBefore: now }) });
  }
  return out;
}

/** Observed facts: true whatever happens to the commit that carried them (requeue). */
export const OBSERVED = new Set<Fact['kind']>(['outcome', 'cost', 'log', 'record', 'sibling', 'lease_expired', 'warn', 'file']);

export const nobody = (): void => undefined;

/**
 * What a failed commit leaves to find out: whether it landed (the events it made), the facts it
 * carried that wait again, and what was decided for each (their waiters' answer if it landed).
 */
export function doubtOf(made: readonly RunEvent[], again: readonly Fact[], facts: readonly Fact[], results: readonly FactResult[]): RunCtx['doubt'] {
  if (made.length === 0) return undefined;
  const decided = new Map<Fact, FactResult>();
  facts.forEach((f, i) => {
    const r = results[i];
    if (r !== undefined) decided.set(f, r);
  });
  return { events: made, facts: again, decided };
}

/**
 * Whether the events read back hold the doubtful commit's own, every one as it was made: it landed.
 * Another process's commit at the same seqs differs in something (its worker, its task, its attempt):
 * only this worker decides the outcomes of its attempts, and the claims it makes name it.
 */
export function landed(doubt: NonNullable<RunCtx['doubt']>, events: readonly RunEvent[]): boolean {
  const first = doubt.events[0]!.seq;
  const at = events.findIndex((x) => x.seq === first);
  if (at < 0 || events.length - at < doubt.events.length) return false;
  // as JSON, whatever order a store keeps the keys in
  const plain = (x: unknown): unknown => JSON.parse(JSON.stringify(x)) as unknown;
  return doubt.events.every((e, i) => isDeepStrictEqual(plain(events[at + i]), plain(e)));
}

/** Event types that nobody but the committer needs to hear of at once: a task of its own claimed or finished, its logs and costs. */
const QUIET = new Set<string>(['task.claimed', 'task.completed', 'task.ready', 'task.log', 'task.cost', 'task.checkpoint', 'task.sibling_output', 'task.agent_event', 'task.file']);

/**
 * Whether a fast-path commit should wake other processes (PostgreSQL: NOTIFY): when it leaves
 * ready work unclaimed, ends the run, or is anything but this worker's own tasks moving on. A
 * worker's own chain (complete one phase, claim the next) wakes nobody.
 */
export function wakesOthers(ctx: RunCtx, made: readonly RunEvent[], self: string): boolean {
  const state = ctx.state;
  if (state.status !== 'running' || state.ready.size > 0) return true;
  for (const name of state.running) if (state.phases.get(name)!.leaseOwner !== self) return true;
  for (const e of made) if (!QUIET.has(e.type)) return true;
  return false;
}

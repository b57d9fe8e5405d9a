/** Small pieces of the worker loop: worker ids and liveness, backoff, the errors it tells apart. */
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { BatonError } from '../core/errors.js';

/** The decisions threw (a bug): the worker stops loudly instead of retrying the same facts. */
export class DecisionError extends BatonError {
  constructor(cause: unknown) {
    super('internal', `the engine's decisions failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

export function isFault(e: unknown): boolean {
  return e instanceof BatonError && e.code === 'fault-injected';
}

/** Milliseconds on a monotonic clock: durations that a step of the system clock does not bend. */
export function monotonicNow(): number {
  return performance.now();
}

/** Exponential backoff with full jitter in its upper half: `base * 2^(n-1)`, at most `max`, then 50-100% of it. */
export function backoff(n: number, base: number, max: number): number {
  const d = Math.min(max, base * 2 ** Math.max(0, Math.min(30, n - 1)));
  return Math.round(d / 2 + Math.random() * (d / 2));
}

let seqNo = 0;
export function newWorkerId(): string {
  seqNo++;
  return `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}${seqNo}`;
}

/** The prefix of the ids of this host's workers (`host:`): their liveness can be checked here. */
export function thisHostPrefix(): string {
  return `${hostname()}:`;
}

/** A worker id names its host and pid: on this host, a pid that no longer exists is a dead worker. */
export function ownerIsDeadOnThisHost(owner: string): boolean {
  const parts = owner.split(':');
  if (parts.length < 3) return false;
  const [host, pidText] = parts;
  if (host !== hostname()) return false;
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

import { describe, expect, test } from 'vitest';
import type { Engine } from '../api/engine.js';
import { BatonError } from '../core/errors.js';
import { captureIo } from '../../test/helpers/cli-io.js';
import { Foreground } from './foreground.js';

/** An engine whose drive fails as a worker does once the store kept failing past storeRetryMs. */
function failingEngine(code: ConstructorParameters<typeof BatonError>[0]): Engine {
  return {
    store: { location: 'postgres://db/runs' },
    drive: () => Promise.reject(new BatonError(code, 'the store kept failing for 300 s: cannot reach the PostgreSQL store postgres://db/runs: connect ECONNREFUSED')),
  } as unknown as Engine;
}

describe('Foreground.finish when the store stays away', () => {
  test('the error names the run and how to continue it (it used to say only that the store kept failing)', async () => {
    const io = captureIo('/tmp');
    const fg = new Foreground(io, { store: 'postgres://db/runs' }, false);
    const err = await fg.finish(failingEngine('store-unreachable'), 'run_x', undefined).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatonError);
    expect((err as BatonError).code).toBe('store-unreachable');
    expect((err as BatonError).message).toMatch(/kept failing for 300 s/);
    expect((err as BatonError).message).toContain('run run_x stays in postgres://db/runs as last committed: continue it with baton resume run_x --store postgres://db/runs');
  });

  test('--store memory: nothing to continue, the error as it was', async () => {
    const io = captureIo('/tmp');
    const fg = new Foreground(io, { store: 'memory' }, true);
    const err = await fg.finish(failingEngine('store-unreachable'), 'run_x', undefined).catch((e: unknown) => e);
    expect((err as BatonError).message).not.toContain('baton resume');
  });
});

describe('a lost attempt, described', () => {
  test('an owner of this host that is gone is said to be gone; one that lives (or of another host) lost its lease', async () => {
    const { describeEvent } = await import('./run.js');
    const { hostname } = await import('node:os');
    const lost = (owner: string): string => describeEvent({ type: 'task.lease_expired', seq: 1, at: 0, phase: 'a', task_id: 't', attempt: 1, owner } as never);
    // a pid no process has (past the kernel's pid_max)
    expect(lost(`${hostname()}:4194305:w1`)).toContain('(its process is gone)');
    expect(lost(`${hostname()}:${process.pid}:w1`)).toContain('its lease ran out');
    expect(lost('another-host:123:w1')).toContain('its lease ran out');
  });
});

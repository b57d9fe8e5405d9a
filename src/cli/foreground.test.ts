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

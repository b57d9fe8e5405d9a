import { describe, expect, test } from 'vitest';
import { BatonError } from '../core/errors.js';
import type { RunStore } from '../engine/ports.js';
import { captureIo } from '../../test/helpers/cli-io.js';
import { openWhenReachable } from './durable.js';

function refused(): BatonError {
  return new BatonError('store-unreachable', 'cannot reach the PostgreSQL store postgres://h/db: connect ECONNREFUSED 127.0.0.1:5432', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
}

describe('openWhenReachable gives up', () => {
  test('after its wait, the error says it gave up (a worker said only the cause, 5 minutes after its retrying line)', async () => {
    const io = captureIo('/tmp');
    let tries = 0;
    const err = await openWhenReachable(() => (tries++, Promise.reject(refused())), io, true, 250).catch((e: unknown) => e);
    expect(tries).toBeGreaterThan(1);
    expect(io.err()).toMatch(/^store unavailable, retrying: /);
    expect(err).toBeInstanceOf(BatonError);
    expect((err as BatonError).code).toBe('store-unreachable');
    expect((err as BatonError).message).toMatch(/^gave up after \d+ s of retrying: cannot reach the PostgreSQL store/);
  });

  test('a failure said at once is not worded as a wait', async () => {
    const io = captureIo('/tmp');
    const err = await openWhenReachable(() => Promise.reject(refused()), io, false).catch((e: unknown) => e);
    expect(io.err()).toBe('');
    expect((err as BatonError).message).toMatch(/^cannot reach/);
  });

  test('a store that opens after a failure is returned', async () => {
    const io = captureIo('/tmp');
    let tries = 0;
    const store = await openWhenReachable(() => (tries++ === 0 ? Promise.reject(refused()) : Promise.resolve({} as RunStore)), io, true);
    expect(store).toEqual({});
    expect(io.err()).toMatch(/store available again/);
  });
});

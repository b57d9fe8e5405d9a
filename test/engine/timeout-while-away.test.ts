/**
 * An attempt asks for input while the store is away, and its phase timeout would pass before the store
 * answers. The question is a wait for a human from the moment it is asked, so the timeout stops while it
 * is recorded: the gate opens, the answer resumes the attempt, and it completes once. Before, the timeout
 * fired behind the waiting request; its outcome came after the gate and was stale, the attempt was gone,
 * and the task waited on the gate for good (nothing could continue it).
 */
import { expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { BatonError } from '../../src/core/errors.js';
import type { RunStore } from '../../src/engine/ports.js';
import { MemoryStore } from '../../src/store/memory.js';
import { eventsOf, header, wf, withClock } from './helpers.js';
import { engineOn, overriding } from './scenarios/common.js';

const away = (): Error => new BatonError('store-unreachable', 'cannot reach the store: Connection terminated unexpectedly', { cause: Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' }) });

test('the phase timeout does not run while requestInput waits for the store: the gate opens, the answer resumes the attempt', async () => {
  const clock = new ManualClock(1_000);
  const raw = new MemoryStore();
  // the store is away from the moment the agent asks, for 5 s of the clock (the phase timeout is 1 s)
  let upAt = 0;
  const tx: RunStore['transact'] = raw.transact.bind(raw);
  const store = overriding(raw, {
    transact: ((...a: Parameters<RunStore['transact']>) => (clock.now() < upAt ? Promise.reject(away()) : tx(...a))) as RunStore['transact'],
    commitMany: (items: Parameters<NonNullable<RunStore['commitMany']>>[0]) => (clock.now() < upAt ? Promise.reject(away()) : raw.commitMany(items)),
  });
  const asked: number[] = [];
  const engine = engineOn(store, clock, {
    x: async (ctx) => {
      asked.push(ctx.attempt);
      upAt = clock.now() + 5_000;
      const colour = await ctx.requestInput({ question: 'colour?' });
      return { colour: String(colour) };
    },
  });
  const model = wf(`${header()}workflow:
  a: {assign: x, x-timeout_ms: 1000, outputs: {colour: string}, retry: {max_attempts: 2, backoff: constant, initial_delay_ms: 0}}`);
  const id = await engine.create(model, { runId: 'timeout-away' });
  const done = engine.drive(id, undefined);
  // the clock moves past the store's return; the gate opens then
  for (let i = 0; i < 200 && eventsOf(await raw.events(id), 'gate.opened').length === 0; i++) if (!(await clock.tick())) await new Promise((r) => setTimeout(r, 5));
  const opened = eventsOf(await raw.events(id), 'gate.opened');
  expect(opened).toHaveLength(1);
  expect(clock.now()).toBeGreaterThanOrEqual(upAt);
  await engine.respond(id, opened[0]!.gate_id, 'green', 'tester');
  const r = await withClock(clock, done, 600);
  expect(r.status).toBe('completed');
  expect(r.phases['a']!.output).toEqual({ colour: 'green' });
  expect(asked).toEqual([1]);
  const events = await raw.events(id);
  expect(eventsOf(events, 'task.stale_outcome')).toEqual([]);
  expect(eventsOf(events, 'task.attempt_failed')).toEqual([]);
  await engine.close();
});

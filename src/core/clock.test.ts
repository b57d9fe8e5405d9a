import { afterEach, describe, expect, test, vi } from 'vitest';
import { ManualClock } from './clock.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('ManualClock', () => {
  test('time does not move while a registered component is busy, however long it takes (the wall clock says a minute)', async () => {
    const clock = new ManualClock(0);
    let busy = true;
    clock.register(() => !busy);
    let fired = false;
    void clock.sleep(8 * 3_600_000).then(() => (fired = true));
    // each look at the wall clock is a minute later: a clock that gave up after some seconds would move now
    let wall = Date.now();
    vi.spyOn(Date, 'now').mockImplementation(() => (wall += 60_000));
    let looks = 0;
    const ticked = clock.tick();
    const quiet = (async () => {
      while (looks++ < 50) await new Promise<void>((r) => setTimeout(r, 1));
      expect(fired).toBe(false);
      expect(clock.now()).toBe(0);
      busy = false;
    })();
    await Promise.all([ticked, quiet]);
    expect(fired).toBe(true);
    expect(clock.now()).toBe(8 * 3_600_000);
  });
});

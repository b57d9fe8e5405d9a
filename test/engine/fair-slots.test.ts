/**
 * A small run started beside a wide one that holds every slot gets the next slot that frees (max-min
 * fair shares, src/engine/slot-share.ts), on every store. Before, slots went first come, first served:
 * the 3-phase chain below waited for the whole 400-item fan (a user saw a three-phase run take as long
 * as the fan beside it). Driven without a clock: the fan's attempts wait until the test lets one go.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { openStore } from '../../src/api/store.js';
import type { AgentHandler } from '../../src/engine/agent.js';
import { testDatabase } from '../helpers/pg.js';
import { header, settle, until, wf } from './helpers.js';

const db = testDatabase('baton_test_fair');
const dir = mkdtempSync(join(tmpdir(), 'baton-fair-'));
beforeAll(db.create);
afterAll(async () => {
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

let fanText = `${header()}workflow:\n`;
for (let i = 0; i < 400; i++) fanText += `  p${i}: {assign: slow, outputs: {x: number}}\n`;
const fan = wf(fanText);
const chain = wf(`${header()}workflow:
  a: {assign: fast, outputs: {x: number}}
  b: {assign: fast, depends_on: [a], inputs: {x: a.x}, outputs: {x: number}}
  c: {assign: fast, depends_on: [b], inputs: {x: b.x}, outputs: {x: number}}
`);

/** The fan's agent waits until the test lets its attempt go (`waiting`, one at a time, or all with letAllGo); the chain's returns at once. */
function heldFan(): { agents: Record<string, AgentHandler>; waiting: (() => void)[]; letAllGo: () => void } {
  const waiting: (() => void)[] = [];
  let free = false;
  return {
    waiting,
    letAllGo: () => {
      free = true;
      for (const w of waiting.splice(0)) w();
    },
    agents: {
      slow: async () => {
        if (!free) await new Promise<void>((r) => waiting.push(r));
        return { x: 1 };
      },
      fast: (ctx) => ({ x: ((ctx.input['x'] as number | undefined) ?? 0) + 1 }),
    },
  };
}

describe.each(['memory', 'sqlite', 'postgres'] as const)('slots shared between runs on the %s store', (kind) => {
  test('a 3-phase run beside a 400-item fan holding all 4 slots completes on the first slot that frees', async () => {
    const store = await openStore(kind === 'memory' ? 'memory' : kind === 'sqlite' ? join(dir, 'fair.db') : db.url, { cwd: dir });
    const { agents, waiting, letAllGo } = heldFan();
    const engine = createEngine({ store, concurrency: 4, agents });
    try {
      const fanDone = engine.run(fan, {});
      fanDone.catch(() => undefined); // awaited below; a failed check closes the engine first
      await until(() => waiting.length === 4, 'the fan holding every slot');
      let chainDone = false;
      // created, and held by the worker (start() hands it over as it resolves); with no slot free it waits
      const handle = await engine.start(chain, {});
      const chainResult = handle.result().then((r) => {
        chainDone = true;
        return r;
      });
      chainResult.catch(() => undefined);
      await settle();
      expect(chainDone).toBe(false); // no slot yet
      let released = 0;
      while (!chainDone && released < 10) {
        waiting.shift()!();
        released++;
        // the slot that freed was taken again (by the chain for its three phases, then by the fan)
        await until(() => waiting.length === 4, 'the slot taken again');
        await settle();
      }
      expect(chainDone).toBe(true);
      expect(released).toBe(1);
      const r = await chainResult;
      expect(r.status).toBe('completed');
      expect(r.phases['c']?.output).toEqual({ x: 3 });
      letAllGo();
      const f = await fanDone;
      expect(f.status).toBe('completed');
      expect(Object.values(f.phases).filter((p) => p.status === 'completed')).toHaveLength(400);
    } finally {
      letAllGo();
      await engine.close();
      await store.close();
    }
  }, 60_000);
});

describe.each(['sqlite', 'postgres'] as const)('a serving worker (baton worker) on the %s store', (kind) => {
  test('takes up a run started beside a fan that holds every slot, and runs it on the next slots that free', async () => {
    const store = await openStore(kind === 'sqlite' ? join(dir, 'serve-fair.db') : db.url, { cwd: dir });
    const { agents, waiting, letAllGo } = heldFan();
    const engine = createEngine({ store, concurrency: 4, agents });
    const stop = new AbortController();
    const serving = engine.serve(stop.signal);
    try {
      const { id: big } = await engine.start(fan, { detach: true });
      await until(() => waiting.length === 4, 'the fan holding every slot');
      const { id: small } = await engine.start(chain, { detach: true });
      // the fan's attempts end one at a time, every 20 ms (real time: the serving worker's look for other
      // runs comes about once a second while its slots are taken)
      let released = 0;
      const t0 = performance.now();
      while ((await store.run(small))?.status !== 'completed' && performance.now() - t0 < 10_000) {
        waiting.shift()?.();
        released++;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect((await store.run(small))?.status).toBe('completed');
      // taken up at the next look (about a second: ~50 releases), not after the fan's 400 items
      expect(released).toBeLessThan(200);
      letAllGo();
      await until(async () => (await store.run(big))?.status === 'completed', 'the fan completed', 20_000);
    } finally {
      letAllGo();
      stop.abort();
      await serving;
      await engine.close();
      await store.close();
    }
  }, 60_000);
});

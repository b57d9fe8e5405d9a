/**
 * Streams and run handles on quiet runs while another run commits: on memory and SQLite each reader wakes
 * for its own run's commits only (the store's takeChanged names the runs that changed, per consumer), not
 * at every commit of every run. The readers are another engine's (its handles on runs it does not hold,
 * and a server over it); the busy run is driven by an engine on the same store object, or on a second
 * store object on the same SQLite file (another process). Each of the busy run's steps waits until the
 * reading engine has seen the commits before it, so that every commit reaches the readers on its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { WorkflowSpec } from '../../src/api/spec.js';
import type { RunEvent } from '../../src/engine/events.js';
import type { RunStore } from '../../src/engine/ports.js';
import { createServerApp } from '../../src/server/app.js';
import { sseMessages } from '../../src/server/client.js';
import { parseKeysEnv } from '../../src/server/keys.js';
import { MemoryStore } from '../../src/store/memory.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { GATED } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-quiet-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** The store the busy run is driven on, and the one the readers read (the same object, or another on the file). */
const cases: [string, () => { driver: RunStore; reader: RunStore }][] = [
  ['memory', () => ((s) => ({ driver: s, reader: s }))(new MemoryStore())],
  ['sqlite, one store object', () => ((s) => ({ driver: s, reader: s }))(openSqliteStore(join(dir, `q${files++}.db`), { pollMs: 10 }))],
  [
    'sqlite, a second store object on the file (another process)',
    () => {
      const file = join(dir, `q${files++}.db`);
      return { driver: openSqliteStore(file, { pollMs: 10 }), reader: openSqliteStore(file, { pollMs: 10 }) };
    },
  ],
];

const STEPS = 30;
const QUIET = 6;
const KEY = 'quiet-reader-key-0123456789';
const BUSY = `openintent: "1.0"
info: {name: busy}
workflow:
${Array.from({ length: STEPS }, (_, i) => `  p${i}: {assign: step, outputs: {n: number}${i > 0 ? `, depends_on: [p${i - 1}]` : ''}}`).join('\n')}
`;

/** The store, counting the reads of each run (events, run, tasks). */
function counting(store: RunStore): { store: RunStore; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  const counted = new Proxy(store, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver) as unknown;
      if (typeof v !== 'function') return v;
      const f = (v as (...a: unknown[]) => unknown).bind(target);
      if (key !== 'events' && key !== 'run' && key !== 'tasks') return f;
      return (...a: unknown[]) => {
        reads.set(a[0] as string, (reads.get(a[0] as string) ?? 0) + 1);
        return f(...a);
      };
    },
  });
  return { store: counted, reads };
}

/** A follower of a run's events (a handle's iterator, a stream's messages): the last seq it saw, and a wait for a seq. */
class Seen {
  seq = 0;
  ended = false;
  private readonly waits = new Set<() => void>();
  saw(seq: number): void {
    this.seq = Math.max(this.seq, seq);
    for (const w of [...this.waits]) w();
  }
  end(): void {
    this.ended = true;
    for (const w of [...this.waits]) w();
  }
  until(seq: number): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.seq < seq && !this.ended) return;
        this.waits.delete(check);
        resolve();
      };
      this.waits.add(check);
      check();
    });
  }
}

function follow(events: AsyncIterable<RunEvent>): Seen {
  const s = new Seen();
  void (async () => {
    for await (const e of events) s.saw(e.seq);
    s.end();
  })();
  return s;
}

function followStream(body: ReadableStream<Uint8Array>): Seen {
  const s = new Seen();
  void (async () => {
    try {
      for await (const m of sseMessages(body)) {
        if (m.id !== undefined) s.saw(Number(m.id));
        if (m.event === 'end') break;
      }
    } catch {
      // cancelled at the end of the test
    }
    s.end();
  })();
  return s;
}

describe.each(cases)('quiet streams and handles (%s)', (_name, open) => {
  test('a commit of one run wakes only its readers: the quiet runs are read a few times, not at each commit', async () => {
    const { driver, reader: inner } = open();
    const { store: reader, reads } = counting(inner);
    const readers = createEngine({ store: reader, stubAgents: true });
    const server = await createServerApp({ engine: readers, keys: parseKeysEnv(`carol:reader:${KEY}`), log: () => undefined });
    const bodies: ReadableStream<Uint8Array>[] = [];
    let busySeen: Seen | undefined;
    const drivingEngine = createEngine({
      store: driver,
      agents: {
        // each step waits until the readers' engine saw every commit before it
        step: async (ctx) => {
          const rec = await driver.run(ctx.runId);
          while (!busySeen) await Promise.resolve();
          await busySeen.until(rec!.seq);
          return { n: 1 };
        },
      },
    });
    try {
      // the quiet runs wait at their gate (created on the readers' engine, which drives nothing)
      const gated = WorkflowSpec.fromString(GATED);
      const quiet = await Promise.all(Array.from({ length: QUIET }, () => readers.create(gated)));
      const followers: Seen[] = [];
      for (const id of quiet) {
        followers.push(follow(readers.handle(id).events()));
        const res = await server.app.request(`/runs/${id}/events`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${KEY}` } });
        expect(res.status).toBe(200);
        bodies.push(res.body!);
        followers.push(followStream(res.body!));
      }
      const quietSeq = await Promise.all(quiet.map(async (id) => (await inner.run(id))!.seq));
      await Promise.all(followers.map((f, i) => f.until(quietSeq[Math.floor(i / 2)]!)));
      const before = quiet.reduce((n, id) => n + (reads.get(id) ?? 0), 0);

      const busy = await drivingEngine.start(WorkflowSpec.fromString(BUSY), { keepEvents: false });
      busySeen = follow(readers.handle(busy.id).events());
      expect((await busy.result()).status).toBe('completed');
      await busySeen.until(Infinity);
      const busyEvents = (await inner.events(busy.id)).length;
      expect(busyEvents).toBeGreaterThan(2 * STEPS);

      // each quiet run has a handle and a stream: both woke once or twice (the hub's first look, a
      // safety-net timeout), where each used to read the store at every commit of the busy run
      const quietReads = quiet.reduce((n, id) => n + (reads.get(id) ?? 0), 0) - before;
      expect(quietReads / QUIET).toBeLessThan(16);
      for (const id of quiet) expect((await inner.run(id))!.seq).toBe(quietSeq[quiet.indexOf(id)]);

      // and a commit of a quiet run reaches its readers: cancelled (by the driving engine), each ends
      for (const id of quiet) await drivingEngine.cancel(id, 'done');
      await Promise.all(followers.map((f) => f.until(Infinity)));
      for (const [i, f] of followers.entries()) expect(f.seq).toBe((await inner.run(quiet[Math.floor(i / 2)]!))!.seq);
    } finally {
      for (const b of bodies) await b.cancel().catch(() => undefined);
      server.close();
      await drivingEngine.close();
      await readers.close();
      await driver.close();
      if (inner !== driver) await inner.close();
    }
  });
});

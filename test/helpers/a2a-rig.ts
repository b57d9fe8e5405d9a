/**
 * What the tests of `x-a2a` agents share: the one-phase workflow whose agent is an A2A peer, and an
 * engine over a real store that keeps its events and waits for one by type.
 */
import { join } from 'node:path';
import { createEngine, openStore, type Clock, type Engine, type RunEvent, type RunStore } from '@baton-run/baton';

/** A workflow of one phase `ask` whose agent `peer` is reached over A2A at `url`; the trigger's question and mode are its inputs. */
export const a2aFlow = (url: string, opts: { skill?: string; streaming?: boolean; tokenEnv?: string } = {}): string => `openintent: "1.0"
info: {name: via-a2a}
agents:
  peer:
    x-a2a: {url: "${url}"${opts.skill ? `, skill: ${opts.skill}` : ''}${opts.streaming === false ? ', streaming: false' : ''}${opts.tokenEnv ? `, token_env: ${opts.tokenEnv}` : ''}}
x-trigger: {question: string, mode: string}
workflow:
  ask:
    assign: peer
    inputs: {question: $trigger.question, mode: $trigger.mode}
    outputs: {answer: string}
`;

export interface EngineRig {
  engine: Engine;
  store: RunStore;
  events: RunEvent[];
  /** The first event of `type`, already seen or to come. */
  waitFor(type: string): Promise<RunEvent>;
}

/**
 * An engine over a store (`store`: a spec, else a new SQLite file in `dir`), closed by `cleanup`'s caller
 * (its close is pushed there). A `clock` moves time by hand: the store then decides in it, not in the machine's.
 */
export async function engineRig(o: { dir: string; cleanup: (() => Promise<void>)[]; store?: string; clock?: Clock }): Promise<EngineRig> {
  const store = await openStore(o.store ?? join(o.dir, `${Math.random().toString(36).slice(2)}.db`), { cwd: o.dir, ...(o.clock ? { databaseClock: false } : {}) });
  const events: RunEvent[] = [];
  const waiters: { type: string; resolve: (e: RunEvent) => void }[] = [];
  const engine = createEngine({
    store,
    ...(o.clock ? { clock: o.clock } : {}),
    onEvent: (e) => {
      events.push(e);
      for (const w of waiters.filter((x) => x.type === e.type)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
    },
  });
  o.cleanup.push(async () => {
    await engine.close();
    await store.close();
  });
  return {
    engine,
    store,
    events,
    waitFor: (type) => {
      const seen = events.find((e) => e.type === type);
      return seen ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ type, resolve }));
    },
  };
}

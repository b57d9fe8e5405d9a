/**
 * Agents that return (or throw, or report) anything at all: the run always ends with a result and
 * never throws; a bad output fails its attempt with a named code under the retry policy.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { runWorkflow } from '../../src/api/run.js';
import type { AgentHandler } from '../../src/engine/agent.js';
import { MemoryStore } from '../../src/store/memory.js';
import { expectReplays, header, wf, withClock } from './helpers.js';

/** One phase, no declared outputs (any object is accepted), two attempts, no delay. */
const ONE = wf(`${header()}workflow:
  a: {assign: x, retry: {max_attempts: 2, initial_delay_ms: 0}}
  b: {assign: y, depends_on: [a]}`);

async function runWith(x: AgentHandler) {
  const store = new MemoryStore();
  let calls = 0;
  const result = await runWorkflow(ONE, {
    store,
    agents: {
      x: (ctx) => {
        calls++;
        return x(ctx);
      },
      y: () => ({}),
    },
  });
  return { result, store, calls };
}

function cyclic(): unknown {
  const o: Record<string, unknown> = { a: 1 };
  o['self'] = o;
  return o;
}
function deep(levels: number): unknown {
  let v: unknown = { leaf: true };
  for (let i = 0; i < levels; i++) v = { v };
  return v;
}
function revoked(): unknown {
  const r = Proxy.revocable({}, {});
  r.revoke();
  return r.proxy;
}

const INVALID_OUTPUTS: [string, () => unknown][] = [
  ['a cycle', cyclic],
  ['a cycle through an array', () => {
    const arr: unknown[] = [];
    arr.push({ arr });
    return { arr };
  }],
  ['a getter that throws', () => ({ get boom(): never { throw new Error('getter'); } })],
  ['a Proxy whose ownKeys throws', () => new Proxy({}, { ownKeys: () => { throw new Error('keys'); } })],
  ['a Proxy whose get throws', () => new Proxy({ a: 1 }, { get: () => { throw new Error('get'); } })],
  ['a Proxy whose getPrototypeOf throws', () => new Proxy({}, { getPrototypeOf: () => { throw new Error('proto'); } })],
  ['a revoked Proxy', revoked],
  ['a revoked Proxy inside', () => ({ inner: revoked() })],
  ['20,000 levels of nesting', () => deep(20_000)],
  ['20,000 levels of arrays', () => {
    let v: unknown = [];
    for (let i = 0; i < 20_000; i++) v = [v];
    return { v };
  }],
  ['a BigInt', () => ({ n: 10n })],
  ['a function', () => ({ f: () => 1 })],
  ['a symbol', () => ({ s: Symbol('s') })],
  ['NaN', () => ({ n: NaN })],
  ['a Date', () => ({ d: new Date(0) })],
  ['a Map', () => new Map([['a', 1]])],
  ['a class instance', () => new (class Thing { a = 1; })()],
  ['an array', () => [1, 2]],
  ['a string', () => 'text'],
  ['a number', () => 42],
];

describe('invalid outputs fail the attempt with InvalidOutput, retried under the policy', () => {
  for (const [name, make] of INVALID_OUTPUTS) {
    test(name, async () => {
      const { result, store, calls } = await runWith(() => make());
      expect(result.status).toBe('failed');
      const code = result.phases['a']!.error?.code;
      // a string / number / array is not an object of outputs: the contract check names it (returning nothing
      // is allowed: RFC-0024 §9, in run.test.ts)
      expect(['InvalidOutput', 'OutputTypeMismatchError']).toContain(code);
      if (!['a string', 'a number', 'an array'].includes(name)) expect(code).toBe('InvalidOutput');
      expect(result.phases['a']!.attempts).toBe(2);
      expect(calls).toBe(2);
      expect(result.phases['b']!.error?.code).toBe('UpstreamFailed');
      expect(JSON.parse(JSON.stringify(result.events))).toEqual(result.events);
      await expectReplays(store, result);
    });
  }
  test('the same values resolved from a promise', async () => {
    for (const [name, make] of INVALID_OUTPUTS.slice(0, 12)) {
      const { result } = await runWith(() => Promise.resolve().then(make));
      expect(result.phases['a']!.status, name).toBe('failed');
      // resolving a promise with a Proxy reads its `then` (JavaScript's own resolution): a throwing trap rejects the promise
      if (!name.includes('Proxy')) expect(result.phases['a']!.error?.code, name).toBe('InvalidOutput');
    }
  });
  test('a sparse array of a billion items is refused, not walked', async () => {
    const big: unknown[] = [];
    big.length = 1e9;
    const { result } = await runWith(() => ({ big }));
    expect(result.phases['a']!.error?.code).toBe('InvalidOutput');
  });
});

describe('odd but valid outputs are recorded as JSON', () => {
  test('a huge string, a __proto__ key, a null-prototype object, sparse arrays, undefined members', async () => {
    const huge = 'x'.repeat(16 * 1024 * 1024);
    const proto = JSON.parse('{"__proto__": {"polluted": true}, "k": 1}') as unknown;
    const nullProto = Object.assign(Object.create(null) as object, { a: 1 });
    const out = { huge, proto, nullProto, sparse: [1, , 3], gone: undefined, deep: deep(500), zero: -0 };
    const { result } = await runWith(() => out);
    expect(result.status).toBe('completed');
    const rec = result.phases['a']!.output!;
    expect((rec['huge'] as string).length).toBe(huge.length);
    expect(Object.keys(rec['proto'] as object)).toEqual(['__proto__', 'k']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(rec['sparse']).toEqual([1, null, 3]);
    expect('gone' in rec).toBe(false);
    expect(JSON.stringify(rec['deep'])).toBe(JSON.stringify(deep(500)));
    // -0 is kept as JSON keeps it: the memory store agrees with the durable ones
    expect(Object.is(rec['zero'], 0)).toBe(true);
  });
});

describe('invalid costs fail the attempt with InvalidCost (not retried)', () => {
  for (const [name, cost] of [
    ['a string', '5.00'],
    ['a negative number', -5],
    ['1e400 (Infinity)', Number('1e400')],
    ['NaN', NaN],
    ['null', null],
    ['an object', { usd: 1 }],
  ] as [string, unknown][]) {
    test(`_cost: ${name}`, async () => {
      const { result, calls } = await runWith(() => ({ v: 1, _cost: cost }));
      expect(result.phases['a']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'InvalidCost', retryable: false } });
      expect(calls).toBe(1);
      expect(result.cost_usd).toBe(0);
    });
  }
  for (const [name, cost] of [
    ['a string', '5'],
    ['Infinity', Infinity],
    ['-1', -1],
    ['a BigInt', 5n],
  ] as [string, unknown][]) {
    test(`ctx.reportCost(${name}), even when the agent swallows the error`, async () => {
      for (const swallow of [false, true]) {
        const { result } = await runWith((ctx) => {
          try {
            ctx.reportCost(cost as number);
          } catch (e) {
            if (!swallow) throw e;
          }
          return { v: 1 };
        });
        expect(result.phases['a']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'InvalidCost' } });
      }
    });
  }
});

describe('hostile throws and thenables', () => {
  const THROWN: [string, () => unknown][] = [
    ['null', () => null],
    ['undefined', () => undefined],
    ['a revoked Proxy', revoked],
    ['an error whose message getter throws', () => Object.defineProperty(new Error('x'), 'message', { get: () => { throw new Error('no'); } })],
    ['an object whose code getter throws', () => ({ get code(): never { throw new Error('no'); } })],
    ['a cycle', cyclic],
  ];
  for (const [name, make] of THROWN) {
    test(`throwing ${name}`, async () => {
      const { result } = await runWith(() => {
        throw make();
      });
      expect(result.status).toBe('failed');
      expect(result.phases['a']!.status).toBe('failed');
      expect(typeof result.phases['a']!.error?.code).toBe('string');
      expect(JSON.parse(JSON.stringify(result.events))).toEqual(result.events);
    });
  }
  test('a thenable whose then getter throws; a rejected promise of a revoked Proxy', async () => {
    const a = await runWith(() => ({ get then(): never { throw new Error('then'); } }));
    expect(a.result.phases['a']!.status).toBe('failed');
    const b = await runWith(() => Promise.reject(revoked()));
    expect(b.result.phases['a']!.status).toBe('failed');
  });
});

describe('agents that never settle', () => {
  test('a phase timeout fails each attempt with Timeout, under the retry policy', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, x-timeout_ms: 1000, retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 10}}`);
    const clock = new ManualClock(0);
    let calls = 0;
    const result = await withClock(clock, runWorkflow(model, { store: new MemoryStore(), clock, leaseMs: 86_400_000, agents: { x: () => (calls++, new Promise(() => undefined)) } }));
    expect(result.phases['a']).toMatchObject({ status: 'failed', attempts: 3, error: { code: 'Timeout' } });
    expect(calls).toBe(3);
    // each aborted attempt keeps its task for the abort grace (5 s) before the next one starts: never two at once
    expect(clock.now()).toBe(3 * 1000 + 2 * 5000);
  });

  test('a run timeout ends a run whose agent ignores its signal and never settles', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x}
  b: {assign: x, depends_on: [a]}`);
    const clock = new ManualClock(0);
    const result = await withClock(clock, runWorkflow(model, { store: new MemoryStore(), clock, leaseMs: 86_400_000, timeoutMs: 5000, agents: { x: () => new Promise(() => undefined) } }));
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'RunTimeout' });
    expect(result.phases['a']!.status).toBe('cancelled');
    expect(clock.now()).toBe(5000);
  });
});

describe('property: whatever an agent returns, the run ends with a result', () => {
  const hostile = fc.oneof(
    fc.anything({ maxDepth: 4, withBigInt: true, withBoxedValues: true, withDate: true, withMap: true, withSet: true, withNullPrototype: true, withObjectString: true, withSparseArray: true, withTypedArray: true }),
    // made inside the property: fast-check itself cannot hold a revoked Proxy (it probes values with `in`)
    fc.constantFrom(...INVALID_OUTPUTS.map(([, make]) => make)),
    fc.dictionary(fc.string(), fc.anything({ maxDepth: 3 })).map((o) => ({ ...o, _cost: o['_cost'] })),
    fc.tuple(fc.dictionary(fc.string(), fc.jsonValue()), fc.oneof(fc.double(), fc.string(), fc.constant(undefined))).map(([o, c]) => ({ ...o, _cost: c })),
  );
  test('never throws; completes with JSON, or fails with a named code', async () => {
    await fc.assert(
      fc.asyncProperty(hostile, fc.boolean(), async (made, asThrow) => {
        const value: unknown = INVALID_OUTPUTS.some(([, make]) => make === made) ? (made as () => unknown)() : made;
        const { result } = await runWith(() => {
          if (asThrow) throw value;
          return value;
        });
        expect(['completed', 'failed']).toContain(result.status);
        const a = result.phases['a']!;
        if (a.status === 'completed') {
          expect(asThrow).toBe(false);
          expect(JSON.parse(JSON.stringify(a.output))).toEqual(a.output);
          expect('_cost' in a.output!).toBe(false);
        } else {
          expect(a.status).toBe('failed');
          expect(typeof a.error?.code).toBe('string');
          if (!asThrow) expect(['InvalidOutput', 'InvalidCost', 'OutputTypeMismatchError']).toContain(a.error?.code);
        }
        expect(JSON.parse(JSON.stringify(result.events))).toEqual(result.events);
      }),
      { numRuns: 300 },
    );
  });
});

describe('a "__proto__" key is data', () => {
  test('it reaches the next phase as an own key (ctx.input, getSiblingOutput), never as a prototype', async () => {
    const model = wf(`${header()}workflow:
  a: {assign: x, outputs: {p: object}}
  b: {assign: y, depends_on: [a], inputs: {p: a.p}}`);
    let seen: Record<string, unknown> = {};
    let sibling: Record<string, unknown> | undefined;
    const result = await runWorkflow(model, {
      store: new MemoryStore(),
      agents: {
        x: () => JSON.parse('{"p": {"__proto__": {"polluted": 1}, "k": 2}}') as unknown,
        y: (ctx) => {
          seen = ctx.input['p'] as Record<string, unknown>;
          sibling = ctx.getSiblingOutput('a')?.['p'] as Record<string, unknown> | undefined;
          return {};
        },
      },
    });
    expect(result.status).toBe('completed');
    for (const p of [seen, sibling!]) {
      expect(Object.keys(p)).toEqual(['__proto__', 'k']);
      expect(Object.getPrototypeOf(p)).toBe(Object.prototype);
      expect(p['polluted']).toBeUndefined();
    }
    expect(JSON.stringify(seen)).toBe('{"__proto__":{"polluted":1},"k":2}');
  });
});

describe('hostile ctx.requestInput arguments fail the attempt with InvalidInputRequest', () => {
  const BAD: [string, () => unknown][] = [
    ['no question', () => ({})],
    ['a number question', () => ({ question: 5 })],
    ['choices not an array', () => ({ question: 'q', choices: 'yes' })],
    ['a function among the choices', () => ({ question: 'q', choices: [() => 1] })],
    ['cyclic choices', () => ({ question: 'q', choices: [cyclic()] })],
    ['a schema that is not an object', () => ({ question: 'q', schema: 'string' })],
    ['timeoutMs NaN', () => ({ question: 'q', timeoutMs: NaN })],
    ['timeoutMs Infinity', () => ({ question: 'q', timeoutMs: Infinity })],
    ['timeoutMs negative', () => ({ question: 'q', timeoutMs: -1 })],
    // a gate expiry no store holds (PostgreSQL's bigint refused the commit, 22003, and the worker retried it forever)
    ['timeoutMs past a deadline a store holds', () => ({ question: 'q', timeoutMs: 1e19 })],
    ['a request whose getter throws', () => ({ get question(): never { throw new Error('no'); } })],
    ['a revoked Proxy', revoked],
  ];
  for (const [name, make] of BAD) {
    test(name, async () => {
      const { result, store } = await runWith(async (ctx) => ({ v: await ctx.requestInput(make() as never) }));
      expect(result.status).toBe('failed');
      expect(result.phases['a']).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'InvalidInputRequest' } });
      expect(result.gates).toEqual([]);
      await expectReplays(store, result);
    });
  }
});

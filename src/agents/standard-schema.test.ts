/** defineIO / defineAgent with Standard Schema libraries: zod 4, zod 3, valibot, arktype, and an async one. */
import { type } from 'arktype';
import * as v from 'valibot';
import { describe, expect, expectTypeOf, test } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod3';
import type { StandardSchemaV1 } from '../core/standard-schema.js';
import { parseWorkflow } from '../workflow/compile.js';
import { defineAgent, defineIO } from './define.js';
import type { AgentContext } from '../engine/agent.js';

const OUT = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] };

describe('defineIO accepts any Standard Schema', () => {
  test('zod 4: JSON Schema by Standard JSON Schema, validated by zod (transforms apply), types inferred', () => {
    const io = defineIO({ inputs: z.object({ s: z.string().transform((x) => x.length) }), outputs: z.object({ n: z.number() }) });
    expect(io.inputs).toMatchObject({ type: 'object', properties: { s: { type: 'string' } }, required: ['s'] });
    expect(io.outputs).toMatchObject(OUT);
    expect(io.validateInput({ s: 'abc' })).toEqual({ ok: true, value: { s: 3 } });
    expect(io.validateInput({ s: 1 })).toMatchObject({ ok: false, error: expect.stringMatching(/^\$\.s: /) as unknown });
    expect(io.warnings).toEqual([]);
    expectTypeOf<ReturnType<typeof io.validateInput>>().toEqualTypeOf<{ ok: true; value: { s: number } } | { ok: false; error: string }>();
  });

  test('arktype: converted by its ~standard.jsonSchema, validated by arktype', () => {
    const io = defineIO({ inputs: type({ s: 'string' }), outputs: type({ n: 'number' }) });
    expect(io.outputs).toMatchObject(OUT);
    expect(io.validateOutput({ n: 1 })).toEqual({ ok: true, value: { n: 1 } });
    expect(io.validateOutput({ n: 'x' })).toMatchObject({ ok: false, error: expect.stringMatching(/^\$\.n: /) as unknown });
    expectTypeOf<ReturnType<typeof io.validateOutput>>().toEqualTypeOf<{ ok: true; value: { n: number } } | { ok: false; error: string }>();
  });

  test('valibot: converted by @valibot/to-json-schema (installed here), validated by valibot', () => {
    const io = defineIO({ outputs: v.object({ n: v.number() }) });
    expect(io.outputs).toMatchObject(OUT);
    expect(io.validateOutput({ n: 2 }).ok).toBe(true);
    expect(io.validateOutput({})).toMatchObject({ ok: false, error: expect.stringMatching(/^\$\.n: /) as unknown });
    expect(io.unchecked).toEqual({});
    expectTypeOf<ReturnType<typeof io.validateOutput>>().toEqualTypeOf<{ ok: true; value: { n: number } } | { ok: false; error: string }>();
  });

  test('zod 3: no JSON Schema converter, so validated at run time only, and a warning says so', () => {
    const io = defineIO({ inputs: z3.object({ s: z3.string() }) });
    expect(io.inputs).toEqual({});
    expect(io.unchecked.inputs).toMatch(/zod/);
    expect(io.warnings).toHaveLength(1);
    expect(io.warnings[0]).toMatch(/static contract checks are skipped/);
    expect(io.validateInput({ s: 'x' })).toEqual({ ok: true, value: { s: 'x' } });
    expect(io.validateInput({ s: 1 }).ok).toBe(false);
    expectTypeOf<ReturnType<typeof io.validateInput>>().toEqualTypeOf<{ ok: true; value: { s: string } } | { ok: false; error: string }>();
  });

  test('a schema whose validation is asynchronous: defineAgent awaits it; the sync validateInput says why it cannot', async () => {
    const slow: StandardSchemaV1<{ n: number }> = {
      '~standard': { version: 1, vendor: 'custom', validate: (x) => Promise.resolve(typeof (x as { n?: unknown }).n === 'number' ? { value: x as { n: number } } : { issues: [{ message: 'need n', path: [{ key: 'n' }] }] }) },
    };
    const io = defineIO({ inputs: slow, outputs: slow });
    expect(io.validateInput({ n: 1 })).toMatchObject({ ok: false, error: expect.stringMatching(/asynchronously/) as unknown });
    const agent = defineAgent({ id: 'a', version: '1.0.0', io, handler: (ctx) => ({ n: ctx.input.n + 1 }) });
    const ctx = { input: { n: 1 }, log: () => undefined, record: () => undefined } as unknown as AgentContext;
    await expect(agent(ctx)).resolves.toEqual({ n: 2 });
    await expect(agent({ ...ctx, input: {} })).rejects.toMatchObject({ code: 'InputValidationError', message: expect.stringMatching(/\$\.n: need n/) as unknown });
  });

  test('defineAgent output types: the schema\'s when it has one (a wrong return fails tsc), else the handler\'s', () => {
    const typed = defineAgent({ id: 'a', version: '1.0.0', io: defineIO({ outputs: z.object({ n: z.number() }) }), handler: () => ({ n: 1 }) });
    expectTypeOf<Awaited<ReturnType<typeof typed>>>().toEqualTypeOf<{ n: number }>();
    // @ts-expect-error the zod schema says n is a number
    defineAgent({ id: 'a', version: '1.0.0', io: defineIO({ outputs: z.object({ n: z.number() }) }), handler: () => ({ n: 'one' }) });
    const json = defineAgent({ id: 'a', version: '1.0.0', io: defineIO({ outputs: { type: 'object' } }), handler: () => ({ draft: 'd' }) });
    expectTypeOf<Awaited<ReturnType<typeof json>>>().toEqualTypeOf<{ draft: string }>();
    expect([typed.agentId, json.agentId]).toEqual(['a', 'a']);
  });

  test('a defineAgent side without JSON Schema is a schema-not-comparable warning in the contract checks', () => {
    const drafter = defineAgent({ id: 'drafter', version: '1.0.0', io: defineIO({ outputs: z3.object({ draft: z3.string() }) }), handler: () => ({ draft: 'd' }) });
    const r = parseWorkflow('openintent: "1.0"\ninfo: {name: w}\nagents:\n  drafter: {}\nworkflow:\n  a: {assign: drafter, outputs: {draft: string}}\n', {
      bound: { module: 'agents.ts', agents: { drafter: { version: drafter.version, contract: drafter.contract } } },
    });
    expect(r.ok).toBe(true);
    expect(r.diagnostics.map((d) => [d.code, d.severity, d.path.join('.')])).toContainEqual(['schema-not-comparable', 'warning', 'agents.drafter']);
  });
});

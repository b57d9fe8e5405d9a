import { describe, expect, expectTypeOf, test } from 'vitest';
import { z } from 'zod';
import { defineIO } from './define.js';

describe('defineIO (AIP-16)', () => {
  test('JSON Schema: the canonical blocks, files default to {}, validateInput ok / error', () => {
    const io = defineIO({ inputs: { type: 'object', required: ['topic'], properties: { topic: { type: 'string' } } } });
    expect(io.inputsFiles).toEqual({});
    expect(io.outputsFiles).toEqual({});
    expect(io.inputs['$schema']).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(io.outputs).toEqual({});
    expect(io.validateInput({ topic: 'x' })).toEqual({ ok: true, value: { topic: 'x' } });
    const bad = io.validateInput({ topic: 3 });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toMatch(/^\$\.topic: /);
  });

  test('zod: converted to JSON Schema, validated by zod (transforms apply), types inferred', () => {
    const io = defineIO({ inputs: z.object({ n: z.string().transform((s) => s.length) }), outputs: z.object({ ok: z.boolean() }) });
    expect(io.inputs).toMatchObject({ type: 'object', properties: { n: { type: 'string' } }, required: ['n'] });
    expect(io.validateInput({ n: 'abc' })).toEqual({ ok: true, value: { n: 3 } });
    expect(io.validateInput({}).ok).toBe(false);
    expectTypeOf<ReturnType<typeof io.validateInput>>().toEqualTypeOf<{ ok: true; value: { n: number } } | { ok: false; error: string }>();
  });

  test('_workflowFsRoot: required (a string) when files are declared', () => {
    const io = defineIO({ inputs: { type: 'object', properties: { _workflowFsRoot: { type: 'string' } } }, inputsFiles: { notes: { path: 'notes.md' } } });
    expect(io.validateInput({}).ok).toBe(false);
    expect(io.validateInput({ _workflowFsRoot: '/tmp/run-1' }).ok).toBe(true);
    expect(defineIO({}).validateInput({ _workflowFsRoot: 3 }).ok).toBe(false);
  });

  test('a closed inputs schema that refuses the injected root says so, on the root', () => {
    const closed = { type: 'object', properties: { x: { type: 'integer' } }, additionalProperties: false } as const;
    for (const io of [defineIO({ inputs: closed, outputsFiles: { o: { path: 'o.txt' } } }), defineIO({ inputs: z.object({ x: z.number() }).strict(), inputsFiles: { i: { path: 'i.txt' } } })]) {
      const r = io.validateInput({ x: 1, _workflowFsRoot: '/tmp/r' });
      expect(r.ok).toBe(false);
      expect(!r.ok && r.error).toMatch(/^\$\._workflowFsRoot: /);
      // any other problem is still the schema's own
      const other = io.validateInput({ x: 'one', _workflowFsRoot: '/tmp/r' });
      expect(!other.ok && other.error).not.toMatch(/^\$\._workflowFsRoot: /);
    }
    // without files the root is no business of the host's: the schema's answer stands
    const plain = defineIO({ inputs: closed }).validateInput({ x: 1, _workflowFsRoot: '/tmp/r' });
    expect(!plain.ok && plain.error).not.toMatch(/^\$\._workflowFsRoot: /);
  });

  test('a schema that is neither JSON Schema nor zod is misuse', () => {
    expect(() => defineIO({ inputs: 'string' as never })).toThrow(TypeError);
  });

  test('a malformed file block is misuse, said at its entry (it failed in staging with an error about undefined)', () => {
    for (const [def, at] of [
      [{ outputsFiles: { o: {} } }, /`outputsFiles\.o`\.path/],
      [{ outputsFiles: { o: 'x.txt' } }, /`outputsFiles\.o` must be a file entry/],
      [{ inputsFiles: { i: { path: 5 } } }, /`inputsFiles\.i`\.path/],
      [{ inputsFiles: { i: { path: '' } } }, /`inputsFiles\.i`\.path/],
      [{ inputsFiles: [{ path: 'x' }] }, /`inputsFiles` must be an object/],
      [{ inputsFiles: { i: { path: 'x', mode: 'rx' } } }, /`inputsFiles\.i`\.mode/],
      [{ outputsFiles: { o: { path: 'x', contentType: 1 } } }, /`outputsFiles\.o`\.contentType/],
    ] as const) {
      expect(() => defineIO(def as never)).toThrow(TypeError);
      expect(() => defineIO(def as never)).toThrow(at);
    }
    // a key that names a prototype is a key like any other (a path is checked when it is used)
    const io = defineIO({ inputsFiles: JSON.parse('{"__proto__": {"path": "../x"}}') as never });
    expect(Object.keys(io.inputsFiles)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(io.inputsFiles)).toBe(Object.prototype);
  });
});


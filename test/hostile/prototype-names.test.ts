/**
 * Names from the prototype. `__proto__` cannot be an ordinary key of a JavaScript object, so a
 * workflow may not use it as a name (phase, input, output, agent, type, field, and so gate ids):
 * `validate` refuses it, positioned, and `run` runs nothing. Data is another matter: a `"__proto__"`
 * key in a trigger or an agent's output is kept as an ordinary key on every output path. Other names
 * of Object.prototype (`constructor`, `toString`, ...) are ordinary names everywhere.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';
import { parseWorkflow, runWorkflow, WorkflowSpec } from '../../src/index.js';

function capture(cwd: string): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: { USER: 'tester' }, out: () => out, err: () => err };
}

function dir(): string {
  return mkdtempSync(join(tmpdir(), 'baton-proto-'));
}

const HEAD = 'openintent: "1.0"\ninfo: {name: "P"}\n';

/** Each variant puts `__proto__` in one place; the expected line:col of the diagnostic. */
const VARIANTS: [string, string, string][] = [
  ['a phase name', 'workflow:\n  __proto__: {assign: a}\n', '4:3'],
  ['a phase name with a gate (gate id approve-__proto__)', 'workflow:\n  __proto__: {assign: a, x-require_approval: true}\n', '4:3'],
  ['an input name', 'workflow:\n  p: {assign: a, inputs: {__proto__: $trigger.x}}\n', '4:27'],
  ['an output name', 'workflow:\n  p: {assign: a, outputs: {__proto__: string}}\n', '4:28'],
  ['an agent id', 'agents:\n  __proto__: {}\nworkflow:\n  p: {assign: a}\n', '4:3'],
  ['a type name', 'types:\n  __proto__: {x: string}\nworkflow:\n  p: {assign: a}\n', '4:3'],
  ['a field of a type', 'types:\n  T: {__proto__: string}\nworkflow:\n  p: {assign: a, outputs: {t: T}}\n', '4:7'],
  ['a trigger reference', 'workflow:\n  p: {assign: a, inputs: {x: $trigger.__proto__}}\n', '4:30'],
  ['a reference into an upstream output', 'workflow:\n  q: {assign: a, outputs: {o: any}}\n  p: {assign: a, depends_on: [q], inputs: {x: q.o.__proto__}}\n', '5:47'],
  ['an initial_state key', 'workflow:\n  p: {assign: a, initial_state: {__proto__: 1}}\n', '4:34'],
  // written with an escape, the name is not in the text as such (the compiler skips its walk only when it cannot be)
  ['an output name written with an escape', 'workflow:\n  p: {assign: a, outputs: {"\\x5f_proto__": string}}\n', '4:28'],
  ['a trigger reference written with an escape', 'workflow:\n  p: {assign: a, inputs: {x: "$trigger.\\u005f_proto__"}}\n', '4:30'],
];

describe('validate refuses `__proto__` as a name, positioned', () => {
  it.each(VARIANTS)('%s', async (_, body, at) => {
    const cwd = dir();
    writeFileSync(join(cwd, 'wf.yaml'), HEAD + body);
    const io = capture(cwd);
    expect(await run(['validate', 'wf.yaml', '--json'], io)).toBe(1);
    const reported = JSON.stringify(JSON.parse(io.out()));
    expect(reported).toContain('"code":"reserved-name"');
    const [line, column] = at.split(':').map(Number);
    const d = (JSON.parse(io.out()) as { files: { diagnostics: { code: string; line: number; column: number }[] }[] }).files[0]!.diagnostics.find((x) => x.code === 'reserved-name')!;
    expect({ line: d.line, column: d.column }).toEqual({ line, column });
    // run refuses it before anything runs; the library gives the same diagnostic
    const r = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--stub-agents', '--store', 'memory'], r)).toBe(2);
    expect(r.err()).toMatch(/error\[reserved-name\]/);
    expect(parseWorkflow(HEAD + body).diagnostics.map((x) => x.code)).toContain('reserved-name');
  });
});

describe('names Object.prototype has are ordinary names on every output path', () => {
  it.each(['constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'])('%s', async (n) => {
    const cwd = dir();
    writeFileSync(join(cwd, 'wf.yaml'), `${HEAD}types:\n  ${n}: {${n}: string}\nagents:\n  ${n}: {}\nworkflow:\n  ${n}: {assign: ${n}, inputs: {${n}: $trigger.${n}}, outputs: {${n}: string, rec: ${n}}, x-require_approval: true}\n  b: {assign: ${n}, depends_on: [${n}], inputs: {v: ${n}.${n}}}\n`);
    writeFileSync(join(cwd, 'agents.mjs'), `export default { ${JSON.stringify(n)}: (ctx) => ({ ${JSON.stringify(n)}: 'out', rec: { ${JSON.stringify(n)}: 'r' }, got: ctx.input }) };\n`);
    const io = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--trigger', JSON.stringify({ [n]: 'in' }), '--auto-approve', '--run-id', 'r1', '--output', 'out.json', '--state-out', 'state.json', '--json', '-q'], io), io.err()).toBe(0);
    for (const text of [io.out(), readFileSync(join(cwd, 'out.json'), 'utf8')]) {
      const r = JSON.parse(text) as { phases: Record<string, { status: string; input: unknown; output: unknown }>; gates: { id: string }[] };
      expect(Object.keys(r.phases)).toEqual([n, 'b']);
      expect(r.phases[n]!.input).toEqual({ [n]: 'in' });
      expect(r.phases['b']!.input).toEqual({ v: 'out' });
      expect(r.gates.map((g) => g.id)).toEqual([`approve-${n}`]);
    }
    const state = JSON.parse(readFileSync(join(cwd, 'state.json'), 'utf8')) as Record<string, unknown>;
    expect(JSON.stringify(state)).toContain(`"${n}"`);
    const shown = capture(cwd);
    expect(await run(['show', 'r1'], shown)).toBe(0);
    expect(shown.out()).toContain(n);
    const text = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--trigger', JSON.stringify({ [n]: 'in' }), '--auto-approve', '-q'], text)).toBe(0);
    expect(text.out()).toMatch(/2 completed/);
  });
});

describe('a "__proto__" key in data is an ordinary key', () => {
  const WF = `${HEAD}workflow:\n  a: {assign: x, inputs: {t: $trigger.t}, outputs: {o: any}}\n  b: {assign: x, depends_on: [a], inputs: {v: a.o, d: $trigger.t}}\n`;
  const AGENTS = `export default { x: (ctx) => ({ o: JSON.parse('{"__proto__": {"polluted": true}, "k": 1}'), own: Object.prototype.hasOwnProperty.call(ctx.input.t ?? ctx.input.d, '__proto__') }) };\n`;
  const trigger = '{"t": {"__proto__": {"a": 1}, "z": 2}}';

  it.each(['memory', 'sqlite'])('trigger and outputs keep it through ctx.input, --json, --output, show, show --state and --state-out (%s store)', async (store) => {
    const cwd = dir();
    writeFileSync(join(cwd, 'wf.yaml'), WF);
    writeFileSync(join(cwd, 'agents.mjs'), AGENTS);
    const io = capture(cwd);
    const storeFlag = store === 'memory' ? ['--store', 'memory'] : [];
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--trigger', trigger, '--run-id', 'd1', '--output', 'out.json', '--state-out', 'state.json', '--json', '-q', ...storeFlag], io), io.err()).toBe(0);
    const texts = [io.out(), readFileSync(join(cwd, 'out.json'), 'utf8')];
    if (store === 'sqlite') {
      const shown = capture(cwd);
      expect(await run(['show', 'd1', '--json'], shown)).toBe(0);
      texts.push(shown.out());
    }
    for (const text of texts) {
      expect(text).toContain('"__proto__"');
      const r = JSON.parse(text) as { phases: Record<string, { input: Record<string, unknown>; output: Record<string, unknown> }> };
      expect(Object.keys(r.phases['a']!.input['t'] as object)).toEqual(['__proto__', 'z']);
      expect(Object.keys(r.phases['b']!.input['v'] as object)).toEqual(['__proto__', 'k']);
      expect(r.phases['a']!.output['own']).toBe(true);
      expect(r.phases['b']!.output['own']).toBe(true);
    }
    expect(readFileSync(join(cwd, 'state.json'), 'utf8')).toContain('"__proto__"');
    if (store === 'sqlite') {
      const st = capture(cwd);
      expect(await run(['show', 'd1', '--state'], st)).toBe(0);
      expect(st.out()).toContain('"__proto__"');
    }
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('library: runWorkflow keeps it in the result and in onEvent payloads', async () => {
    const spec = WorkflowSpec.fromResult(parseWorkflow(WF));
    const payloads: string[] = [];
    const r = await runWorkflow(spec, {
      trigger: JSON.parse(trigger) as never,
      agents: { x: () => ({ o: JSON.parse('{"__proto__": {"p": 1}}') as unknown }) },
      onEvent: (e) => payloads.push(JSON.stringify(e)),
    });
    expect(r.status).toBe('completed');
    expect(Object.prototype.hasOwnProperty.call(r.phases['b']!.input!['v'], '__proto__')).toBe(true);
    expect(payloads.some((p) => p.includes('"__proto__":{"p":1}'))).toBe(true);
  });
});

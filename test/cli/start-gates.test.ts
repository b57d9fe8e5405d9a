/**
 * A gate that opens as the run starts (on a root phase, on every root, on the run) is announced at
 * once: the run id, the notice and the command that decides it, in text, --json and quiet modes, and
 * the events of the first commit reach the library's onEvent. With --store memory such a gate ends
 * the run at once, saying why, instead of waiting forever.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { createEngine, parseWorkflow, runWorkflow, WorkflowSpec } from '../../src/index.js';
import type { RunEvent } from '../../src/engine/events.js';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';
import { MemoryStore } from '../../src/store/memory.js';
import { until } from '../helpers/spawn.js';

const STACK = /\n\s+at .+:\d+:\d+/;

function capture(cwd: string): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: { USER: 'tester' }, out: () => out, err: () => err };
}

const GATES = {
  'a root phase': { yaml: 'workflow:\n  a: {assign: x, x-require_approval: true}\n  b: {assign: x, depends_on: [a]}\n', gates: ['approve-a'] },
  'every root phase': { yaml: 'workflow:\n  a: {assign: x, x-require_approval: true}\n  b: {assign: x, x-require_approval: true}\n  c: {assign: x, depends_on: [a, b]}\n', gates: ['approve-a', 'approve-b'] },
  'the run': { yaml: 'governance:\n  require_approval: {approvers: [tester]}\nworkflow:\n  a: {assign: x}\n  b: {assign: x, depends_on: [a]}\n', gates: ['approval'] },
} as const;

function project(yaml: string): string {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-startgate-'));
  writeFileSync(join(cwd, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "Gated"}\n${yaml}`);
  writeFileSync(join(cwd, 'agents.mjs'), 'export default { x: () => ({ ok: true }) };\n');
  return cwd;
}

describe('--store memory and a gate that decides itself at its timeout', () => {
  const timed = (onTimeout: string): string => `governance:\n  require_approval: {timeout_hours: 0.0001, on_timeout: ${onTimeout}}\nworkflow:\n  a: {assign: x}\n  b: {assign: x, depends_on: [a]}\n`;

  test('on_timeout: proceed waits for the timeout (0.36 s) and runs to the end, saying so', async () => {
    const cwd = project(timed('proceed'));
    const io = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '-q'], io)).toBe(0);
    expect(io.err()).toMatch(/gate approval: nothing outside this process can decide it \(--store memory\); it proceeds at its timeout/);
    expect(io.out()).toMatch(/completed/);
  });

  test('on_timeout: abort waits for the timeout and fails the run with ApprovalTimeout', async () => {
    const cwd = project(timed('abort'));
    const io = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '-q'], io)).toBe(1);
    expect(io.out()).toMatch(/ApprovalTimeout/);
    expect(io.err()).not.toMatch(/cancelled/);
  });

  test('on_timeout: escalate leaves the gate to a human: cancelled at once, as a gate without a timeout is', async () => {
    const cwd = project(timed('escalate'));
    const io = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '-q'], io)).toBe(2);
    expect(io.err()).toMatch(/--store memory/);
  });
});

describe.each(Object.entries(GATES))('a gate on %s', (_, { yaml, gates }) => {
  test.each([
    ['text', []],
    ['--json', ['--json']],
    ['--quiet', ['--quiet']],
  ] as const)('%s: the run id, the notice and the approve command come at once; approving finishes the run', async (_mode, flags) => {
    const cwd = project(yaml);
    const io = capture(cwd);
    const done = run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--run-id', 'g1', ...flags], io);
    // every gate is announced before anything is decided
    await until(() => gates.every((g) => io.err().includes(`baton approve g1 ${g}`)));
    expect(io.err()).toMatch(/approval needed/);
    if (flags.length === 0) expect(io.out()).toMatch(/run\.started\s+run g1/);
    if (flags[0] === '--json') expect(io.err()).toMatch(/run\.started\s+run g1/);
    for (const g of gates) expect(await run(['approve', 'g1', g], capture(cwd))).toBe(0);
    expect(await done).toBe(0);
    if (flags[0] === '--json') expect((JSON.parse(io.out()) as { status: string }).status).toBe('completed');
  }, 30_000);

  test('--store memory: nothing outside this process can decide it, so the run ends at once (exit 2), saying what to use', async () => {
    const cwd = project(yaml);
    const io = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory'], io)).toBe(2);
    expect(io.err()).toMatch(/--store memory/);
    expect(io.err()).toMatch(/durable store/);
    expect(io.err()).toMatch(/--auto-approve/);
    expect(io.err()).not.toMatch(/baton approve/); // a command that could never work is not offered
    expect(io.err()).not.toMatch(STACK);
    expect(io.out()).toMatch(/cancelled/);
  });

  test('--detach: the notice names the command, and says the run waits in the store (no Ctrl-C: this command has ended)', async () => {
    const cwd = project(yaml);
    const io = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--run-id', 'd1', '--detach', '-q'], io)).toBe(0);
    expect(io.out()).toBe('d1\n');
    for (const g of gates) expect(io.err()).toContain(`baton approve d1 ${g}`);
    expect(io.err()).toMatch(/waits in the store until it is decided/);
    expect(io.err()).not.toMatch(/Ctrl-C/);
  });

  test('--store memory --auto-approve runs to the end', async () => {
    const cwd = project(yaml);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--auto-approve', '-q'], capture(cwd))).toBe(0);
  });

  test('library: the first commit\'s events (run.started, gate.opened, the root task.ready) reach onEvent', async () => {
    const cwd = project(yaml);
    const spec = WorkflowSpec.fromResult(parseWorkflow(`openintent: "1.0"\ninfo: {name: "Gated"}\n${yaml}`, { file: join(cwd, 'wf.yaml') }));
    const seen: RunEvent[] = [];
    const engine = createEngine({ store: new MemoryStore(), agents: { x: () => ({ ok: true }) }, onEvent: (e) => seen.push(e) });
    const id = await engine.create(spec);
    expect(seen[0]).toMatchObject({ type: 'run.started', run_id: id });
    expect(seen.filter((e) => e.type === 'gate.opened').map((e) => (e as { gate_id: string }).gate_id).sort()).toEqual([...gates].sort());
    for (const g of gates) await engine.approve(id, g, 'tester');
    expect((await engine.drive(id)).status).toBe('completed');
    await engine.close();
    // and the one-call form hears the first events too
    const heard: string[] = [];
    const r = await runWorkflow(spec, { agents: { x: () => ({ ok: true }) }, autoApprove: true, onEvent: (e) => heard.push(e.type) });
    expect(r.status).toBe('completed');
    expect(heard.slice(0, 2)).toEqual(['run.started', 'gate.opened']);
    expect(heard.filter((t) => t === 'run.started')).toHaveLength(1);
  });
});

describe('a gate that opens later with --store memory', () => {
  test('an input gate mid-run ends the run at once (exit 2); the phases before it are in the result', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-startgate-'));
    writeFileSync(join(cwd, 'wf.yaml'), 'openintent: "1.0"\ninfo: {name: "Ask"}\nworkflow:\n  a: {assign: x}\n  ask: {assign: asker, depends_on: [a]}\n');
    writeFileSync(join(cwd, 'agents.mjs'), "export default { x: () => ({ ok: true }), asker: async (ctx) => ({ c: await ctx.requestInput({ question: 'Which?', choices: ['r', 'b'] }) }) };\n");
    const io = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--json', '-q'], io)).toBe(2);
    expect(io.err()).toMatch(/input is needed at gate `input-ask-1`.*--store memory/);
    expect(io.err()).not.toMatch(/--auto-approve/); // it would not answer an input gate
    const r = JSON.parse(io.out()) as { status: string; phases: Record<string, { status: string }> };
    expect(r.status).toBe('cancelled');
    expect(r.phases['a']!.status).toBe('completed');
  });
});

describe('on a terminal', () => {
  test('the live table names the run from its first event', async () => {
    const { ProgressView } = await import('../../src/cli/progress.js');
    const { describeEvent } = await import('../../src/cli/run.js');
    const v = new ProgressView(['a'], { write: () => undefined, isTTY: true });
    const started = { type: 'run.started', seq: 1, at: 0, run_id: 'r1', workflow: 'Gated', trigger: null, phases: ['a'] } as unknown as RunEvent;
    v.onEvent({ type: 'run.started', at: 0, data: { reason: describeEvent(started) } });
    expect(v.render().split('\n')[0]).toContain('run r1: Gated');
  });
});

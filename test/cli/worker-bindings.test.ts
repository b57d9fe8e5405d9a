/**
 * `baton worker` says which agents it serves, and warns when it binds none, or none that the waiting
 * runs of the store need; `run --detach` says what a worker needs to continue the run.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/main.js';
import { captureIo, type CapturedIo } from '../helpers/cli-io.js';
import { until } from '../helpers/spawn.js';

const capture = (cwd: string): CapturedIo => captureIo(cwd);

function project(): string {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-worker-'));
  writeFileSync(join(cwd, 'wf.yaml'), 'openintent: "1.0"\ninfo: {name: "W"}\nworkflow:\n  a: {assign: x}\n  b: {assign: x, depends_on: [a]}\n');
  writeFileSync(join(cwd, 'agents.mjs'), 'export default { x: () => ({ ok: true }) };\n');
  return cwd;
}

/** Runs `baton worker ARGS` until its banner (and warnings) are out, then stops it as Ctrl-C would. */
async function worker(cwd: string, args: string[], untilText: RegExp = /serving/): Promise<string> {
  const io = capture(cwd);
  const done = run(['worker', ...args], io);
  await until(() => untilText.test(io.err()));
  io.interrupt('SIGINT');
  expect(await done).toBe(0);
  return io.err();
}

describe('baton worker', () => {
  it('a bare worker says it binds no agents, and names the waiting run it cannot serve and how it was started', async () => {
    const cwd = project();
    const detach = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--run-id', 'w1', '--detach'], detach)).toBe(0);
    expect(detach.err()).toMatch(/baton worker --agents agents\.mjs/);
    const err = await worker(cwd, [], /needs agent/);
    expect(err).toMatch(/no agents of its own/);
    expect(err).toMatch(/warning: this worker binds no agents/);
    expect(err).toMatch(/warning: run w1 \(W\) needs agent `x`, which this worker does not bind \(the run was started with --agents .*agents\.mjs\)/);
  });

  it('a worker that binds the agents names them, warns of nothing, and finishes the run', async () => {
    const cwd = project();
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--run-id', 'w2', '--detach'], capture(cwd))).toBe(0);
    const io = capture(cwd);
    const done = run(['worker', '--agents', 'agents.mjs'], io);
    await until(async () => {
      const shown = capture(cwd);
      await run(['show', 'w2', '--json'], shown);
      return shown.out().includes('"status": "completed"');
    });
    io.interrupt('SIGINT');
    expect(await done).toBe(0);
    expect(io.err()).toMatch(/serving .*: agents x/);
    expect(io.err()).not.toMatch(/warning/);
  });

  it('--stub-agents is not a worker that binds nothing', async () => {
    const err = await worker(project(), ['--stub-agents']);
    expect(err).toMatch(/stubs for the rest/);
    expect(err).not.toMatch(/binds no agents/);
  });

  it('an empty store: the bare worker warns about its bindings only', async () => {
    const err = await worker(project(), []);
    expect(err).toMatch(/binds no agents/);
    expect(err).not.toMatch(/needs agent/);
  });
});

describe('run --detach', () => {
  it('with --store memory is refused: nothing would keep the run', async () => {
    const cwd = project();
    const io = capture(cwd);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--detach', '--store', 'memory'], io)).toBe(2);
    expect(io.err()).toMatch(/--detach.*--store memory keeps nothing/);
  });
});

/**
 * Ctrl-C as a terminal sends it (SIGINT to the whole process group): an agent that ignores its
 * signal cannot hold the run, a synchronous loop cannot hold the process past the grace period,
 * and a never-settling agent keeps the process alive (no silent exit 13) until Ctrl-C stops it. Ctrl-C
 * never cancels the run: it stays in the store for `baton resume` (signals.test.ts has the variants).
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { baton, batonRun, until } from '../helpers/spawn.js';

function project(agent: string): string {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-int-'));
  writeFileSync(join(cwd, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: "Stuck"}\nworkflow:\n  a: {assign: stuck}\n');
  writeFileSync(join(cwd, 'agents.mjs'), `import { writeFileSync } from 'node:fs';\nexport default { stuck: ${agent} };\n`);
  return cwd;
}

const started = (cwd: string) => () => existsSync(join(cwd, 'started'));
const mark = `writeFileSync(new URL('./started', import.meta.url), '1')`;

describe('Ctrl-C', () => {
  test('an agent that never settles keeps the process alive; Ctrl-C leaves the run resumable (exit 130)', async () => {
    const cwd = project(`() => { ${mark}; return new Promise(() => {}); }`);
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'n1', '--output', 'result.json'], { cwd, detached: true });
    await until(started(cwd));
    await new Promise((r) => setTimeout(r, 300));
    expect(child.exitCode).toBeNull(); // still alive: not a silent exit 13
    process.kill(-child.pid!, 'SIGINT');
    const done = await child.done;
    expect(done.code).toBe(130);
    expect(done.stderr).toMatch(/baton resume n1/);
    expect(existsSync(join(cwd, 'result.json'))).toBe(false); // no result: the run has not ended
    const shown = await batonRun(['show', 'n1', '--json'], { cwd });
    expect((JSON.parse(shown.stdout) as { status: string }).status).toBe('running');
  }, 20_000);

  test('a synchronous loop that never yields is stopped after the grace period; the run can be resumed', async () => {
    const cwd = project(`() => { ${mark}; for (;;) {} }`);
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'sync1', '-q'], { cwd, detached: true });
    await until(started(cwd));
    const t0 = Date.now();
    process.kill(-child.pid!, 'SIGINT');
    const done = await child.done;
    expect(done.signal).toBe('SIGKILL');
    // the documented bound, kept by the watchdog: the event loop never turns again
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(done.stderr).toMatch(/baton resume sync1/);
    const shown = await batonRun(['show', 'sync1', '--json'], { cwd });
    expect((JSON.parse(shown.stdout) as { status: string }).status).toBe('running');
  }, 20_000);

  test('a signal that comes while an agent holds the thread lands before the outcome of that agent: nothing new is claimed after it', async () => {
    // the agent loops synchronously until the test says go (after the signal), then returns: its outcome
    // used to be committed before the process read the signal, and that commit claimed and started `b`
    const cwd = mkdtempSync(join(tmpdir(), 'baton-int-'));
    writeFileSync(join(cwd, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: "Held"}\nworkflow:\n  a: {assign: held, outputs: {n: integer}}\n  b: {assign: held, depends_on: [a], outputs: {n: integer}}\n');
    writeFileSync(
      join(cwd, 'agents.mjs'),
      `import { existsSync, writeFileSync } from 'node:fs';\nconst at = (f) => new URL('./' + f, import.meta.url);\nexport default { held: (ctx) => { writeFileSync(at('started-' + ctx.phase), '1'); if (ctx.phase === 'a') while (!existsSync(at('go'))) {} return { n: 1 }; } };\n`,
    );
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'held1', '-q'], { cwd, detached: true });
    await until(() => existsSync(join(cwd, 'started-a')));
    process.kill(-child.pid!, 'SIGINT');
    await new Promise((r) => setTimeout(r, 200));
    writeFileSync(join(cwd, 'go'), '');
    const done = await child.done;
    expect(done.code).toBe(130);
    expect(existsSync(join(cwd, 'started-b'))).toBe(false);
    const shown = JSON.parse((await batonRun(['show', 'held1', '--json'], { cwd })).stdout) as { status: string; phases: Record<string, { status: string; attempts: number }> };
    // the attempt that was running finished within the stop's grace and kept its output; b waits for the resume
    expect(shown.status).toBe('running');
    expect(shown.phases['a']).toMatchObject({ status: 'completed', attempts: 1 });
    expect(shown.phases['b']!.attempts).toBe(0);
  }, 20_000);

  test('a second Ctrl-C stops at once', async () => {
    const cwd = project(`() => { ${mark}; for (;;) {} }`);
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '-q'], { cwd, detached: true });
    await until(started(cwd));
    const t0 = Date.now();
    process.kill(-child.pid!, 'SIGINT');
    await new Promise((r) => setTimeout(r, 300));
    process.kill(-child.pid!, 'SIGINT');
    const done = await child.done;
    expect(done.signal).toBe('SIGKILL');
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(done.stderr).toMatch(/second signal/);
  }, 20_000);
});

describe('an agents module whose top-level await never settles', () => {
  test('is reported, not a silent exit 13', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-int-'));
    writeFileSync(join(cwd, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: "T"}\nworkflow:\n  a: {assign: x}\n');
    writeFileSync(join(cwd, 'agents.mjs'), 'await new Promise(() => {});\nexport default { x: () => ({}) };\n');
    const done = await batonRun(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', 'memory'], { cwd, env: { BATON_MODULE_LOAD_TIMEOUT_MS: '500' } });
    expect(done.code).toBe(2);
    expect(done.stderr).toMatch(/did not finish loading/);
  }, 20_000);

  test('that also keeps a timer alive is reported and the command exits', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-int-'));
    writeFileSync(join(cwd, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: "T"}\nworkflow:\n  a: {assign: x}\n');
    writeFileSync(join(cwd, 'agents.mjs'), 'setInterval(() => {}, 1000);\nawait new Promise(() => {});\nexport default { x: () => ({}) };\n');
    for (const cmd of [['run', 'workflow.yaml', '--store', 'memory'], ['check', 'workflow.yaml']]) {
      const done = await batonRun([...cmd, '--agents', 'agents.mjs'], { cwd, env: { BATON_MODULE_LOAD_TIMEOUT_MS: '500' }, timeoutMs: 8_000 });
      expect(done.code).toBe(2);
      expect(done.stderr).toMatch(/did not finish loading/);
    }
  }, 30_000);
});

describe('an agents module that keeps a timer alive', () => {
  test('does not keep the command alive once the run has ended', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'baton-int-'));
    writeFileSync(join(cwd, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: "T"}\nworkflow:\n  a: {assign: x}\n');
    writeFileSync(join(cwd, 'agents.mjs'), 'setInterval(() => {}, 1000);\nexport default { x: () => ({}) };\n');
    const done = await batonRun(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--json'], { cwd, timeoutMs: 8_000 });
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ status: 'completed' });
  }, 30_000);
});

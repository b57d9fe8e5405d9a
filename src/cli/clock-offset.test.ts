/**
 * `BATON_CLOCK_OFFSET_MS`, the testing aid that gives one process a skewed clock (the chaos test's
 * worker ahead of the others): `baton run` and `baton worker` read it, the recorded times move by it,
 * and a value that is not an integer is a usage error (exit 2).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { offsetClock, systemClock } from '../core/clock.js';
import type { CliIo } from './io.js';
import { run } from './main.js';
import { cliClock } from './durable.js';

function capture(env: Record<string, string>): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd: process.cwd(), env, out: () => out, err: () => err };
}

const HELLO = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'corpus', 'hello_world.yaml');
const DAY = 86_400_000;

describe('BATON_CLOCK_OFFSET_MS', () => {
  test('offsetClock shifts now() and keeps the base clock\'s sleeps', async () => {
    const c = offsetClock({ now: () => 1_000, sleep: (ms, signal) => systemClock.sleep(ms, signal) }, -250);
    expect(c.now()).toBe(750);
    await c.sleep(0);
  });

  test('unset, empty or 0 is the system clock; an integer shifts it', () => {
    expect(cliClock(capture({}))).toBe(systemClock);
    expect(cliClock(capture({ BATON_CLOCK_OFFSET_MS: '' }))).toBe(systemClock);
    expect(cliClock(capture({ BATON_CLOCK_OFFSET_MS: '0' }))).toBe(systemClock);
    const ahead = cliClock(capture({ BATON_CLOCK_OFFSET_MS: String(DAY) })).now() - Date.now();
    expect(ahead).toBeGreaterThan(DAY - 1_000);
    expect(ahead).toBeLessThan(DAY + 1_000);
  });

  test('baton run records times in the shifted clock', async () => {
    const io = capture({ BATON_STORE: 'memory', BATON_CLOCK_OFFSET_MS: String(DAY) });
    expect(await run(['run', HELLO, '--stub-agents', '--json', '-q'], io)).toBe(0);
    const r = JSON.parse(io.out()) as { phases: Record<string, { started_at: number }> };
    const started = Object.values(r.phases)[0]!.started_at;
    expect(started - Date.now()).toBeGreaterThan(DAY - 60_000);
  });

  test('a minute behind on a SQLite file, baton run --timeout 30 completes: the deadline is in the store’s clock', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-offset-'));
    const io = capture({ BATON_CLOCK_OFFSET_MS: '-60000' });
    // the deadline used to be stamped in this process's clock, already past in the file's: RunTimeout at once, exit 1
    expect(await run(['run', HELLO, '--stub-agents', '--store', join(dir, 'b.db'), '--timeout', '30', '--json', '-q'], io)).toBe(0);
    const r = JSON.parse(io.out()) as { status: string; phases: Record<string, { started_at: number }> };
    expect(r.status).toBe('completed');
    expect(Math.abs(Object.values(r.phases)[0]!.started_at - Date.now())).toBeLessThan(30_000);
    rmSync(dir, { recursive: true, force: true });
  });

  test.each([['run', HELLO, '--stub-agents'], ['worker', '--stub-agents']])('baton %s with a value that is not an integer exits 2', async (...args) => {
    const io = capture({ BATON_STORE: 'memory', BATON_CLOCK_OFFSET_MS: '2.5s' });
    expect(await run(args, io)).toBe(2);
    expect(io.err()).toMatch(/BATON_CLOCK_OFFSET_MS/);
  });
});

/** `baton run` / `show` / `rerun` with a for_each phase on a SQLite store: item counts, `--items`, `--failed-items`. */
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures', 'fanout');

function setup(): { dir: string; io: () => CliIo & { out: () => string; err: () => string; clear: () => void } } {
  const dir = mkdtempSync(join(tmpdir(), 'baton-fan-cli-'));
  copyFileSync(join(fixtures, 'fan.yaml'), join(dir, 'fan.yaml'));
  copyFileSync(join(fixtures, 'agents.mjs'), join(dir, 'agents.mjs'));
  return {
    dir,
    io: () => {
      let out = '';
      let err = '';
      return { stdout: (s: string) => void (out += s), stderr: (s: string) => void (err += s), isTTY: false, cwd: dir, env: { USER: 't' }, out: () => out, err: () => err, clear: () => ((out = ''), (err = '')) };
    },
  };
}

afterEach(() => {
  delete process.env['BATON_FAIL_ITEMS'];
});

describe('for_each through the CLI (SQLite)', () => {
  test("run's summary counts phases as phases, a fan-out's items under their phase, and names only a few failed items", async () => {
    const { dir, io } = setup();
    // every item runs (8 failures tolerated): 8 fail, 4 complete, and the run completes
    writeFileSync(join(dir, 'wide.yaml'), readFileSync(join(dir, 'fan.yaml'), 'utf8').replace('max_parallel: 3', 'max_parallel: 12').replace('tolerated_failures: 1', 'tolerated_failures: 8'));
    process.env['BATON_FAIL_ITEMS'] = '0,1,2,3,4,5,6,7';
    const a = io();
    expect(await run(['run', 'wide.yaml', '--agents', 'agents.mjs', '--store', 'runs.db', '--run-id', 'f1', '--trigger', '{"n": 12}'], a)).toBe(0);
    const out = a.out();
    expect(out).toMatch(/^run f1 completed in [\d.]+ s: 3 completed$/m);
    expect(out).toMatch(/^ {2}draft: (?=.*4 completed)(?=.*8 failed).* items$/m);
    expect(out.match(/^ {2}✗ draft\[\d+\]: DraftFailed/gm)).toHaveLength(5);
    expect(out).toMatch(/^ {2}… 3 more failed items of draft: baton show f1 --items draft$/m);
  });

  test('show counts items by status, --items lists them, rerun --failed-items runs only those', async () => {
    const { io } = setup();
    const store = ['--store', 'runs.db'];
    process.env['BATON_FAIL_ITEMS'] = '2,5';
    const a = io();
    // two failures, one tolerated: the phase fails
    expect(await run(['run', 'fan.yaml', '--agents', 'agents.mjs', ...store, '--run-id', 'r1', '--trigger', '{"n": 8}', '--quiet'], a)).toBe(1);
    const s = io();
    expect(await run(['show', 'r1', ...store], s)).toBe(0);
    expect(s.out()).toMatch(/items {2}\d\/8 completed, 2 failed/);
    expect(s.out()).not.toMatch(/draft\[0\]/);
    const items = io();
    expect(await run(['show', 'r1', ...store, '--items', 'draft', '--json'], items)).toBe(0);
    const rows = JSON.parse(items.out()) as { index: number; status: string; error: { code: string } | null }[];
    expect(rows).toHaveLength(8);
    expect(rows[2]).toMatchObject({ index: 2, status: 'failed', error: { code: 'DraftFailed' } });
    expect(rows[0]).toMatchObject({ index: 0, status: 'completed' });
    const text = io();
    expect(await run(['show', 'r1', ...store, '--items', 'draft'], text)).toBe(0);
    expect(text.out()).toMatch(/^draft: \d\/8 completed, 2 failed/);
    expect(text.out()).toMatch(/^ {2}\[2\] failed {5}attempts 1 {2}DraftFailed: item 2 fails$/m);
    const bad = io();
    expect(await run(['show', 'r1', ...store, '--items', 'outline'], bad)).toBe(2);
    expect(bad.err()).toMatch(/phase `outline` of run r1 has no items \(phases with items: draft\)/);
    expect(bad.err()).not.toMatch(/\n\s+at /);

    // fixed: only the failed (and never-run) items run again
    process.env['BATON_FAIL_ITEMS'] = '';
    const completedBefore = rows.filter((r) => r.status === 'completed').map((r) => r.index);
    const r = io();
    expect(await run(['rerun', 'r1', '--from', 'draft', '--failed-items', '--agents', 'agents.mjs', ...store, '--run-id', 'r2', '--json'], r)).toBe(0);
    const done = JSON.parse(r.out()) as { status: string; phases: Record<string, { output: unknown; reused_from?: string }> };
    expect(done.status).toBe('completed');
    expect(done.phases['assemble']!.output).toEqual({ all: '0:s0,1:s1,2:s2,3:s3,4:s4,5:s5,6:s6,7:s7' });
    for (const i of completedBefore) expect(done.phases[`draft[${i}]`]!.reused_from).toBe('r1');
    expect(done.phases['draft[2]']!.reused_from).toBeUndefined();
    const j = io();
    expect(await run(['show', 'r2', ...store, '--json'], j)).toBe(0);
    const shown = JSON.parse(j.out()) as { fan_out: unknown; phases: Record<string, unknown> };
    expect(shown.fan_out).toEqual({ draft: { items: 8, counts: { completed: 8 }, list: 'baton show r2 --items draft' } });
    // the items are counted, not listed: `--items` pages them
    expect(Object.keys(shown.phases).sort()).toEqual(['assemble', 'draft', 'outline']);
    const page = io();
    expect(await run(['show', 'r2', ...store, '--items', 'draft', '--offset', '3', '--limit', '2', '--json'], page)).toBe(0);
    expect((JSON.parse(page.out()) as { index: number; status: string }[]).map((x) => `${x.index} ${x.status}`)).toEqual(['3 completed', '4 completed']);
    const past = io();
    expect(await run(['show', 'r2', ...store, '--items', 'draft', '--offset', '8', '--json'], past)).toBe(0);
    expect(JSON.parse(past.out())).toEqual([]);
    const wrong = io();
    expect(await run(['show', 'r2', ...store, '--limit', '2'], wrong)).toBe(2);
    expect(wrong.err()).toMatch(/--offset and --limit page the items of --items PHASE/);
    const neg = io();
    expect(await run(['show', 'r2', ...store, '--items', 'draft', '--limit', '-1'], neg)).toBe(2);
    expect(neg.err()).not.toMatch(/\n\s+at /);
  });

  test('--failed-items on a phase without for_each exits 2 with the reason', async () => {
    const { io } = setup();
    const a = io();
    expect(await run(['run', 'fan.yaml', '--agents', 'agents.mjs', '--store', 'runs.db', '--run-id', 'r1', '--trigger', '{"n": 2}', '--quiet'], a)).toBe(0);
    const b = io();
    expect(await run(['rerun', 'r1', '--from', 'outline', '--failed-items', '--agents', 'agents.mjs', '--store', 'runs.db'], b)).toBe(2);
    expect(b.err()).toMatch(/--failed-items: phase `outline` has no for_each/);
  });
});

describe('the live progress view', () => {
  test("a fan-out phase's row counts its items as they change", async () => {
    const { ProgressView } = await import('../../src/cli/progress.js');
    const v = new ProgressView(['outline', 'draft'], { write: () => undefined, isTTY: false }, () => 0);
    const ev = (type: string, phase: string, data: Record<string, unknown> = {}) => v.onEvent({ type, at: 0, phase, data });
    ev('task.fanned_out', 'draft', { items: 3, state: 'running' });
    ev('task.ready', 'draft[0]');
    ev('task.ready', 'draft[1]');
    ev('task.claimed', 'draft[0]');
    expect(v.render()).toMatch(/draft\s+running.*0\/3 completed, 1 running, 1 ready/);
    ev('task.completed', 'draft[0]');
    ev('task.claimed', 'draft[1]');
    ev('task.failed', 'draft[1]');
    expect(v.render()).toMatch(/1\/3 completed, 1 failed/);
    expect(v.render()).not.toMatch(/draft\[/);
  });
});

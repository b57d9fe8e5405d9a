/**
 * `--json` on every command that prints: success is JSON on stdout, and so is failure,
 * as `{"error": {"code", "message", ...}}` (the one-line message still goes to stderr).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { until } from '../../test/helpers/spawn.js';
import type { CliIo } from './io.js';
import { run } from './main.js';

function dir(): string {
  return mkdtempSync(join(tmpdir(), 'baton-json-'));
}

interface Outcome {
  code: number;
  out: string;
  err: string;
  json: Record<string, unknown>;
}

async function cli(argv: string[], cwd = process.cwd(), over: Partial<CliIo> = {}): Promise<Outcome> {
  let out = '';
  let err = '';
  const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: { USER: 'tester', BATON_STORE: 'memory' }, ...over };
  const code = await run(argv, io);
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(out) as Record<string, unknown>;
  } catch {
    // some tests expect JSON lines or none
  }
  return { code, out, err, json };
}

function errorOf(o: Outcome): { code: string; message: string } & Record<string, unknown> {
  expect(o.json, `${o.out}\n${o.err}`).toHaveProperty('error');
  const e = o.json['error'] as { code: string; message: string };
  expect(typeof e.message).toBe('string');
  expect(o.err).not.toMatch(/\n\s+at /);
  return e;
}

const fixtures = join(import.meta.dirname, '..', '..', 'test', 'fixtures');

describe('run --json', () => {
  test('an invalid workflow prints its diagnostics as a JSON error', async () => {
    const r = await cli(['run', join(fixtures, 'diagnostics', 'unknown-dependency.yaml'), '--json']);
    expect(r.code).toBe(2);
    const e = errorOf(r);
    expect(e.code).toBe('invalid-workflow');
    expect((e['diagnostics'] as { code: string; line: number; column: number }[]).map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(['unknown-dependency 10:18', 'unknown-dependency 13:18']);
  });

  test.each([
    [['run', 'nope.yaml', '--json'], 'usage'],
    [['run', 'research-pipeline', '--json', '--trigger', '[1]'], 'usage'],
    [['show', 'nope', '--json'], 'unknown-run'],
    [['resume', 'nope', '--json'], 'usage'],
    [['approve', 'nope', 'gate', '--json'], 'unknown-run'],
    [['cancel', 'nope', '--json'], 'unknown-run'],
    [['respond', 'nope', 'gate', '--value', '1', '--json'], 'unknown-run'],
    [['types', '--json'], 'usage'],
    [['validate', '--json'], 'usage'],
    [['new', '--json'], 'usage'],
    [['check', '--contracts', 'no-such-dir', '--json'], 'file-unreadable'],
  ])('%j fails as {"error": {"code": %j}}', async (argv, code) => {
    const r = await cli(argv, dir());
    expect(r.code).toBe(2);
    expect(errorOf(r).code).toBe(code);
  });
});

describe('commands that gained --json', () => {
  test('list', async () => {
    const r = await cli(['list', '--json']);
    expect(r.code).toBe(0);
    const list = JSON.parse(r.out) as { name: string; phases: number; valid: boolean }[];
    expect(list.map((e) => e.name)).toContain('research-pipeline');
    expect(list.every((e) => e.valid && e.phases > 0)).toBe(true);
  });

  test('types, to stdout and to a file; an invalid workflow is a JSON error', async () => {
    const cwd = dir();
    const wf = join(fixtures, 'corpus', 'hello_world.yaml');
    const a = await cli(['types', wf, '--json'], cwd);
    expect(a.code).toBe(0);
    expect(a.json).toMatchObject({ phases: expect.any(Number) as number, types: expect.stringContaining('defineHandlers') as string });
    const b = await cli(['types', wf, '-o', 'out.ts', '--json'], cwd);
    expect(b.json).toMatchObject({ wrote: 'out.ts' });
    expect(readFileSync(join(cwd, 'out.ts'), 'utf8')).toBe(a.json['types']);
    const c = await cli(['types', join(fixtures, 'diagnostics', 'unknown-dependency.yaml'), '--json'], cwd);
    expect(c.code).toBe(1);
    expect(errorOf(c).code).toBe('invalid-workflow');
  });

  test('new, and new again over the same folder', async () => {
    const cwd = dir();
    const a = await cli(['new', 'Weekly Digest', '--json'], cwd);
    expect(a.code).toBe(0);
    expect(a.json).toEqual({ name: 'Weekly Digest', dir: 'weekly-digest', files: ['weekly-digest/workflow.yaml', 'weekly-digest/agents.mjs', 'weekly-digest/trigger.json'] });
    const b = await cli(['new', 'Weekly Digest', '--json'], cwd);
    expect(b.code).toBe(2);
    expect(errorOf(b).code).toBe('usage');
  });

  test('runs on an empty store is an empty array', async () => {
    const r = await cli(['runs', '--json']);
    expect(r.code).toBe(0);
    expect(r.json).toEqual([]);
  });
});

const GATED = `openintent: "1.0"
info: {name: "Gated"}
workflow:
  draft: {assign: writer, outputs: {text: string}}
  publish:
    assign: writer
    depends_on: [draft]
    inputs: {text: draft.text}
    x-require_approval: true
`;

describe('gates, cancel and worker on a shared store', () => {
  test('approve, deny and cancel print what they did; a second cancel is a JSON error', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED);
    const store = ['--store', join(cwd, 'runs.db')];
    for (const id of ['a1', 'd1']) expect((await cli(['run', 'workflow.yaml', '--stub-agents', '--run-id', id, '--detach', ...store], cwd)).code).toBe(0);
    const gatesOf = async (id: string): Promise<{ id: string; status: string }[]> => (await cli(['show', id, '--json', ...store], cwd)).json['gates'] as { id: string; status: string }[];
    for (const [id, decision, word] of [
      ['a1', 'approve', 'approved'],
      ['d1', 'deny', 'denied'],
    ] as const) {
      const driving = cli(['resume', id, '-q', '--json', ...store], cwd);
      await until(async () => (await gatesOf(id)).length === 1);
      const gate = (await gatesOf(id))[0]!.id;
      const r = await cli([decision, id, gate, '--json', '--comment', 'ok', ...store], cwd);
      expect(r.code).toBe(0);
      expect(r.json).toEqual({ runId: id, gateId: gate, decision: word, by: 'tester', comment: 'ok' });
      const done = await driving;
      expect(done.json['status']).toBe(decision === 'approve' ? 'completed' : 'failed');
      const again = await cli([decision, id, gate, '--json', ...store], cwd);
      expect(again.code).not.toBe(0);
      errorOf(again);
    }
    expect((await cli(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'c1', '--detach', '--json', ...store], cwd)).json).toMatchObject({ runId: 'c1', status: 'running' });
    const c = await cli(['cancel', 'c1', '--json', ...store], cwd);
    expect(c.json).toEqual({ runId: 'c1', status: 'cancelled', reason: 'cancelled by tester' });
    const c2 = await cli(['cancel', 'c1', '--json', ...store], cwd);
    expect(c2.code).toBe(1);
    expect(errorOf(c2)).toMatchObject({ code: 'run-ended', status: 'cancelled' });
  }, 60_000);

  test('worker --json prints JSON lines: its start, then every event', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED.replace('x-require_approval: true', ''));
    const store = ['--store', join(cwd, 'runs.db')];
    expect((await cli(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'w1', '--detach', ...store], cwd)).code).toBe(0);
    let out = '';
    let stop: ((why: 'SIGINT') => void) | undefined;
    const worker = cli(['worker', '--stub-agents', '--json', ...store], cwd, {
      stdout: (s) => void (out += s),
      onInterrupt: (h) => {
        stop = h;
        return () => undefined;
      },
    });
    await until(() => out.includes('"run.completed"'));
    stop!('SIGINT');
    expect((await worker).code).toBe(0);
    const lines = out.trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string; run_id?: string });
    expect(lines[0]).toMatchObject({ type: 'worker.started', stub_agents: true });
    expect(lines.map((l) => l.type)).toEqual(expect.arrayContaining(['task.completed', 'run.completed']));
    // a worker serves many runs at once: each event names its run
    expect(lines.slice(1).every((l) => l.run_id === 'w1')).toBe(true);
  }, 60_000);
});

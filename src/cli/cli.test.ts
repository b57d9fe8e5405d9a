import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { CliIo } from './io.js';
import { run } from './main.js';

function capture(cwd = process.cwd()): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (s) => void (out += s),
    stderr: (s) => void (err += s),
    isTTY: false,
    cwd,
    env: { BATON_STORE: 'memory' },
    out: () => out,
    err: () => err,
  };
}

const fixtures = join(import.meta.dirname, '..', '..', 'test', 'fixtures');
const corpus = join(fixtures, 'corpus');

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'baton-cli-'));
}

describe('baton validate', () => {
  test('a valid file exits 0', async () => {
    const io = capture();
    expect(await run(['validate', join(corpus, 'hello_world.yaml')], io)).toBe(0);
    expect(io.out()).toMatch(/valid/);
  });

  test('a misspelt file name (a corpus file), or a folder of workflows, exits 2 with the file it likely meant', async () => {
    const io = capture(corpus);
    expect(await run(['validate', 'hello_wrld.yaml'], io)).toBe(2);
    expect(io.out()).toContain('hello_wrld.yaml: error[file-unreadable]: cannot read');
    expect(io.out()).toContain('hint: did you mean `hello_world.yaml`?');
    const run2 = capture(fixtures);
    expect(await run(['run', 'corpus/hello_wrld.yaml', '--stub-agents'], run2)).toBe(2);
    expect(run2.err()).toContain('no workflow at `corpus/hello_wrld.yaml` (a file, a directory with workflow.yaml, or a bundled example: see `baton list`); did you mean `corpus/hello_world.yaml`?');
    const example = capture(tmp());
    expect(await run(['run', 'research-pipelin', '--stub-agents'], example)).toBe(2);
    expect(example.err()).toContain('did you mean `research-pipeline`?');
    // the corpus folder holds workflows but no workflow.yaml: run names them, as check does
    const folder = capture(fixtures);
    expect(await run(['run', 'corpus', '--stub-agents'], folder)).toBe(2);
    expect(folder.err()).toContain('baton run: corpus holds no workflow.yaml: name one of its workflows (`corpus/compliance_review.yaml`, `corpus/content_pipeline.yaml`,');
  });

  test('an invalid file exits 1 with file:line:col, code, frame and hint', async () => {
    const io = capture(fixtures);
    expect(await run(['validate', 'diagnostics/input-wiring.yaml'], io)).toBe(1);
    expect(io.out()).toMatch(/diagnostics\/input-wiring\.yaml:\d+:\d+: error\[input-unknown-phase\]/);
    expect(io.out()).toMatch(/\^+/);
    expect(io.out()).toMatch(/hint: did you mean `research`\?/);
  });

  test('--json prints one document with positioned diagnostics and RFC fields', async () => {
    const io = capture(fixtures);
    expect(await run(['validate', '--json', 'diagnostics/input-wiring.yaml', 'corpus/hello_world.yaml'], io)).toBe(1);
    const doc = JSON.parse(io.out()) as { files: { file: string; valid: boolean; diagnostics: Record<string, unknown>[] }[] };
    expect(doc.files.map((f) => f.valid)).toEqual([false, true]);
    const d = doc.files[0]!.diagnostics[0]!;
    expect(d).toMatchObject({ severity: 'error', code: 'input-unknown-phase', error: 'InputWiringError', phase_name: 'analysis', invalid_refs: ['reserch.findings'], path: 'workflow.analysis.inputs.a' });
    expect(typeof d['line']).toBe('number');
    expect(typeof d['column']).toBe('number');
  });

  test('--json names WorkflowValidationError on the diagnostics that stand for it (missing field, unknown dependency, cycle)', async () => {
    const io = capture(fixtures);
    await run(['validate', '--json', 'diagnostics/missing-field.yaml', 'diagnostics/unknown-dependency.yaml', 'diagnostics/dependency-cycle.yaml'], io);
    const doc = JSON.parse(io.out()) as { files: { diagnostics: Record<string, unknown>[] }[] };
    const ds = doc.files.flatMap((f) => f.diagnostics).filter((d) => ['missing-field', 'unknown-dependency', 'dependency-cycle'].includes(d['code'] as string));
    expect(new Set(ds.map((d) => d['code']))).toEqual(new Set(['missing-field', 'unknown-dependency', 'dependency-cycle']));
    for (const d of ds) expect(d['error']).toBe('WorkflowValidationError');
    const dep = ds.find((d) => d['code'] === 'unknown-dependency')!;
    expect([typeof dep['phase_name'], typeof dep['dependency']]).toEqual(['string', 'string']);
  });

  test('an unreadable file exits 2; no file is a usage error', async () => {
    expect(await run(['validate', 'nope.yaml'], capture())).toBe(2);
    expect(await run(['validate'], capture())).toBe(2);
    expect(await run(['frobnicate'], capture())).toBe(2);
  });

  test('a file that does not parse (YAML syntax, a duplicate key) or cannot be read still gets its ✗ line', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'syntax.yaml'), 'openintent: "1.0"\ninfo: {name: [unclosed\nworkflow:\n  a: {assign: x}\n');
    writeFileSync(join(dir, 'dup.yaml'), 'openintent: "1.0"\ninfo: {name: x}\nworkflow:\n  a: {assign: x}\n  a: {assign: y}\n');
    const io = capture(dir);
    expect(await run(['validate', 'syntax.yaml', 'dup.yaml', 'nope.yaml'], io)).toBe(2);
    const lines = io.out().split('\n');
    expect(lines.filter((l) => l.startsWith('✗ '))).toEqual(['✗ syntax.yaml: invalid', '✗ dup.yaml: invalid (OpenIntent Workflow YAML 1.0)', '✗ nope.yaml: cannot be read']);
    expect(io.out()).toMatch(/3 files checked: \d+ errors/);
  });

  test('a folder without workflow.yaml (CI: `baton validate workflows/`): every workflow file in it, each reported; 1 if one is invalid', async () => {
    const dir = tmp();
    const good = readFileSync(join(corpus, 'hello_world.yaml'), 'utf8');
    mkdirSync(join(dir, 'workflows', 'team', 'contracts'), { recursive: true });
    mkdirSync(join(dir, 'workflows', '.hidden'));
    writeFileSync(join(dir, 'workflows', 'a.yaml'), good);
    writeFileSync(join(dir, 'workflows', 'team', 'b.yml'), good);
    // not workflows: a contract, a replies file, a hidden folder's file, a note
    writeFileSync(join(dir, 'workflows', 'team', 'contracts', 'c.yaml'), 'contractVersion: "1.0.0"\nagentId: x\n');
    writeFileSync(join(dir, 'workflows', 'replies.yaml'), 'replies: []\n');
    writeFileSync(join(dir, 'workflows', '.hidden', 'd.yaml'), 'openintent: [\n');
    writeFileSync(join(dir, 'workflows', 'notes.txt'), 'openintent: x\n');
    const ok = capture(dir);
    expect(await run(['validate', 'workflows/'], ok)).toBe(0);
    expect(ok.out()).toMatch(/^✓ workflows\/a\.yaml: valid .*\n✓ workflows\/team\/b\.yml: valid .*\n2 files checked: 0 errors, 0 warnings\n$/);

    writeFileSync(join(dir, 'workflows', 'team', 'broken.yaml'), readFileSync(join(fixtures, 'diagnostics', 'input-wiring.yaml'), 'utf8'));
    const github = capture(dir);
    expect(await run(['validate', 'workflows', '--format', 'github'], github)).toBe(1);
    expect(github.out()).toMatch(/^::error file=workflows\/team\/broken\.yaml,line=\d+/m);
    const json = capture(dir);
    expect(await run(['validate', 'workflows', '--json'], json)).toBe(1);
    expect((JSON.parse(json.out()) as { files: { file: string; valid: boolean }[] }).files.map((f) => [f.file, f.valid])).toEqual([
      ['workflows/a.yaml', true],
      ['workflows/team/b.yml', true],
      ['workflows/team/broken.yaml', false],
    ]);
    // a folder with workflow.yaml is that one workflow, as before
    writeFileSync(join(dir, 'workflows', 'team', 'workflow.yaml'), good);
    const one = capture(dir);
    expect(await run(['validate', 'workflows/team'], one)).toBe(0);
    expect(one.out()).toMatch(/^✓ workflows\/team\/workflow\.yaml: valid .*\n1 file checked/);
    // a folder with no workflow file at all is a mistake: exit 2, and no report
    mkdirSync(join(dir, 'empty'));
    const empty = capture(dir);
    expect(await run(['validate', 'empty', '--json'], empty)).toBe(2);
    expect(JSON.parse(empty.out())).toMatchObject({ error: { code: 'usage', command: 'validate' } });
  });
});

describe('baton run', () => {
  test('the bundled example runs with its agents and trigger; --json prints the run result', async () => {
    const io = capture();
    expect(await run(['run', 'quarterly-compliance', '--json'], io)).toBe(0);
    const result = JSON.parse(io.out()) as { status: string; phases: Record<string, { status: string; input: unknown }>; cost_usd: number; events: unknown[] };
    expect(result.status).toBe('completed');
    expect(Object.values(result.phases).every((p) => p.status === 'completed')).toBe(true);
    expect(result.cost_usd).toBeGreaterThan(0);
    expect(io.err()).toMatch(/task\.completed/); // progress goes to stderr when stdout carries JSON
  });

  test('the research pipeline example runs', async () => {
    const io = capture();
    expect(await run(['run', 'research-pipeline', '--quiet'], io)).toBe(0);
    expect(io.out()).toMatch(/completed/);
  });

  test('the polyglot example runs a Python agent per task and one long-lived Node agent for two phases', async () => {
    const io = capture();
    expect(await run(['run', 'polyglot', '--json'], io)).toBe(0);
    const r = JSON.parse(io.out()) as { phases: Record<string, { output: Record<string, unknown> }> };
    expect(r.phases['count']!.output['counts']).toHaveLength(2);
    expect(r.phases['score_short']!.output['pid']).toBe(r.phases['score_long']!.output['pid']);
    expect(r.phases['report']!.output['total_words']).toBe(21);
  });

  test('--agent-command and --agent-serve bind agents to subprocesses from the command line', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "S"}\nworkflow:\n  a: {assign: py, inputs: {name: $trigger.name}, outputs: {greeting: string}}\n  b: {assign: js, depends_on: [a], inputs: {g: a.greeting}}\n`);
    const agentsDir = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'agents');
    const io = capture(dir);
    const code = await run(['run', 'wf.yaml', '--json', '--trigger', '{"name": "ada"}', '--agent-command', `py=python3 ${join(agentsDir, 'agent.py')}`, '--agent-serve', `js=node ${join(agentsDir, 'serve.mjs')}`], io);
    expect(code, io.err()).toBe(0);
    const r = JSON.parse(io.out()) as { phases: Record<string, { output: Record<string, unknown> }> };
    expect(r.phases['a']!.output).toEqual({ greeting: 'hello ada' });
    expect(r.phases['b']!.output['echo']).toEqual({ g: 'hello ada' });
    expect(await run(['run', 'wf.yaml', '--agent-command', 'py'], capture(dir))).toBe(2);
    // one agent bound twice is refused before anything runs, not the last binding silently taken
    for (const second of [['--agent-command', 'py=python3 other.py'], ['--agent-serve', 'py=node other.mjs']]) {
      const twice = capture(dir);
      expect(await run(['run', 'wf.yaml', '--json', '--store', 'memory', '--agent-command', `py=python3 ${join(agentsDir, 'agent.py')}`, ...second, '--agent-serve', `js=node ${join(agentsDir, 'serve.mjs')}`], twice)).toBe(2);
      expect((JSON.parse(twice.out()) as { error: { code: string } }).error.code).toBe('usage');
    }
  });

  test.each(['compliance_review.yaml', 'mcp_workflow.yaml', 'research_pipeline.yaml'])('corpus %s runs with --stub-agents', async (f) => {
    const io = capture();
    expect(await run(['run', join(corpus, f), '--stub-agents', '--auto-approve'], io)).toBe(0);
    expect(io.out()).toMatch(/task\.claimed/); // on a pipe: one line per event
  });

  test('unbound agents: exit 2 before anything runs, naming them', async () => {
    const io = capture();
    expect(await run(['run', join(corpus, 'hello_world.yaml')], io)).toBe(2);
    expect(io.err()).toMatch(/no handler is bound for agent/);
  });

  test('an invalid workflow exits 2 with its diagnostics', async () => {
    const io = capture(fixtures);
    expect(await run(['run', 'diagnostics/dependency-cycle.yaml', '--stub-agents'], io)).toBe(2);
    expect(io.err()).toMatch(/dependency-cycle/);
  });

  test('usage errors exit 2', async () => {
    const wf = join(corpus, 'hello_world.yaml');
    for (const args of [['run'], ['run', wf, '--trigger', '{nope'], ['run', wf, '--trigger', '[1]'], ['run', wf, '--concurrency', '0'], ['run', wf, '--timeout', 'x'], ['run', 'no-such-thing'], ['run', wf, '--agents', 'missing.mjs']]) {
      const io = capture();
      expect(await run(args, io), args.join(' ')).toBe(2);
      expect(io.err()).toMatch(/baton/);
    }
  });

  test('a trigger file that is not JSON is named with the line and column where it breaks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-trigger-'));
    writeFileSync(join(dir, 't.json'), '{\n  "topic": "x",\n}\n');
    const io = capture(dir);
    expect(await run(['run', join(corpus, 'hello_world.yaml'), '--stub-agents', '--trigger', '@t.json'], io)).toBe(2);
    expect(io.err()).toMatch(/t\.json:3:1: the trigger is not valid JSON: expected double-quoted property name/);
    expect(io.err()).not.toMatch(/position/);
  });

  test('--trigger @ with no name, or naming a directory, and a negative count say so in words', async () => {
    const wf = join(corpus, 'hello_world.yaml');
    const cases: [string[], RegExp][] = [
      [['run', wf, '--trigger', '@'], /--trigger @ needs a file name after the @/],
      [['run', wf, '--initial-state', '@'], /--initial-state @ needs a file name after the @/],
      [['run', wf, '--trigger', '@.'], /cannot read trigger file \.: it is a directory/],
      [['run', wf, '--concurrency', '-1'], /--concurrency expects a positive integer, got `-1`/],
      [['run', wf, '--timeout', '-1'], /--timeout expects a positive number, got `-1`/],
      [['run', wf, '--timeout', '1e306'], /--timeout expects a positive number of seconds, got `1e306`/],
      // an option whose default is 0 takes 0: not "positive"
      [['show', 'r', '--items', 'p', '--offset', '-1'], /--offset expects a whole number \(0 or more\), got `-1`/],
    ];
    for (const [args, message] of cases) {
      const io = capture();
      expect(await run(args, io), args.join(' ')).toBe(2);
      expect(io.err(), args.join(' ')).toMatch(message);
      expect(io.err()).not.toMatch(/EISDIR|\n\s+at /);
    }
  });

  test('a failed run exits 1; --output writes the result; --trigger @file; agents from a module', async () => {
    const dir = tmp();
    writeFileSync(
      join(dir, 'wf.yaml'),
      `openintent: "1.0"\ninfo: {name: "F"}\nworkflow:\n  a: {assign: x, inputs: {n: $trigger.n}, outputs: {double: number}}\n  b: {assign: y, depends_on: [a], inputs: {d: a.double}, outputs: {ok: boolean}}\n`,
    );
    writeFileSync(join(dir, 'agents.mjs'), `export default { x: (ctx) => ({ double: ctx.input.n * 2 }), y: (ctx) => ({ ok: ctx.input.d > 5 ? true : 'no' }) };\n`);
    writeFileSync(join(dir, 't.json'), '{"n": 4}');
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--trigger', '@t.json', '--output', 'out.json'], io)).toBe(0);
    const saved = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as { phases: Record<string, { output: unknown }> };
    expect(saved.phases['b']!.output).toEqual({ ok: true });

    const io2 = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--trigger', '{"n": 1}'], io2)).toBe(1);
    expect(io2.out()).toMatch(/OutputTypeMismatchError/);
  });
});

describe('baton list and baton new', () => {
  test('list shows the bundled examples', async () => {
    const io = capture();
    expect(await run(['list'], io)).toBe(0);
    expect(io.out()).toMatch(/quarterly-compliance/);
    expect(io.out()).toMatch(/research-pipeline/);
  });

  test('new writes a starter that validates and runs', async () => {
    const dir = tmp();
    const io = capture(dir);
    expect(await run(['new', 'My First Flow'], io)).toBe(0);
    const v = capture(dir);
    expect(await run(['validate', 'my-first-flow/workflow.yaml'], v)).toBe(0);
    const r = capture(dir);
    expect(await run(['run', 'my-first-flow', '--quiet'], r)).toBe(0);
  });

  test('new into a folder that cannot be made says why, and returns (a path under /proc used to hang)', async () => {
    const dir = tmp();
    symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling'));
    const targets = [join(dir, 'dangling', 'sub'), join(dir, 'dangling')];
    if (process.platform === 'linux') targets.push('/proc/baton-nope/flow');
    for (const target of targets) {
      const io = capture(dir);
      expect(await run(['new', 'Flow', '--dir', target], io)).toBe(2);
      expect(io.err()).toMatch(/baton new: cannot write .*: (a part of the path is a file|the folder cannot be created there)/);
    }
  }, 10_000);
});

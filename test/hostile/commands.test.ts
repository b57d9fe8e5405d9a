/**
 * Careless commands: each ends with a clear message and the right exit status, before anything runs
 * when the mistake is in the command, and a finished result is never lost.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { jsonChunks } from '../../src/cli/json-stream.js';
import { run } from '../../src/cli/main.js';
import { shellQuote, slugify } from '../../src/cli/new.js';
import { baton, batonRun, until } from '../helpers/spawn.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const STACK = /\n\s+at .+:\d+:\d+/;

function capture(cwd: string): CliIo & { out: () => string; err: () => string; writes: () => number } {
  let out = '';
  let err = '';
  let writes = 0;
  return {
    stdout: (s) => void ((out += s), writes++),
    stderr: (s) => void (err += s),
    isTTY: false,
    cwd,
    env: {},
    out: () => out,
    err: () => err,
    writes: () => writes,
  };
}

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'baton-cmd-'));
}

/** A workflow whose one agent writes a marker file when it runs. */
function project(): string {
  const dir = tmp();
  writeFileSync(join(dir, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "P"}\nagents:\n  a: {}\nworkflow:\n  p: {assign: a, outputs: {n: number}}\n`);
  writeFileSync(join(dir, 'agents.mjs'), `import { writeFileSync } from 'node:fs';\nexport default { a: () => { writeFileSync(${JSON.stringify(join(dir, 'ran'))}, 'yes'); return { n: 1 }; } };\n`);
  return dir;
}

describe('--output', () => {
  it.each([['/proc/nope/out.json', /does not exist/], ['.', /is a directory/], ['sub', /is a directory/]])('%s is refused before anything runs (exit 2)', async (out, why) => {
    const dir = project();
    mkdirSync(join(dir, 'sub'));
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--output', out], io)).toBe(2);
    expect(io.err()).toMatch(why);
    expect(io.err()).not.toMatch(STACK);
    expect(existsSync(join(dir, 'ran'))).toBe(false);
  });

  it('a result that cannot be written where asked is saved elsewhere, and Baton says where (exit 2)', async () => {
    const dir = project();
    mkdirSync(join(dir, 'out'));
    // the directory disappears while the run is going
    writeFileSync(join(dir, 'agents.mjs'), `import { rmSync } from 'node:fs';\nexport default { a: () => { rmSync(${JSON.stringify(join(dir, 'out'))}, { recursive: true }); return { n: 1 }; } };\n`);
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--output', 'out/result.json', '--quiet'], io)).toBe(2);
    const saved = /saved to (\S+\.json)/.exec(io.err())?.[1];
    expect(saved).toBeDefined();
    expect((JSON.parse(readFileSync(saved!, 'utf8')) as { status: string }).status).toBe('completed');
    expect(io.err()).not.toMatch(STACK);
    rmSync(saved!);
  });
});

describe('--store', () => {
  it.each([[''], ['  ']])('%j is refused before anything runs (exit 2), not taken for the default store', async (spec) => {
    const dir = project();
    const io = capture(dir);
    io.env = { BATON_STORE: 'memory' };
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', spec], io)).toBe(2);
    expect(io.err()).toMatch(/store is empty/);
    expect(io.err()).not.toMatch(STACK);
    expect(existsSync(join(dir, 'ran'))).toBe(false);
    expect(existsSync(join(dir, '.baton'))).toBe(false);
    const list = capture(dir);
    expect(await run(['runs', '--store', spec], list)).toBe(2);
    expect(existsSync(join(dir, '.baton'))).toBe(false);
  });
});

describe('--json streams', () => {
  it('chunks are exactly JSON.stringify(value, null, 2)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect([...jsonChunks(v)].join('')).toBe(JSON.stringify(v, null, 2));
      }),
      { numRuns: 300 },
    );
    const odd = { a: undefined, b: [undefined, () => 1, NaN, Infinity], c: { toJSON: () => 'x' }, d: new Date(0), e: {}, f: [] };
    expect([...jsonChunks(odd)].join('')).toBe(JSON.stringify(odd, null, 2));
  });

  it('a large result is written in many pieces, none holding the whole', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "Big"}\nworkflow:\n  p: {assign: a}\n`);
    writeFileSync(join(dir, 'agents.mjs'), `export default { a: () => ({ rows: Array.from({ length: 40000 }, (_, i) => ({ i, text: 'row ' + i })) }) };\n`);
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--json', '--quiet'], io)).toBe(0);
    expect(io.writes()).toBeGreaterThan(20);
    const r = JSON.parse(io.out()) as { phases: { p: { output: { rows: unknown[] } } } };
    expect(r.phases.p.output.rows).toHaveLength(40_000);
  });
});

describe('--json stdout carries the document alone', () => {
  it("what an agents module or an agent prints to stdout goes to stderr: run and worker", async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "Chatty"}\nworkflow:\n  p: {assign: a, outputs: {n: integer}}\n`);
    writeFileSync(join(dir, 'agents.mjs'), `console.log('module banner');\nexport default { a: () => { console.log('from the agent'); console.info({ x: 1 }); process.stdout.write('a raw write\\n'); return { n: 1 }; } };\n`);
    const r = await batonRun(['run', 'wf.yaml', '--agents', 'agents.mjs', '--json', '--store', 'memory'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { status: string }).status).toBe('completed');
    for (const said of ['module banner', 'from the agent', 'a raw write']) expect(r.stderr).toContain(said);
    // a worker's JSON lines too
    expect((await batonRun(['run', 'wf.yaml', '--agents', 'agents.mjs', '--detach', '--run-id', 'c1'], { cwd: dir })).code).toBe(0);
    const w = baton(['worker', '--agents', 'agents.mjs', '--json'], { cwd: dir });
    let seen = '';
    w.stdout!.on('data', (d: Buffer) => (seen += d.toString()));
    await until(() => /run\.completed/.test(seen), 30_000);
    w.kill('SIGTERM');
    const done = await w.done;
    for (const line of done.stdout.trim().split('\n')) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
    expect(done.stderr).toContain('from the agent');
  }, 60_000);
});

/** Runs the CLI in a real process whose stdout reader goes away after the first bytes (`| head -c 1`). */
async function withClosedPipe(args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  const host = join(tmp(), 'host.mts');
  writeFileSync(host, `import { main } from ${JSON.stringify(join(root, 'src', 'cli', 'main.ts'))};\nprocess.exitCode = await main(process.argv.slice(2));\n`);
  const child = spawn(process.execPath, ['--import', pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href, host, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  child.stdout.once('data', () => child.stdout.destroy());
  const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
  return { code, stderr };
}

describe('a closed pipe ends Baton quietly', () => {
  const big = (): string => {
    const dir = tmp();
    const phases = Array.from({ length: 3000 }, (_, i) => `  p${i}: {assign: a, depends_on: [nope${i}]}`).join('\n');
    writeFileSync(join(dir, 'broken.yaml'), `openintent: "1.0"\ninfo: {name: "B"}\nworkflow:\n${phases}\n`);
    writeFileSync(join(dir, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "R"}\nworkflow:\n  p: {assign: a}\n`);
    writeFileSync(join(dir, 'agents.mjs'), `export default { a: () => ({ text: 'x'.repeat(2_000_000) }) };\n`);
    return dir;
  };

  it('validate --json | head', async () => {
    const r = await withClosedPipe(['validate', 'broken.yaml', '--json'], big());
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('');
  }, 30_000);

  it('run --json | head -c 10', async () => {
    const r = await withClosedPipe(['run', 'wf.yaml', '--agents', 'agents.mjs', '--json'], big());
    expect([0, 1]).toContain(r.code);
    expect(r.stderr).not.toMatch(/EPIPE|Error/);
  }, 30_000);
});

describe('targets and bindings', () => {
  const digest = (): string => {
    const dir = tmp();
    mkdirSync(join(dir, 'weekly-digest'));
    writeFileSync(join(dir, 'weekly-digest', 'workflow.yaml'), `openintent: "1.0"\ninfo: {name: "D"}\nworkflow:\n  p: {assign: a, inputs: {topic: $trigger.topic}, outputs: {echo: string}}\n`);
    writeFileSync(join(dir, 'weekly-digest', 'agents.mjs'), `export default { a: (ctx) => ({ echo: ctx.input.topic }) };\n`);
    writeFileSync(join(dir, 'weekly-digest', 'trigger.json'), '{"topic": "tides"}');
    return dir;
  };

  it('a workflow file uses trigger.json (and agents) beside it, as its directory does', async () => {
    const dir = digest();
    for (const target of ['weekly-digest', 'weekly-digest/workflow.yaml']) {
      const io = capture(dir);
      expect(await run(['run', target, '--json', '--quiet'], io), io.err()).toBe(0);
      expect((JSON.parse(io.out()) as { phases: { p: { output: unknown } } }).phases.p.output).toEqual({ echo: 'tides' });
    }
  });

  it('--agent-command for an agent the workflow does not have is refused, naming the agents it has', async () => {
    const dir = digest();
    const io = capture(dir);
    expect(await run(['run', 'weekly-digest', '--agent-command', 'zz=echo {}'], io)).toBe(2);
    expect(io.err()).toMatch(/no agent `zz`.*`a`/);
    expect(io.err()).not.toMatch(STACK);
  });

  it('validate accepts a directory and a bundled example, as run does', async () => {
    const dir = digest();
    const io = capture(dir);
    expect(await run(['validate', 'weekly-digest', 'research-pipeline'], io)).toBe(0);
    expect(io.out()).toMatch(/weekly-digest\/workflow\.yaml: valid/);
    expect(await run(['validate', 'no-such-thing'], capture(dir))).toBe(2);
  });

  it.each([
    ['agents.mjs', 'export default {\n  a: () => {\n    return { x: 1 ;\n  },\n};\n', /agents\.mjs:3:19: SyntaxError/],
    ['agents.ts', 'export default {\n  a: (): object => {\n    return { x: 1 ;\n  },\n};\n', /agents\.ts:3:19: syntax error/],
    ['throws.mjs', 'const x = 1;\nnope(x);\nexport default {};\n', /throws\.mjs:2:1: ReferenceError/],
  ])('an agents module that does not load (%s) is reported at file:line:col', async (file, code, expected) => {
    const dir = digest();
    writeFileSync(join(dir, file), code);
    const io = capture(dir);
    expect(await run(['run', 'weekly-digest/workflow.yaml', '--agents', file], io)).toBe(2);
    expect(io.err(), io.err()).toMatch(expected);
    expect(io.err()).not.toMatch(STACK);
  });
});

describe('files that never end', () => {
  it.runIf(existsSync('/dev/zero'))('validate /dev/zero stops at the size limit (exit 2)', async () => {
    const io = capture(tmp());
    expect(await run(['validate', '/dev/zero'], io)).toBe(2);
    expect(io.out()).toMatch(/error\[file-unreadable\]/);
  });
});

describe('hostile input to run', () => {
  it.each([['[]'], ['[""]'], ['""']])('x-command: %s stops run with a positioned diagnostic (exit 2), never a TypeError', async (cmd) => {
    const dir = tmp();
    writeFileSync(join(dir, 'wf.yaml'), `openintent: "1.0"\ninfo: {name: "X"}\nagents:\n  a: {x-command: ${cmd}}\nworkflow:\n  p: {assign: a}\n`);
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml'], io)).toBe(2);
    expect(io.err()).toMatch(/wf\.yaml:4:\d+: error\[invalid-value\]/);
    expect(io.err()).not.toMatch(/TypeError/);
    expect(io.err()).not.toMatch(STACK);
  });

  it('a Latin-1 trigger file is refused as not UTF-8 (exit 2)', async () => {
    const dir = project();
    writeFileSync(join(dir, 't.json'), Buffer.concat([Buffer.from('{"topic": "caf'), Buffer.from([0xe9]), Buffer.from('"}')]));
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--trigger', '@t.json'], io)).toBe(2);
    expect(io.err()).toMatch(/not UTF-8/);
    expect(existsSync(join(dir, 'ran'))).toBe(false);
  });

  it('a trigger file with a byte order mark runs; one with a trailing comma is refused at its line and column (exit 2)', async () => {
    const dir = project();
    writeFileSync(join(dir, 'bom.json'), '\ufeff{"topic": "x"}\n');
    writeFileSync(join(dir, 'trailing.json'), '{"topic": "x",\n "items": [\n  1,\n  2,\n ]}\n');
    const bad = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--trigger', '@trailing.json'], bad)).toBe(2);
    expect(bad.err()).toMatch(/^baton run: trailing\.json:5:2: the trigger is not valid JSON: unexpected token '\]'\n/);
    expect(existsSync(join(dir, 'ran'))).toBe(false);
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--store', 'memory', '--quiet', '--json', '--trigger', '@bom.json'], io)).toBe(0);
    const events = (JSON.parse(io.out()) as { events: { type: string; trigger?: unknown }[] }).events;
    expect(events.find((e) => e.type === 'run.started')?.trigger).toEqual({ topic: 'x' });
  });

  it('a trigger nested 100,000 levels deep is refused (exit 2)', async () => {
    const dir = project();
    writeFileSync(join(dir, 'deep.json'), `{"a": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    const io = capture(dir);
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--trigger', '@deep.json'], io)).toBe(2);
    expect(io.err()).toMatch(/nested deeper than/);
    expect(existsSync(join(dir, 'ran'))).toBe(false);
  });
});

describe('baton new', () => {
  it('makes a sensible folder name from any name', () => {
    expect(slugify('Ünïcødé 🚀')).toBe('unicode');
    expect(slugify('東京 データ')).toBe('東京-データ');
    expect(slugify('Straße Œuvre')).toBe('strasse-oeuvre');
    expect(slugify('🚀')).toBe('workflow');
  });

  it('a name with line breaks or control characters still makes a valid workflow', async () => {
    const dir = tmp();
    expect(await run(['new', 'Two\nworkflow: {x: 1}\x1b[2J', '--dir', 'n'], capture(dir))).toBe(0);
    const io = capture(dir);
    expect(await run(['validate', 'n'], io), io.out()).toBe(0);
  });

  it('prints next steps that paste into a shell, quoted when needed', async () => {
    const dir = tmp();
    const io = capture(dir);
    expect(await run(['new', 'Ünïcødé 🚀'], io)).toBe(0);
    expect(existsSync(join(dir, 'unicode', 'workflow.yaml'))).toBe(true);
    const io2 = capture(dir);
    expect(await run(['new', 'Spaced', '--dir', "with spaces/it's"], io2)).toBe(0);
    expect(io2.out()).toContain(`npx baton run ${shellQuote("with spaces/it's")}`);
    expect(io2.out()).toContain(`npx baton validate 'with spaces/it'\\''s/workflow.yaml'`);
    expect(await run(['run', "with spaces/it's", '--quiet'], capture(dir))).toBe(0);
  });
});

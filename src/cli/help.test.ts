import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ENVIRONMENT } from './help.js';
import type { CliIo } from './io.js';
import { run } from './main.js';
import { COMMANDS, GLOBAL_OPTIONS, type OptionSpec } from './spec.js';

function capture(env: Record<string, string> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd: process.cwd(), env: { BATON_STORE: 'memory', ...env }, out: () => out, err: () => err };
}

async function cli(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const io = capture(env);
  const code = await run(argv, io);
  return { code, out: io.out(), err: io.err() };
}

describe('help', () => {
  test('baton help lists every command, the options of every command, and the environment', async () => {
    const r = await cli(['help']);
    expect(r.code).toBe(0);
    for (const c of COMMANDS) expect(r.out).toMatch(new RegExp(`^  ${c.name}\\b`, 'm'));
    expect(r.out).toMatch(/^Environment:$/m);
    for (const e of ENVIRONMENT) expect(r.out).toContain(e.name);
  });

  test.each(COMMANDS.map((c) => [c.name]))('baton %s --help lists each of its options on one line, as baton help %s does', async (name) => {
    const spec = COMMANDS.find((c) => c.name === name)!;
    const viaFlag = await cli([name, '--help']);
    const viaHelp = await cli(['help', name]);
    expect(viaFlag.code).toBe(0);
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.out).toBe(viaFlag.out);
    expect(viaFlag.out).toMatch(new RegExp(`^Usage: baton ${name}\\b`));
    for (const [opt, o] of Object.entries<OptionSpec>({ ...spec.options, ...GLOBAL_OPTIONS })) {
      const lines = viaFlag.out.split('\n').filter((l) => new RegExp(`^  (-\\w, )? *--${opt}(?![\\w-])`).test(l));
      expect(lines, `--${opt}`).toHaveLength(1);
      if (o.shown) expect(lines[0]).toContain(`default: ${o.shown}`);
    }
  });

  test('-h works like --help; help for an unknown command is a usage error with a suggestion', async () => {
    expect((await cli(['runs', '-h'])).out).toBe((await cli(['help', 'runs'])).out);
    const r = await cli(['help', 'rnu']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/did you mean `run`\?/);
    expect(r.err.trim().split('\n')).toHaveLength(1);
  });

  test('baton help environment prints only the environment section', async () => {
    const r = await cli(['help', 'environment']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Environment:/);
    expect(r.out).not.toMatch(/Commands:/);
  });
});

describe('unknown flags and bad values are refused everywhere', () => {
  test.each(COMMANDS.map((c) => [c.name]))('baton %s --bogus: exit 2, one line, nothing run', async (name) => {
    const r = await cli([name, '--bogus', 'x']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(new RegExp(`^baton ${name}: unknown option \`--bogus\``));
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.out).toBe('');
  });

  test.each([
    [['run', 'x', '--jsn'], /unknown option `--jsn`; did you mean `--json`\?/],
    [['validate', 'x', '--fromat', 'json'], /did you mean `--format`\?/],
    [['runs', '--stauts', 'failed'], /did you mean `--status`\?/],
    [['list', '--jsonn'], /did you mean `--json`\?/],
    [['validate', 'x', '--format', 'sarf'], /--format expects text, json, sarif or github, got `sarf`; did you mean `sarif`\?/],
    [['runs', '--status', 'failed,runing'], /got `runing`; did you mean `running`\?/],
    [['run', 'x', '--color', 'sometimes'], /--color expects auto, always or never/],
    [['run', 'x', '--store'], /--store needs a value \(SPEC\)/],
    [['approve', 'r', 'g', '--comment', '-x'], /--comment=-x/],
    [['run', 'x', '--quiet=yes'], /--quiet takes no value/],
    [['list', 'extra'], /list takes no arguments/],
    [['runs', 'extra'], /runs takes no arguments/],
    [['runs', '--workflow', ''], /--workflow expects a workflow name/],
    [['worker', 'extra'], /worker takes no arguments/],
    [['rnu'], /unknown command `rnu`; did you mean `run`\?/],
  ])('%j', async (argv, message) => {
    const r = await cli(argv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(message);
    expect(r.err.trim().split('\n')).toHaveLength(1);
  });

  test('with --json the refusal is also a JSON error object on stdout', async () => {
    const r = await cli(['run', 'x', '--json', '--jsn']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out)).toMatchObject({ error: { code: 'usage', command: 'run' } });
  });

  test('--color before the command is accepted', async () => {
    expect((await cli(['--color', 'never', 'list'])).code).toBe(0);
    expect((await cli(['--color=always', 'list'])).out).toMatch(/\x1b\[/);
    expect((await cli(['--color=maybe', 'list'])).code).toBe(2);
  });
});

describe('the Environment section names every variable the code reads', () => {
  test('each env[...] read in src/ is documented', () => {
    const root = join(import.meta.dirname, '..');
    const names = new Set<string>();
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) {
          const text = readFileSync(p, 'utf8');
          for (const m of text.matchAll(/env\[['"]([A-Z][A-Z0-9_]+)['"]\]|env\??\.([A-Z][A-Z0-9_]+)\b/g)) names.add(m[1] ?? m[2]!);
        }
      }
    };
    walk(root);
    // set by Baton for its own watchdog child, never read from the user's environment
    for (const internal of ['BATON_PID', 'BATON_GRACE', 'BATON_HINT']) names.delete(internal);
    expect(names.size).toBeGreaterThan(10);
    const documented = ENVIRONMENT.map((e) => e.name);
    expect([...names].filter((n) => !documented.includes(n)).sort()).toEqual([]);
  });

  test('README.md has the same Environment section', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
    const section = /^## Environment\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? '';
    for (const e of ENVIRONMENT) expect(section, e.name).toContain(`\`${e.name}\``);
  });
});

describe('docs/cli.md', () => {
  const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'cli.md'), 'utf8');

  test.each(COMMANDS.map((c) => [c.name]))('holds the help of %s as baton prints it', async (name) => {
    expect(doc).toContain(`### \`baton ${name}\`\n\n\`\`\`text\n${(await cli(['help', name])).out}\`\`\``);
  });

  test('holds the environment section as baton prints it', async () => {
    expect(doc).toContain((await cli(['help', 'environment'])).out);
  });
});

describe('baton types --help', () => {
  test('gives as the default of --baton-module the module the generated file imports', async () => {
    const help = (await cli(['types', '--help'])).out;
    const shown = /--baton-module NAME .*\(default: ([^)]+)\)/.exec(help)?.[1];
    const generated = await cli(['types', join(import.meta.dirname, '..', '..', 'examples', 'research-pipeline', 'workflow.yaml')]);
    expect(generated.code).toBe(0);
    expect(shown).toBeDefined();
    expect(generated.out).toContain(`import type { AgentContext } from ${JSON.stringify(shown)};`);
  });
});
